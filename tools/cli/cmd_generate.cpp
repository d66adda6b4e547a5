
#include <cstdio>

#include "cli/commands.h"
#include "tern/generate.h"
#include "tern/kernels.h"

namespace tern::cli {
namespace {

struct Options {
  RunOptions run;
  std::string prompt;
  GenerateOptions gen;
  bool no_parse_special = false;
  SamplingOptions sampling;
};

void run_generate(const Options& o) {
  std::unique_ptr<Model> model = open_model(o.run);
  Context ctx(*model, context_options(o.run));
  Tokenizer tok(model->file());
  print_notes(tok, model->file().path());
  GenerateOptions g = o.gen;
  g.parse_special = !o.no_parse_special;
  const SamplerParams sp = sampler_params(o.sampling);
  Sampler sampler(sp);
  const GenerateStats st = generate(ctx, tok, o.prompt, g, sampler,
                                    [](const std::string& text) {
                                      std::fwrite(text.data(), 1, text.size(), stdout);
                                      std::fflush(stdout);
                                    });
  // The text ends with a newline so the statistics below never run into it.
  std::printf("\n");
  std::fflush(stdout);
  // Reported after the run so that an error is the only line on stderr.
  std::fprintf(stderr, "tern: %s, kernel %s, %d threads, seed %llu\n",
               model->file().path().c_str(), model->kernels().name, ctx.threads(),
               static_cast<unsigned long long>(sp.seed));
  std::fprintf(stderr, "prompt: %d tokens in %.3f s (%.2f tok/s)\n", st.n_prompt,
               st.prompt_seconds, st.n_prompt / std::max(st.prompt_seconds, 1e-9));
  std::fprintf(stderr, "generation: %d tokens in %.3f s (%.2f tok/s)%s\n", st.n_generated,
               st.gen_seconds, st.n_generated / std::max(st.gen_seconds, 1e-9),
               st.hit_eos ? ", stopped at end of generation" : "");
}

}  // namespace

void add_generate(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("generate", "generate text from a prompt");
  add_run_options(*cmd, o->run);
  cmd->add_option("-p,--prompt", o->prompt, "prompt text")->required();
  cmd->add_option("-n,--n-predict", o->gen.n_predict, "tokens to generate (default 128)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--ignore-eos", o->gen.ignore_eos, "never stop at end-of-generation tokens");
  cmd->add_flag("--no-parse-special", o->no_parse_special, "special-token text in the prompt stays text");
  add_sampling_options(*cmd, o->sampling);
  cmd->callback([o] { run_generate(*o); });
}

}  // namespace tern::cli
