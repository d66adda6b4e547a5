// Speculative decoding for generate and chat: a drafter proposes the next
// tokens, from a small draft model or by copying what followed the same
// n-gram earlier in the sequence (prompt lookup), and the target checks
// them all in one batch, which reads its weights once. Each draft token is
// accepted with probability min(1, p/q) (p the target's, q the draft's
// probability of it), a rejected one replaced by a draw from the
// normalized max(0, p - q): the text has the target's own distribution,
// and greedy text is plain greedy decoding's, token for token, because a
// token's logits in the verifying batch are its logits alone.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tern/context.h"
#include "tern/generate.h"
#include "tern/tokenizer.h"

namespace tern {

struct SpeculativeOptions {
  int draft_max = 8;  // tokens per draft (llama.cpp's --draft-max)
  int draft_min = 0;  // a shorter draft is not verified: a plain step instead (--draft-min)
  // Draftless: the tokens that followed the longest recent repeat (4 down
  // to 1 tokens) of the sequence's last tokens, prompt included.
  bool lookup = false;
};

// Throws tern::Error naming both files when the draft model's vocabulary
// (its tokens' texts, BOS, EOS) differs from the target's.
void check_same_vocabulary(const Model& target, const Tokenizer& target_tok, const Model& draft,
                           const Tokenizer& draft_tok);

class Drafter {
 public:
  // `draft`: a context over the draft model whose sequence 0 the drafter
  // keeps (null with lookup); drafts are drawn with `sp`'s sampling, from a
  // stream of their own.
  Drafter(Context* draft, const SpeculativeOptions& o, const SamplerParams& sp);

  const SpeculativeOptions& options() const { return o_; }
  // Up to n tokens to follow `history` (the whole sequence so far), each
  // with the distribution it was drawn from.
  void propose(std::span<const int32_t> history, int n, std::vector<int32_t>& tokens,
               std::vector<Sampler::Dist>& dists);

 private:
  void lookup(std::span<const int32_t> history, int n, std::vector<int32_t>& tokens);

  Context* draft_;
  SpeculativeOptions o_;
  Sampler sampler_;
  std::vector<int32_t> cached_;  // the tokens at the draft context's positions 0 ..
};

}  // namespace tern
