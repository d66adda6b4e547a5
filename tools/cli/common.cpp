#include <omp.h>

#include <cstdlib>
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
  if (o.threads > 0) omp_set_num_threads(o.threads);
  if (!o.kernel.empty()) force_kernels(o.kernel);
  const std::string path = o.model.empty() ? default_model_path() : o.model;
  std::unique_ptr<Model> m = Model::load(path);
  if (o.ctx > 0) m->reset(o.ctx);
  return m;
}

}  // namespace tern::cli
