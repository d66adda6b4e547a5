// Perplexity of a text, by llama-perplexity's protocol and by the packed
// lines protocol of Fairy2i-W2's evaluation (generate.h).
#include <algorithm>
#include <chrono>
#include <cmath>

#include "tern/clock.h"
#include "tern/error.h"
#include "tern/generate.h"

namespace tern {
namespace {

// log softmax(row)[token], in double.
double log_prob(const float* row, size_t V, int32_t token) {
  float mx = row[0];
  for (size_t j = 1; j < V; ++j) mx = std::max(mx, row[j]);
  double sum = 0;
  for (size_t j = 0; j < V; ++j) sum += std::exp(double(row[j] - mx));
  return double(row[token] - mx) - std::log(sum);
}

// Sums of the negative log-likelihoods and their squares over the scored
// tokens, then ppl = exp(nll / denominator) and llama.cpp's standard error.
struct NllSum {
  double nll = 0, nll2 = 0;
  int64_t scored = 0;
  void add(double lp) {
    nll -= lp;
    nll2 += lp * lp;
    ++scored;
  }
  void finish(PerplexityResult& r, int64_t denominator) const {
    r.n_scored = scored;
    r.n_counted = denominator;
    const double mean = nll / double(std::max<int64_t>(denominator, 1));
    r.ppl = std::exp(mean);
    const double m = nll / double(std::max<int64_t>(scored, 1)), var = nll2 / double(std::max<int64_t>(scored, 1)) - m * m;
    r.err = var > 0 && scored > 1 ? std::sqrt(var / double(scored - 1)) * r.ppl : 0;
  }
};

}  // namespace

PerplexityResult perplexity(const Model& model, const ContextOptions& co, const std::vector<int32_t>& tokens,
                            int32_t bos, int n_ctx, int max_chunks,
                            const std::function<void(int, double)>& on_chunk, int n_batch) {
  if (n_ctx < 4) throw Error("context must be at least 4 tokens for perplexity");
  if (tokens.size() < size_t(2) * n_ctx)
    throw Error("the text has " + std::to_string(tokens.size()) + " tokens; perplexity with a context of " +
                std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx));
  int n_chunks = int(tokens.size() / size_t(n_ctx));
  if (max_chunks >= 0) n_chunks = std::min(n_chunks, max_chunks);
  const int n_seq = std::clamp(n_batch / n_ctx, 1, n_chunks);
  ContextOptions o = co;
  o.ctx = n_ctx * n_seq;
  o.max_seqs = n_seq;
  o.max_batch = std::min(n_ctx * n_seq, std::max(n_ctx, 512));
  Context ctx(model, o);
  const size_t V = size_t(model.config().vocab_size);
  const int first = n_ctx / 2;
  PerplexityResult r;
  NllSum sum;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<BatchToken> batch;
  for (int c0 = 0; c0 < n_chunks; c0 += n_seq) {
    const int seqs = std::min(n_seq, n_chunks - c0);
    batch.clear();
    for (int s = 0; s < seqs; ++s) {
      ctx.seq_remove(s);
      const size_t start = size_t(c0 + s) * n_ctx;
      for (int i = 0; i < n_ctx; ++i) {
        const int32_t t = i == 0 && bos >= 0 ? bos : tokens[start + size_t(i)];
        batch.push_back({t, s, i, i >= first && i < n_ctx - 1});  // the scored predictions only
      }
    }
    const std::span<const float> logits = ctx.decode(batch);
    size_t row = 0;
    for (int s = 0; s < seqs; ++s) {
      const size_t start = size_t(c0 + s) * n_ctx;
      for (int i = first; i < n_ctx - 1; ++i, ++row)
        sum.add(log_prob(logits.data() + row * V, V, tokens[start + size_t(i) + 1]));
      if (on_chunk) on_chunk(c0 + s + 1, std::exp(sum.nll / double(sum.scored)));
    }
  }
  r.n_chunks = n_chunks;
  r.seconds = seconds_since(t0);
  sum.finish(r, sum.scored);
  return r;
}

std::vector<std::vector<int32_t>> pack_line_items(const std::vector<std::vector<int32_t>>& items, int32_t bos,
                                                  int32_t eos, int n_ctx) {
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int32_t> doc;
  if (bos >= 0) doc.push_back(bos);
  const size_t start = doc.size();
  for (const std::vector<int32_t>& item : items) {
    if (item.size() + 1 > size_t(n_ctx)) continue;  // with its EOS
    if (doc.size() + item.size() + 1 > size_t(n_ctx)) {
      // A sequence of BOS alone predicts nothing (the published code keeps
      // it, to the same effect).
      if (doc.size() > 1) seqs.push_back(doc);
      doc.resize(start);
    }
    doc.insert(doc.end(), item.begin(), item.end());
    doc.push_back(eos);
  }
  // As published: only the last sequence is dropped when BOS and an item of
  // exactly n_ctx tokens make it n_ctx + 1 long; earlier ones are kept.
  if (doc.size() > 1 && doc.size() <= size_t(n_ctx)) seqs.push_back(doc);
  return seqs;
}

PerplexityResult perplexity_packed_lines(const Model& model, const ContextOptions& co, const std::vector<std::vector<int32_t>>& items,
                                         int32_t bos, int32_t eos, int n_ctx, int max_seqs,
                                         const std::function<void(int, double)>& on_seq) {
  if (n_ctx < 4) throw Error("context must be at least 4 tokens for perplexity");
  if (eos < 0) throw Error("the packed-lines protocol needs an EOS token, and the model's tokenizer has none");
  std::vector<std::vector<int32_t>> seqs = pack_line_items(items, bos, eos, n_ctx);
  if (seqs.empty()) throw Error("no line of the text fits a context of " + std::to_string(n_ctx) + " tokens");
  if (max_seqs >= 0 && seqs.size() > size_t(max_seqs)) seqs.resize(size_t(max_seqs));
  size_t longest = 0;  // n_ctx, or n_ctx + 1 (see pack_line_items)
  for (const auto& seq : seqs) longest = std::max(longest, seq.size());
  ContextOptions o = co;
  o.ctx = o.max_batch = int(longest);
  Context ctx(model, o);
  const size_t V = size_t(model.config().vocab_size);
  PerplexityResult r;
  NllSum sum;
  int64_t counted = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t s = 0; s < seqs.size(); ++s) {
    const std::vector<int32_t>& seq = seqs[s];
    const std::span<const float> logits = ctx.forward(seq, 0, true);
    // Every prediction counts in the denominator; one made from an EOS (the
    // first token of the next line) is not scored: the published code masks
    // its label and still divides by the sequence length minus one.
    for (size_t i = 0; i + 1 < seq.size(); ++i)
      if (seq[i] != eos) sum.add(log_prob(logits.data() + i * V, V, seq[i + 1]));
    counted += int64_t(seq.size()) - 1;
    if (on_seq) on_seq(int(s) + 1, std::exp(sum.nll / double(counted)));
  }
  r.n_chunks = int(seqs.size());
  r.seconds = seconds_since(t0);
  sum.finish(r, counted);
  return r;
}

}  // namespace tern
