// Sampling, text generation and llama.cpp-compatible perplexity on top of a
// Context; the CLI only parses flags and prints.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tern/context.h"
#include "tern/tokenizer.h"

namespace tern {

struct SamplerParams {
  float temp = 0.8f;   // 0: greedy
  int top_k = 40;      // <= 0: all tokens
  float top_p = 0.95f; // 1: off
  uint64_t seed = 0;
  float min_p = 0.0f;  // drop tokens below min_p times the most likely one's probability; 0: off
  // OpenAI's penalties, over the tokens this sampler has accepted (the
  // completion so far): logit -= presence * (count > 0) + frequency * count.
  float presence_penalty = 0.0f, frequency_penalty = 0.0f;
  std::vector<std::pair<int32_t, float>> logit_bias = {};  // added to those tokens' logits
};

// Logit bias and penalties first; then greedy at temp 0, or top-k, then
// temperature softmax, then top-p, then min-p, then one draw from a seeded
// splitmix64 stream: the same seed and logits give the same token on every
// machine and kernel.
class Sampler {
 public:
  explicit Sampler(const SamplerParams& p);
  int32_t sample(std::span<const float> logits);
  // A token of the text, for the penalties (the generation loops call it
  // for every token they emit).
  void accept(int32_t token);

  // The distribution sample() draws from: its candidates and their
  // probabilities, which sum to 1 (greedy: the most likely token alone).
  // Speculative decoding compares the target's and the draft's.
  using Dist = std::vector<std::pair<int32_t, double>>;
  void distribution(std::span<const float> logits, Dist& out);
  // One draw from a distribution (of the same form), and a uniform [0, 1)
  // of the sampler's stream.
  int32_t draw(const Dist& d);
  double uniform();

 private:
  int candidates(std::span<const float> logits, std::vector<double>& prob);
  // logits with the bias and penalties applied (in adjusted_), or as given
  // when there are none.
  std::span<const float> adjust(std::span<const float> logits);
  SamplerParams p_;
  uint64_t state_;
  std::vector<std::pair<float, int32_t>> cand_;
  std::vector<std::pair<int32_t, int>> counts_;  // accepted tokens and how often, for the penalties
  std::vector<float> adjusted_;
};

struct GenerateStats {
  int n_prompt = 0, n_generated = 0;
  double prompt_seconds = 0, gen_seconds = 0;
  bool hit_eos = false;  // stopped at an end-of-generation token
  int n_past = 0;        // positions the KV cache holds after the call
  int n_drafted = 0, n_accepted = 0;  // speculative decoding: draft tokens verified, and accepted
};

class Drafter;

struct GenerateOptions {
  int n_predict = 128;
  bool ignore_eos = false;     // end-of-generation tokens are never sampled (as llama-cli)
  bool parse_special = true;   // special-token text in the prompt is the special token
  Drafter* drafter = nullptr;  // speculative decoding (tern/speculative.h); null: a token per step
};

using TextSink = std::function<void(const std::string&)>;

// Feeds the prompt (with BOS if the tokenizer adds one), then samples up to
// n_predict tokens, calling on_text with each complete UTF-8 piece as it is
// produced. Stops at any end-of-generation token. Throws if the prompt does
// not fit the model's context.
GenerateStats generate(Context& ctx, const Tokenizer& tok, std::string_view prompt,
                       const GenerateOptions& o, Sampler& sampler, const TextSink& on_text);

// The step under generate() and chat: feeds `ids` at positions pos.. of
// sequence 0 (the cache holds the earlier ones), then samples as generate() does. The
// sampled ids (without a final end-of-generation token) are appended to
// `out` when it is given; the cache then holds n_past positions (the last
// sampled id is not fed when the call stops at n_predict).
// `before` is what the cache holds (positions [0, pos)), which a drafter
// needs to see (for lookup, and to keep a draft model's cache in step).
GenerateStats continue_from(Context& ctx, const Tokenizer& tok, std::span<const int32_t> ids, int pos,
                            const GenerateOptions& o, Sampler& sampler, const TextSink& on_text,
                            std::vector<int32_t>* out, std::span<const int32_t> before = {});

// How one sequence ended (OpenAI's finish_reason): at an end-of-generation
// token, at n_predict or the context's end, or refused before it ran.
enum class Finish { Stop, Length, Error };
const char* finish_name(Finish f);  // "stop", "length", "error"

struct ParallelStats {
  int n_prompt = 0;
  double prompt_seconds = 0, gen_seconds = 0;
  int n_generated = 0;               // over all sequences
  std::vector<std::string> texts;    // [n] each continuation
  std::vector<int> generated;        // [n] tokens of each
  std::vector<Finish> finish;        // [n]
};

// n continuations of one prompt in one context (ctx.max_seqs() >= n): the
// prompt fed once, as sequence 0, and its pages shared with sequences 1 ..
// n - 1 (tern/context.h); continuation i samples with seed + i, so
// continuation 0 is generate()'s text with the same seed. Every step
// decodes one token of each unfinished continuation in one batch.
// on_text(i, piece), if given, gets continuation i's text as it comes.
// Throws before any decode if the cache cannot hold them all to n_predict.
ParallelStats generate_parallel(Context& ctx, const Tokenizer& tok, std::string_view prompt,
                                const GenerateOptions& o, const SamplerParams& sp, int n,
                                const std::function<void(int, const std::string&)>& on_text = {});

// Offline batch inference: each prompt in a sequence of its own, up to
// ctx.max_seqs() at once, a finished sequence's place given to the next
// prompt (continuous batching: every step one batch of the decode tokens of
// the generating sequences and prompt chunks of new ones, at most
// ctx.max_batch() tokens). Prompt i samples with seed + i, so its text is
// the one it gets alone. A prompt that cannot run (empty, or as long as a
// sequence's share of the cache, n_ctx / max_seqs) gets Finish::Error and
// its message; n_predict is cut to what the share leaves.
struct PromptResult {
  std::string text;
  std::vector<int32_t> tokens;  // the generated ids
  int n_prompt = 0;
  Finish finish = Finish::Stop;
  std::string error;
};
struct BatchProgress {
  size_t done = 0, total = 0;
  int64_t generated = 0;  // tokens so far, over all prompts
  double seconds = 0;
};
void generate_prompts(Context& ctx, const Tokenizer& tok, std::span<const std::string> prompts,
                      const GenerateOptions& o, const SamplerParams& sp,
                      const std::function<void(size_t, PromptResult&&)>& on_done,
                      const std::function<void(const BatchProgress&)>& on_progress = {});

struct PerplexityResult {
  double ppl = 0, err = 0;   // exp(mean nll) and its standard error, as llama.cpp
  int n_chunks = 0;
  int64_t n_scored = 0;      // tokens whose log-likelihood counted
  int64_t n_counted = 0;     // the mean's denominator (packed lines: more than n_scored)
  double seconds = 0;
};

// llama.cpp's llama-perplexity protocol: `tokens` is the whole text
// tokenized with BOS (when the tokenizer adds one); it is cut into chunks of
// n_ctx tokens, each chunk's first token replaced by `bos` (kept as it is
// when bos < 0), and the second half of each chunk scored.
// max_chunks < 0 means all. on_chunk gets (chunk index from 1, running ppl).
// As llama-perplexity's n_seq, n_batch / n_ctx chunks (at least one) run
// as sequences of one batch; the figures do not depend on it, as a token's
// logits are the same in any batch. co gives the threads and cache types.
PerplexityResult perplexity(const Model& model, const ContextOptions& co, const std::vector<int32_t>& tokens,
                            int32_t bos, int n_ctx, int max_chunks,
                            const std::function<void(int, double)>& on_chunk, int n_batch = 2048);

// The packed-lines protocol of Fairy2i-W2's evaluation (eval/eval_ppl.py,
// eval_utils.py), so its published figures can be reproduced: `items` are
// the non-empty lines of the text, each tokenized without special tokens.
// pack_line_items appends EOS to each, skips those longer than n_ctx, and
// packs the rest in order into sequences that start with BOS (none when
// bos < 0), a new sequence whenever the next item would pass n_ctx tokens.
// Like the published code, a sequence can be n_ctx + 1 long (BOS and an
// item of exactly n_ctx tokens) unless it is the last, which is dropped.
// perplexity_packed_lines predicts every position after the first of each
// sequence; a prediction made from an EOS is not scored but counts in the
// denominator, as in the published code; ppl = exp(sum of nll / count).
// max_seqs < 0: all. on_seq gets (sequence from 1, running ppl).
std::vector<std::vector<int32_t>> pack_line_items(const std::vector<std::vector<int32_t>>& items, int32_t bos,
                                                  int32_t eos, int n_ctx);
PerplexityResult perplexity_packed_lines(const Model& model, const ContextOptions& co, const std::vector<std::vector<int32_t>>& items,
                                         int32_t bos, int32_t eos, int n_ctx, int max_seqs,
                                         const std::function<void(int, double)>& on_seq);

}  // namespace tern
