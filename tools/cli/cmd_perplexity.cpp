#include <cstdio>

#include "cli/commands.h"
#include "tern/error.h"
#include "tern/input_file.h"
#include "tern/generate.h"
#include "tern/kernels.h"

namespace tern::cli {
namespace {

struct PerplexityOptions {
  RunOptions run;
  std::string text_file;
  int chunks = -1;
};

void run_perplexity(PerplexityOptions o) {
  const std::string text = read_input_file(o.text_file, kMaxTextBytes, "a text file");
  std::unique_ptr<Model> model = open_model(o.run);
  const int ctx = model->max_seq();
  Tokenizer tok(model->file());
  print_notes(tok, model->file().path());
  // As llama-perplexity: special-token text in the file stays text.
  EncodeOptions eo;
  eo.parse_special = false;
  const std::vector<int32_t> tokens = tok.encode(text, eo);
  PerplexityResult r;
  try {
    r = perplexity(*model, tokens, tok.adds_bos() ? tok.bos() : -1, ctx, o.chunks, [](int chunk, double ppl) {
      std::printf("[%d]%.4f,", chunk, ppl);
      std::fflush(stdout);
    });
  } catch (const Error& e) {
    throw file_error(o.text_file, e.what());
  }
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.err);
  std::fprintf(stderr, "tern: %s, kernel %s, %zu tokens, context %d\n",
               model->file().path().c_str(), model->kernels().name, tokens.size(), ctx);
  std::fprintf(stderr, "%d chunks, %lld tokens scored, %.2f s (%.1f tok/s)\n", r.n_chunks,
               static_cast<long long>(r.n_scored), r.seconds,
               double(r.n_chunks) * ctx / std::max(r.seconds, 1e-9));
}

}  // namespace

void add_perplexity(CLI::App& app) {
  auto o = std::make_shared<PerplexityOptions>();
  CLI::App* cmd = app.add_subcommand("perplexity", "perplexity of a text, as llama-perplexity");
  add_run_options(*cmd, o->run);
  cmd->add_option("-f,--file", o->text_file, "text file")->required();
  cmd->add_option("--chunks", o->chunks, "evaluate at most K chunks (default: all)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->callback([o] { run_perplexity(*o); });
}

}  // namespace tern::cli
