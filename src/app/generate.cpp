#include "tern/generate.h"

#include <chrono>

#include "speculative_loop.h"
#include "tern/streams.h"
#include "tern/clock.h"
#include "tern/error.h"

namespace tern {

GenerateStats generate(Context& ctx, const Tokenizer& tok, std::string_view prompt,
                       const GenerateOptions& o, Sampler& sampler, const TextSink& on_text) {
  EncodeOptions eo;
  eo.parse_special = o.parse_special;
  const std::vector<int32_t> ids = tok.encode(prompt, eo);
  if (ids.empty()) throw Error("the prompt is empty and the tokenizer adds no BOS token to start from");
  return continue_from(ctx, tok, ids, 0, o, sampler, on_text, nullptr);
}

GenerateStats continue_from(Context& ctx, const Tokenizer& tok, std::span<const int32_t> ids, int pos,
                            const GenerateOptions& o, Sampler& sampler, const TextSink& on_text,
                            std::vector<int32_t>* out, std::span<const int32_t> before) {
  GenerateStats st;
  st.n_prompt = int(ids.size());
  const int n_ctx = ctx.n_ctx();
  if (pos + st.n_prompt >= n_ctx)
    throw Error("prompt is " + std::to_string(pos + st.n_prompt) + " tokens, the context holds " +
                std::to_string(n_ctx) + " (raise -c up to the model's limit or shorten it)");
  auto t0 = std::chrono::steady_clock::now();
  std::span<const float> logits = ctx.forward(ids, pos, false);
  st.prompt_seconds = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  if (o.drafter) {
    if (before.size() != size_t(pos))
      throw Error("continue_from: a drafter needs the " + std::to_string(pos) + " tokens before the new ones");
    std::vector<int32_t> history(before.begin(), before.end());
    history.insert(history.end(), ids.begin(), ids.end());
    speculate(ctx, tok, o, sampler, on_text, out, std::move(history), logits, st);
    st.gen_seconds = seconds_since(t0);
    st.n_past = ctx.seq_length(0);
    return st;
  }
  std::vector<float> masked;
  Utf8Stream utf8;
  pos += st.n_prompt;
  for (int i = 0; i < o.n_predict; ++i) {
    const int32_t next = sample_next(sampler, logits, tok, o.ignore_eos, masked);
    if (tok.is_eog(next)) {
      st.hit_eos = true;
      break;
    }
    ++st.n_generated;
    sampler.accept(next);
    if (out) out->push_back(next);
    on_text(utf8.push(tok.piece_bytes(next)));
    // No forward for a token that will never be sampled from; stop when the
    // context is full.
    if (i + 1 == o.n_predict || pos >= n_ctx) break;
    logits = ctx.forward(std::span<const int32_t>(&next, 1), pos++, false);
  }
  const std::string rest = utf8.flush();
  if (!rest.empty()) on_text(rest);
  st.gen_seconds = seconds_since(t0);
  st.n_past = pos;
  return st;
}

}  // namespace tern
