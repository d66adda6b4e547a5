#include <omp.h>

#include <cstdio>
#include <random>

#include "cli/commands.h"
#include "tern/generate.h"
#include "tern/kernels.h"

namespace tern::cli {
namespace {

struct GenerateOptions {
  RunOptions run;
  std::string prompt;
  int n_predict = 128;
  SamplerParams sampler;
  int64_t seed = -1;
};

void run_generate(const GenerateOptions& o) {
  std::unique_ptr<Model> model = open_model(o.run);
  Tokenizer tok(model->file());
  SamplerParams sp = o.sampler;
  // Like llama.cpp, no seed means a fresh one; it is printed so the run can
  // be repeated exactly.
  sp.seed = o.seed >= 0 ? uint64_t(o.seed) : std::random_device{}();
  Sampler sampler(sp);
  const GenerateStats st = generate(*model, tok, o.prompt, o.n_predict, sampler,
                                    [](const std::string& text) {
                                      std::fwrite(text.data(), 1, text.size(), stdout);
                                      std::fflush(stdout);
                                    });
  std::printf("\n");
  std::fflush(stdout);
  // Reported after the run so that an error is the only line on stderr.
  std::fprintf(stderr, "tern: %s, kernel %s, %d threads, seed %llu\n",
               model->file().path().c_str(), model->kernels().name, omp_get_max_threads(),
               static_cast<unsigned long long>(sp.seed));
  std::fprintf(stderr, "prompt: %d tokens in %.3f s (%.2f tok/s)\n", st.n_prompt,
               st.prompt_seconds, st.n_prompt / std::max(st.prompt_seconds, 1e-9));
  std::fprintf(stderr, "generation: %d tokens in %.3f s (%.2f tok/s)%s\n", st.n_generated,
               st.gen_seconds, st.n_generated / std::max(st.gen_seconds, 1e-9),
               st.hit_eos ? ", stopped at EOS" : "");
}

}  // namespace

void add_generate(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "generate text from a prompt");
  add_run_options(*cmd, o->run);
  cmd->add_option("-p,--prompt", o->prompt, "prompt text")->required();
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate (default 128)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--temp", o->sampler.temp, "temperature; 0 is greedy (default 0.8)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-k", o->sampler.top_k, "keep the K most likely tokens; 0 keeps all (default 40)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", o->sampler.top_p, "nucleus sampling threshold (default 0.95)")
      ->check(CLI::Range(0.0f, 1.0f));
  cmd->add_option("-s,--seed", o->seed, "random seed (default: random, printed)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o] { run_generate(*o); });
}

}  // namespace tern::cli
