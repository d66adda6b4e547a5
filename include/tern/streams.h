// Sequences generated side by side in one context: each feeds what its
// cache lacks (a prompt, in chunks, then each sampled token) and samples
// from the logits of its last position; every step is one batch of all of
// them. generate_parallel, generate_prompts and tern serve's engine run on
// it.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tern/context.h"
#include "tern/generate.h"
#include "tern/tokenizer.h"

namespace tern {

// The next token from logits: end-of-generation tokens masked out first
// with ignore_eos (scratch holds the masked copy).
int32_t sample_next(Sampler& s, std::span<const float> logits, const Tokenizer& tok, bool ignore_eos,
                    std::vector<float>& scratch);

struct Stream {
  int seq = 0;                  // its sequence in the context
  std::vector<int32_t> feed;    // tokens the cache still lacks, in order
  size_t fed = 0;               // of feed, in the cache
  int n_predict = 0;            // tokens to sample at most
  bool ignore_eos = false;      // end-of-generation tokens masked out (besides GenerateOptions')
  Sampler sampler{SamplerParams{}};
  std::vector<int32_t> out;     // sampled ids (no final end-of-generation token)
  bool done = false;
  Finish finish = Finish::Stop;
  Utf8Stream utf8;
  std::string text;             // the sampled tokens' text, as generate() streams it
  std::function<void(const std::string&)> on_text;  // each complete UTF-8 piece, if set; may set done
  // Each sampled token with the logits it was drawn from, before it is taken.
  std::function<void(int32_t token, std::span<const float> logits)> on_sample;
};

// Takes `next`, sampled from the logits of s's last fed position: the end
// of the stream at an end-of-generation token, at n_predict or at the end
// of the context; otherwise it is fed next.
void take_sample(Context& ctx, const Tokenizer& tok, Stream& s, int32_t next);

// One step over the unfinished streams: each one's next tokens (its
// sampled token, or as much of its prompt as the step's budget of
// ctx.max_batch() tokens leaves, decode tokens first) in one batch; then
// each stream whose feed is in the cache samples, and finishes at an
// end-of-generation token, at n_predict or at the end of the context.
// Returns the tokens it sampled.
int step_streams(Context& ctx, const Tokenizer& tok, const GenerateOptions& o, std::span<Stream* const> streams);

}  // namespace tern
