#include "tern/generate.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "tern/error.h"

namespace tern {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

GenerateStats generate(Model& model, const Tokenizer& tok, std::string_view prompt,
                       const GenerateOptions& o, Sampler& sampler, const TextSink& on_text) {
  EncodeOptions eo;
  eo.parse_special = o.parse_special;
  const std::vector<int32_t> ids = tok.encode(prompt, eo);
  if (ids.empty()) throw Error("the prompt is empty and the tokenizer adds no BOS token to start from");
  return continue_from(model, tok, ids, 0, o, sampler, on_text, nullptr);
}

GenerateStats continue_from(Model& model, const Tokenizer& tok, std::span<const int32_t> ids, int pos,
                            const GenerateOptions& o, Sampler& sampler, const TextSink& on_text,
                            std::vector<int32_t>* out) {
  GenerateStats st;
  st.n_prompt = int(ids.size());
  const int ctx = model.max_seq();
  if (pos + st.n_prompt >= ctx)
    throw Error("prompt is " + std::to_string(pos + st.n_prompt) + " tokens, the context holds " +
                std::to_string(ctx) + " (raise -c up to the model's limit or shorten it)");
  auto t0 = std::chrono::steady_clock::now();
  std::span<const float> logits = model.forward(ids, pos, false);
  st.prompt_seconds = seconds_since(t0);

  std::vector<float> masked;
  Utf8Stream utf8;
  pos += st.n_prompt;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.n_predict; ++i) {
    if (o.ignore_eos) {
      masked.assign(logits.begin(), logits.end());
      for (int32_t id : tok.eog_ids())
        if (size_t(id) < masked.size()) masked[size_t(id)] = -std::numeric_limits<float>::infinity();
      logits = masked;
    }
    const int32_t next = sampler.sample(logits);
    if (tok.is_eog(next)) {
      st.hit_eos = true;
      break;
    }
    ++st.n_generated;
    if (out) out->push_back(next);
    on_text(utf8.push(tok.piece_bytes(next)));
    // No forward for a token that will never be sampled from; stop when the
    // context is full.
    if (i + 1 == o.n_predict || pos >= ctx) break;
    logits = model.forward(std::span<const int32_t>(&next, 1), pos++, false);
  }
  const std::string rest = utf8.flush();
  if (!rest.empty()) on_text(rest);
  st.gen_seconds = seconds_since(t0);
  st.n_past = pos;
  return st;
}

PerplexityResult perplexity(Model& model, const std::vector<int32_t>& tokens, int32_t bos,
                            int n_ctx, int max_chunks,
                            const std::function<void(int, double)>& on_chunk) {
  if (n_ctx < 4) throw Error("context must be at least 4 tokens for perplexity");
  if (tokens.size() < size_t(2) * n_ctx)
    throw Error("the text has " + std::to_string(tokens.size()) + " tokens; perplexity with a context of " +
                std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx));
  int n_chunks = int(tokens.size() / size_t(n_ctx));
  if (max_chunks >= 0) n_chunks = std::min(n_chunks, max_chunks);
  model.reset(n_ctx, n_ctx);
  const size_t V = size_t(model.config().vocab_size);
  const int first = n_ctx / 2;
  PerplexityResult r;
  double nll = 0, nll2 = 0;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  for (int c = 0; c < n_chunks; ++c) {
    const size_t start = size_t(c) * n_ctx;
    std::copy_n(tokens.begin() + start, n_ctx, chunk.begin());
    if (bos >= 0) chunk[0] = bos;
    std::span<const float> logits = model.forward(chunk, 0, true);
    for (int i = first; i < n_ctx - 1; ++i) {
      const float* row = logits.data() + size_t(i) * V;
      float mx = row[0];
      for (size_t j = 1; j < V; ++j) mx = std::max(mx, row[j]);
      double sum = 0;
      for (size_t j = 0; j < V; ++j) sum += std::exp(double(row[j] - mx));
      const double lp = double(row[tokens[start + i + 1]] - mx) - std::log(sum);
      nll -= lp;
      nll2 += lp * lp;
      ++r.n_scored;
    }
    if (on_chunk) on_chunk(c + 1, std::exp(nll / double(r.n_scored)));
  }
  r.n_chunks = n_chunks;
  r.seconds = seconds_since(t0);
  const double mean = nll / double(r.n_scored);
  r.ppl = std::exp(mean);
  const double var = nll2 / double(r.n_scored) - mean * mean;
  r.err = var > 0 && r.n_scored > 1 ? std::sqrt(var / double(r.n_scored - 1)) * r.ppl : 0;
  return r;
}

}  // namespace tern
