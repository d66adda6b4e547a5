// llama-bench-style end-to-end speed: prompt processing (pp) of a batch of
// tokens and text generation (tg) one token at a time, on random tokens.
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "cli/commands.h"
#include "tern/kernels.h"

namespace tern::cli {
namespace {

struct BenchOptions {
  RunOptions run;
  int n_prompt = 64;
  int n_gen = 32;
  int reps = 3;
};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void report(const char* test, int n, const std::vector<double>& secs, const Model& m) {
  double mean = 0, var = 0;
  std::vector<double> rates;
  for (double s : secs) rates.push_back(n / s);
  for (double r : rates) mean += r / double(rates.size());
  for (double r : rates) var += (r - mean) * (r - mean) / double(std::max<size_t>(1, rates.size() - 1));
  std::printf("%-10s %-12s %3d  %-6s %5d  %10.2f ± %.2f tok/s\n",
              gguf::traits(m.config().weight_type).name, m.kernels().name,
              omp_get_max_threads(), test, n, mean, std::sqrt(var));
}

void run_bench(const BenchOptions& o) {
  std::unique_ptr<Model> model = open_model(o.run);
  const Config& c = model->config();
  const int ctx = std::min(model->max_seq(), std::max(o.n_prompt, o.n_gen) + 1);
  model->reset(ctx, std::max(1, o.n_prompt));
  std::vector<int32_t> toks(size_t(std::max(o.n_prompt, 1)));
  uint64_t x = 12345;
  for (int32_t& t : toks) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t = int32_t((x >> 33) % uint64_t(c.vocab_size));
  }
  std::printf("%-10s %-12s %3s  %-6s %5s  %s\n", "weights", "kernel", "thr", "test", "n", "speed");
  model->forward(std::span<const int32_t>(toks.data(), 1), 0, false);  // warm-up
  if (o.n_prompt > 0) {
    std::vector<double> secs;
    for (int r = 0; r < o.reps; ++r) {
      const double t0 = now();
      model->forward(std::span<const int32_t>(toks.data(), size_t(o.n_prompt)), 0, false);
      secs.push_back(now() - t0);
    }
    report("pp", o.n_prompt, secs, *model);
  }
  if (o.n_gen > 0) {
    std::vector<double> secs;
    for (int r = 0; r < o.reps; ++r) {
      const double t0 = now();
      for (int i = 0; i < o.n_gen; ++i)
        model->forward(std::span<const int32_t>(&toks[size_t(i) % toks.size()], 1), i, false);
      secs.push_back(now() - t0);
    }
    report("tg", o.n_gen, secs, *model);
  }
}

}  // namespace

void add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "measure prompt and generation speed");
  add_run_options(*cmd, o->run);
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens per pp test (default 64)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-n,--n-gen", o->n_gen, "tokens per tg test (default 32)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-r,--repetitions", o->reps, "repetitions (default 3)")->check(CLI::Range(1, 1000));
  cmd->callback([o] { run_bench(*o); });
}

}  // namespace tern::cli
