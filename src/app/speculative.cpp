// Speculative decoding (tern/speculative.h): the drafters, and the loop that
// verifies their drafts in one batch of the target.
#include "tern/speculative.h"

#include <algorithm>
#include <limits>

#include "speculative_loop.h"
#include "tern/error.h"

namespace tern {

void check_same_vocabulary(const Model& target, const Tokenizer& target_tok, const Model& draft,
                           const Tokenizer& draft_tok) {
  const std::string where = draft.file().path() + ": the draft model's vocabulary differs from " +
                            target.file().path() + "'s: ";
  const auto differ = [&](const std::string& what) { throw Error(where + what); };
  if (draft.config().vocab_size != target.config().vocab_size || draft_tok.vocab_size() != target_tok.vocab_size())
    differ(std::to_string(draft_tok.vocab_size()) + " tokens against " + std::to_string(target_tok.vocab_size()));
  if (draft_tok.kind() != target_tok.kind()) differ(draft_tok.kind() + " against " + target_tok.kind());
  if (draft_tok.bos() != target_tok.bos() || draft_tok.eos() != target_tok.eos()) differ("BOS or EOS");
  for (int32_t i = 0; i < target_tok.vocab_size(); ++i)
    if (draft_tok.token_text(i) != target_tok.token_text(i))
      differ("token " + std::to_string(i) + " is '" + draft_tok.token_text(i) + "' against '" +
             target_tok.token_text(i) + "'");
}

Drafter::Drafter(Context* draft, const SpeculativeOptions& o, const SamplerParams& sp)
    : draft_(draft), o_(o), sampler_([&] {
        SamplerParams p = sp;
        p.seed = sp.seed ^ 0xD1AF7D1AF7ull;  // a stream apart from the target's
        return p;
      }()) {
  if (o_.draft_max < 1) throw Error("--draft-max " + std::to_string(o_.draft_max) + ": a draft is at least 1 token");
  if (o_.draft_min < 0 || o_.draft_min > o_.draft_max)
    throw Error("--draft-min " + std::to_string(o_.draft_min) + ": not from 0 to --draft-max " +
                std::to_string(o_.draft_max));
  if (!draft_ == !o_.lookup) throw Error("speculative decoding takes a draft model or --lookup, one of them");
}

// The most recent earlier occurrence of the sequence's last m tokens, for m
// from 4 down to 1, and what followed it.
void Drafter::lookup(std::span<const int32_t> history, int n, std::vector<int32_t>& tokens) {
  const int H = int(history.size());
  for (int m = std::min(4, H - 1); m >= 1; --m) {
    const std::span<const int32_t> tail = history.subspan(size_t(H - m));
    for (int at = H - m - 1; at >= 0; --at) {  // the match ends at at + m <= H - 1
      if (!std::equal(tail.begin(), tail.end(), history.begin() + at)) continue;
      for (int j = at + m; j < H && int(tokens.size()) < n; ++j) tokens.push_back(history[size_t(j)]);
      return;
    }
  }
}

void Drafter::propose(std::span<const int32_t> history, int n, std::vector<int32_t>& tokens,
                      std::vector<Sampler::Dist>& dists) {
  tokens.clear();
  dists.clear();
  if (n <= 0 || history.empty()) return;
  if (o_.lookup) {
    lookup(history, n, tokens);
    for (int32_t t : tokens) dists.push_back({{t, 1.0}});
    return;
  }
  // The draft's cache keeps what it shares with the history; the rest of
  // the history is fed (at least its last token, whose logits draw the first draft).
  size_t keep = 0;
  while (keep < cached_.size() && keep + 1 < history.size() && cached_[keep] == history[keep]) ++keep;
  cached_.assign(history.begin(), history.end());
  const int room = draft_->n_ctx() - int(history.size());
  n = std::min(n, room);
  if (n <= 0) {
    cached_.resize(keep);
    draft_->seq_truncate(0, int(keep));
    return;
  }
  std::span<const float> logits =
      draft_->forward(history.subspan(keep), int(keep), false, 0);
  for (int i = 0; i < n; ++i) {
    dists.emplace_back();
    sampler_.distribution(logits, dists.back());
    const int32_t t = sampler_.draw(dists.back());
    tokens.push_back(t);
    if (i + 1 == n) break;
    cached_.push_back(t);
    logits = draft_->forward({&t, 1}, int(cached_.size()) - 1, false, 0);
  }
}

namespace {

double prob_of(const Sampler::Dist& d, int32_t id) {
  for (const auto& [t, p] : d)
    if (t == id) return p;
  return 0;
}

}  // namespace

// Draft i is accepted with probability min(1, p/q); the first rejected is
// replaced by a draw from the normalized max(0, p - q); after all k, one
// more from the last row. Returns the tokens to emit.
std::vector<int32_t> accept_drafts(Sampler& target, std::span<const float> logits, size_t V,
                                   std::span<const int32_t> drafts, std::span<const Sampler::Dist> q) {
  std::vector<int32_t> out;
  Sampler::Dist p, rest;
  for (size_t i = 0; i <= drafts.size(); ++i) {
    target.distribution(logits.subspan(i * V, V), p);
    if (i == drafts.size()) {
      out.push_back(target.draw(p));
      break;
    }
    const double pd = prob_of(p, drafts[i]), qd = prob_of(q[i], drafts[i]);
    // p >= q accepts outright, drawing nothing: greedy never draws.
    if (pd >= qd || (pd > 0 && target.uniform() * qd < pd)) {
      out.push_back(drafts[i]);
      continue;
    }
    rest.clear();
    double sum = 0;
    for (const auto& [t, pt] : p)
      if (const double r = pt - prob_of(q[i], t); r > 0) {
        rest.push_back({t, r});
        sum += r;
      }
    if (sum <= 0) rest = p;  // rounding left nothing: p itself
    else
      for (auto& e : rest) e.second /= sum;
    out.push_back(target.draw(rest));
    break;
  }
  return out;
}

}  // namespace tern

namespace tern {
namespace {

// rows [n][V] with the end-of-generation tokens masked out (ignore_eos).
std::span<const float> masked(std::span<const float> rows, const Tokenizer& tok, bool ignore_eos,
                              std::vector<float>& scratch) {
  if (!ignore_eos) return rows;
  scratch.assign(rows.begin(), rows.end());
  const size_t V = size_t(tok.vocab_size());
  for (size_t r = 0; r * V < scratch.size(); ++r)
    for (int32_t id : tok.eog_ids())
      if (size_t(id) < V) scratch[r * V + size_t(id)] = -std::numeric_limits<float>::infinity();
  return scratch;
}

}  // namespace

void speculate(Context& ctx, const Tokenizer& tok, const GenerateOptions& o, Sampler& sampler,
               const TextSink& on_text, std::vector<int32_t>* out, std::vector<int32_t> history,
               std::span<const float> logits, GenerateStats& st) {
  Drafter& drafter = *o.drafter;
  const size_t V = size_t(ctx.model().config().vocab_size);
  Utf8Stream utf8;
  std::vector<float> scratch;
  bool stop = false;
  // Emits t: false once generation is over (t ends it, or n_predict is reached).
  const auto emit = [&](int32_t t) {
    if (tok.is_eog(t)) {
      st.hit_eos = true;
      return false;
    }
    ++st.n_generated;
    sampler.accept(t);
    history.push_back(t);
    if (out) out->push_back(t);
    on_text(utf8.push(tok.piece_bytes(t)));
    return st.n_generated < o.n_predict;
  };
  Sampler::Dist p;
  sampler.distribution(masked(logits, tok, o.ignore_eos, scratch), p);
  stop = o.n_predict <= 0 || !emit(sampler.draw(p));
  std::vector<int32_t> drafts;
  std::vector<Sampler::Dist> q;
  std::vector<BatchToken> batch;
  // Drafts as long as the last ones were good: after a round that kept a of
  // its drafts, a + 1 (twice as many after a round that kept all), from
  // --draft-min up to --draft-max. A verified token costs a fraction of a
  // step, so where drafts keep failing (lookup on text that does not
  // repeat) the rounds shrink to one draft, a little over a plain step.
  const int k_min = std::max(1, drafter.options().draft_min), k_max = drafter.options().draft_max;
  int k_next = k_max;
  while (!stop) {
    const int H = int(history.size());  // the cache holds H - 1: the last token is to be fed
    if (H - 1 >= ctx.n_ctx()) break;
    const int k = std::min({k_next, o.n_predict - st.n_generated - 1, ctx.n_ctx() - H});
    drafter.propose(history, k, drafts, q);
    if (int(drafts.size()) < std::max(1, drafter.options().draft_min)) {  // a plain step
      logits = ctx.forward({&history.back(), 1}, H - 1, false);
      sampler.distribution(masked(logits, tok, o.ignore_eos, scratch), p);
      stop = !emit(sampler.draw(p));
      continue;
    }
    batch.assign(1, {history.back(), 0, H - 1, true});
    for (size_t i = 0; i < drafts.size(); ++i) batch.push_back({drafts[i], 0, H + int(i), true});
    ctx.seq_truncate(0, H - 1);
    logits = ctx.decode(batch);
    const std::vector<int32_t> taken = accept_drafts(sampler, masked(logits, tok, o.ignore_eos, scratch), V, drafts, q);
    st.n_drafted += int(drafts.size());
    st.n_accepted += int(taken.size()) - 1;
    const int kept = int(taken.size()) - 1;
    k_next = std::clamp(kept == int(drafts.size()) ? 2 * kept : kept + 1, k_min, k_max);
    // Positions of the accepted drafts stay; those of the rejected go.
    ctx.seq_truncate(0, H + int(taken.size()) - 1);
    for (int32_t t : taken)
      if (!emit(t)) {
        stop = true;
        break;
      }
  }
  const std::string rest = utf8.flush();
  if (!rest.empty()) on_text(rest);
  // The cache keeps only what the emitted tokens' text has (an accepted end
  // of generation, or drafts past n_predict, may be in it).
  ctx.seq_truncate(0, std::min(ctx.seq_length(0), int(history.size())));
}

}  // namespace tern
