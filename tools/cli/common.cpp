#include <cstdio>
#include <cstdlib>
#include <random>
#include <filesystem>

#include "cli/commands.h"
#include "tern/error.h"
#include "tern/kernels.h"

namespace tern::cli {

std::string default_model_path() {
  if (const char* env = std::getenv("TERN_MODEL"); env && *env) return env;
  return TERN_DEFAULT_MODEL;
}

void add_run_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("-m,--model", o.model, "GGUF model file (default: the bundled model)");
  cmd.add_option("-t,--threads", o.threads, "threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd.add_option("--kernel", o.kernel, "force a kernel set (see 'tern kernels')");
  cmd.add_option("-c,--ctx", o.ctx, "context size in tokens (default: the model's)")
      ->check(CLI::Range(1, 1 << 24));
}

std::unique_ptr<Model> open_model(const RunOptions& o) {
  if (!o.kernel.empty()) force_kernels(o.kernel);
  const std::string path = o.model.empty() ? default_model_path() : o.model;
  LoadOptions lo;
  lo.threads = o.threads;
  std::unique_ptr<Model> m = Model::load(path, lo);
  if (o.ctx > 0) m->reset(o.ctx);
  return m;
}

void add_sampling_options(CLI::App& cmd, SamplingOptions& o) {
  cmd.add_option("--temp", o.params.temp, "temperature; 0 is greedy (default 0.8)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--top-k", o.params.top_k, "keep the K most likely tokens; 0 keeps all (default 40)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--top-p", o.params.top_p, "nucleus sampling threshold (default 0.95)")
      ->check(CLI::Range(0.0f, 1.0f));
  cmd.add_option("-s,--seed", o.seed, "random seed (default: random, printed)")
      ->check(CLI::NonNegativeNumber);
}

SamplerParams sampler_params(const SamplingOptions& o) {
  SamplerParams p = o.params;
  // Like llama.cpp, no seed means a fresh one; it is printed so the run can
  // be repeated exactly.
  p.seed = o.seed >= 0 ? uint64_t(o.seed) : std::random_device{}();
  return p;
}

void print_notes(const Tokenizer& tok, const std::string& path) {
  for (const std::string& n : tok.notes()) std::fprintf(stderr, "tern: %s: %s\n", path.c_str(), n.c_str());
}

}  // namespace tern::cli
