// The speculative part of continue_from (internal to src/app).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "tern/generate.h"
#include "tern/speculative.h"

namespace tern {

// Tokens to emit for drafts verified in one batch: `logits` [k + 1][V] of
// the target at the last accepted token and each draft, `q` each draft's
// distribution (tern/speculative.h's rule).
std::vector<int32_t> accept_drafts(Sampler& target, std::span<const float> logits, size_t V,
                                   std::span<const int32_t> drafts, std::span<const Sampler::Dist> q);

// continue_from after its prompt: `history` the sequence's tokens in the
// cache, `logits` its last token's. Fills st's generated, drafted and
// accepted counts and hit_eos; leaves the cache holding only positions of
// emitted tokens.
void speculate(Context& ctx, const Tokenizer& tok, const GenerateOptions& o, Sampler& sampler,
               const TextSink& on_text, std::vector<int32_t>* out, std::vector<int32_t> history,
               std::span<const float> logits, GenerateStats& st);

}  // namespace tern
