#include <algorithm>
#include <cstdio>
#include <string_view>
#include <vector>

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
  int batch = 2048;  // -b: chunks per batch are batch / ctx, as llama-perplexity's n_seq
  bool packed_lines = false;
};

// llama-perplexity's running output: "[chunk]ppl," as each chunk ends.
void print_running(int chunk, double ppl) {
  std::printf("[%d]%.4f,", chunk, ppl);
  std::fflush(stdout);
}

// Fairy2i-W2's protocol (generate.h): the text's non-empty lines, each
// tokenized without BOS, scored in packed sequences of ctx tokens.
PerplexityResult packed_lines(const Model& model, const ContextOptions& co, const Tokenizer& tok, const std::string& text, int ctx, int max_seqs) {
  EncodeOptions eo;
  eo.add_special = false;
  eo.parse_special = false;
  std::vector<std::vector<int32_t>> items;
  for (size_t at = 0; at <= text.size();) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    if (nl > at) items.push_back(tok.encode(std::string_view(text).substr(at, nl - at), eo));
    at = nl + 1;
  }
  return perplexity_packed_lines(model, co, items, tok.bos(), tok.eos(), ctx, max_seqs, print_running);
}

void run_perplexity(PerplexityOptions o) {
  const std::string text = read_input_file(o.text_file, kMaxTextBytes, "a text file");
  std::unique_ptr<Model> model = open_model(o.run);
  const ContextOptions co = context_options(o.run, *model);
  const int ctx = context_positions(model->config(), co.ctx);
  Tokenizer tok(model->file());
  print_notes(tok, model->file().path());
  // As llama-perplexity: special-token text in the file stays text.
  EncodeOptions eo;
  eo.parse_special = false;
  PerplexityResult r;
  size_t n_tokens = 0;
  try {
    if (o.packed_lines) {
      r = packed_lines(*model, co, tok, text, ctx, o.chunks);
      n_tokens = size_t(r.n_counted + r.n_chunks);
    } else {
      const std::vector<int32_t> tokens = tok.encode(text, eo);
      n_tokens = tokens.size();
      r = perplexity(*model, co, tokens, tok.adds_bos() ? tok.bos() : -1, ctx, o.chunks, print_running, o.batch);
    }
  } catch (const Error& e) {
    throw file_error(o.text_file, e.what());
  }
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.err);
  std::fprintf(stderr, "tern: %s, kernel %s, %zu tokens, context %d\n",
               model->file().path().c_str(), model->kernels().name, n_tokens, ctx);
  if (o.packed_lines)
    std::fprintf(stderr, "%d sequences, %lld tokens scored of %lld predicted, %.2f s\n", r.n_chunks,
                 static_cast<long long>(r.n_scored), static_cast<long long>(r.n_counted), r.seconds);
  else
    std::fprintf(stderr, "%d chunks, %lld tokens scored, %.2f s (%.1f tok/s)\n", r.n_chunks,
                 static_cast<long long>(r.n_scored), r.seconds, double(r.n_chunks) * ctx / std::max(r.seconds, 1e-9));
}

}  // namespace

void add_perplexity(CLI::App& app) {
  auto o = std::make_shared<PerplexityOptions>();
  CLI::App* cmd = app.add_subcommand("perplexity", "perplexity of a text, as llama-perplexity");
  add_run_options(*cmd, o->run);
  cmd->add_option("-f,--file", o->text_file, "text file")->required();
  cmd->add_option("-b,--batch-size", o->batch,
                  "tokens per batch: chunks shorter than it run batch / ctx at once, as llama-perplexity's "
                  "(default 2048; the figures do not change)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--chunks", o->chunks, "evaluate at most K chunks (default: all)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_flag("--packed-lines", o->packed_lines,
                "Fairy2i-W2's protocol instead of llama-perplexity's: each non-empty line plus EOS, packed "
                "into sequences of -c tokens that start with BOS (its papers use -c 2048); --chunks "
                "counts sequences");
  cmd->callback([o] { run_perplexity(*o); });
}

}  // namespace tern::cli
