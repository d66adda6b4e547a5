// Many sequences in one context: n continuations of one prompt, and a list
// of prompts run with continuous batching (generate.h), both on the step
// of streams.h.
#include <algorithm>
#include <chrono>
#include <limits>

#include "tern/streams.h"
#include "tern/clock.h"
#include "tern/error.h"

namespace tern {

const char* finish_name(Finish f) {
  switch (f) {
    case Finish::Stop: return "stop";
    case Finish::Length: return "length";
    case Finish::Error: return "error";
  }
  return "?";
}

int32_t sample_next(Sampler& s, std::span<const float> logits, const Tokenizer& tok, bool ignore_eos,
                    std::vector<float>& scratch) {
  if (!ignore_eos) return s.sample(logits);
  scratch.assign(logits.begin(), logits.end());
  for (int32_t id : tok.eog_ids())
    if (size_t(id) < scratch.size()) scratch[size_t(id)] = -std::numeric_limits<float>::infinity();
  return s.sample(scratch);
}

namespace {

void emit(Stream& s, const std::string& piece) {
  if (piece.empty()) return;
  s.text += piece;
  if (s.on_text) s.on_text(piece);
}

void finish(Stream& s, Finish f) {
  s.done = true;
  s.finish = f;
  emit(s, s.utf8.flush());
}

}  // namespace

void take_sample(Context& ctx, const Tokenizer& tok, Stream& s, int32_t next) {
  if (tok.is_eog(next)) return finish(s, Finish::Stop);
  s.sampler.accept(next);
  s.out.push_back(next);
  emit(s, s.utf8.push(tok.piece_bytes(next)));
  if (s.done) return;  // on_text ended it (a stop string)
  // No forward for a token that will never be sampled from.
  if (int(s.out.size()) >= s.n_predict || ctx.seq_length(s.seq) >= ctx.n_ctx()) return finish(s, Finish::Length);
  s.feed.assign(1, next);
  s.fed = 0;
}

int step_streams(Context& ctx, const Tokenizer& tok, const GenerateOptions& o, std::span<Stream* const> streams) {
  std::vector<BatchToken> batch;
  std::vector<Stream*> sampling;  // the streams whose last fed token asks for logits, in batch order
  int budget = ctx.max_batch();
  // Decode tokens first, so a long prompt never holds back the others;
  // prompts get what the step's budget leaves.
  for (int pass = 0; pass < 2; ++pass)
    for (Stream* s : streams) {
      const size_t left = s->feed.size() - s->fed;
      if (s->done || left == 0 || (left == 1) != (pass == 0)) continue;
      const size_t take = pass == 0 ? 1 : std::min(left, size_t(std::max(budget, 0)));
      const int pos = ctx.seq_length(s->seq);
      for (size_t i = 0; i < take; ++i) {
        const bool last = s->fed + i + 1 == s->feed.size();
        batch.push_back({s->feed[s->fed + i], s->seq, pos + int(i), last});
        if (last) sampling.push_back(s);
      }
      s->fed += take;
      budget -= int(take);
    }
  if (batch.empty()) return 0;
  const std::span<const float> logits = ctx.decode(batch);
  const size_t V = size_t(ctx.model().config().vocab_size);
  std::vector<float> scratch;
  for (size_t r = 0; r < sampling.size(); ++r) {
    Stream& s = *sampling[r];
    const std::span<const float> row = logits.subspan(r * V, V);
    const int32_t next = sample_next(s.sampler, row, tok, o.ignore_eos || s.ignore_eos, scratch);
    if (s.on_sample) s.on_sample(next, row);
    take_sample(ctx, tok, s, next);
  }
  return int(sampling.size());
}

ParallelStats generate_parallel(Context& ctx, const Tokenizer& tok, std::string_view prompt,
                                const GenerateOptions& o, const SamplerParams& sp, int n,
                                const std::function<void(int, const std::string&)>& on_text) {
  if (n < 1 || n > ctx.max_seqs())
    throw Error("-np " + std::to_string(n) + ": the context runs 1 to " + std::to_string(ctx.max_seqs()) +
                " sequences");
  EncodeOptions eo;
  eo.parse_special = o.parse_special;
  const std::vector<int32_t> ids = tok.encode(prompt, eo);
  if (ids.empty()) throw Error("the prompt is empty and the tokenizer adds no BOS token to start from");
  ParallelStats st;
  st.n_prompt = int(ids.size());
  if (st.n_prompt >= ctx.n_ctx())
    throw Error("prompt is " + std::to_string(st.n_prompt) + " tokens, the context holds " +
                std::to_string(ctx.n_ctx()) + " (raise -c up to the model's limit or shorten it)");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < ctx.max_seqs(); ++i) ctx.seq_remove(i);
  // The prompt once, in sequence 0; the others share its pages and sample
  // their first tokens from its last logits.
  const std::span<const float> first = ctx.forward(ids, 0, false, 0);
  const std::vector<float> logits(first.begin(), first.end());
  for (int i = 1; i < n; ++i) ctx.seq_share(0, i);
  st.prompt_seconds = seconds_since(t0);
  const int room = std::min(o.n_predict, ctx.n_ctx() - st.n_prompt);
  std::vector<std::pair<int, int>> growth;
  for (int i = 0; i < n; ++i) growth.push_back({i, std::max(room - 1, 0)});
  if (!ctx.fits(growth))
    throw Error("-np " + std::to_string(n) + ": " + std::to_string(n) + " continuations of " +
                std::to_string(room) + " tokens after a prompt of " + std::to_string(st.n_prompt) +
                " need more than the KV cache's " + std::to_string(ctx.n_ctx()) +
                " positions (raise -c, or lower -np or -n)");
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<Stream> streams(static_cast<size_t>(n));
  std::vector<Stream*> ptrs;
  std::vector<float> scratch;
  for (int i = 0; i < n; ++i) {
    Stream& s = streams[size_t(i)];
    s.seq = i;
    s.n_predict = room;
    SamplerParams p = sp;
    p.seed = sp.seed + uint64_t(i);
    s.sampler = Sampler(p);
    if (on_text) s.on_text = [&on_text, i](const std::string& t) { on_text(i, t); };
    ptrs.push_back(&s);
    if (room <= 0) finish(s, Finish::Length);
    else take_sample(ctx, tok, s, sample_next(s.sampler, logits, tok, o.ignore_eos, scratch));
  }
  while (std::any_of(streams.begin(), streams.end(), [](const Stream& s) { return !s.done; }))
    step_streams(ctx, tok, o, ptrs);
  st.gen_seconds = seconds_since(t1);
  for (Stream& s : streams) {
    st.texts.push_back(std::move(s.text));
    st.generated.push_back(int(s.out.size()));
    st.finish.push_back(s.finish);
    st.n_generated += int(s.out.size());
  }
  return st;
}

void generate_prompts(Context& ctx, const Tokenizer& tok, std::span<const std::string> prompts,
                      const GenerateOptions& o, const SamplerParams& sp,
                      const std::function<void(size_t, PromptResult&&)>& on_done,
                      const std::function<void(const BatchProgress&)>& on_progress) {
  // Each sequence's share of the cache: any sequences within their shares fit
  // it together (tern/context.h), so no running sequence is ever cut short.
  const int share = ctx.n_ctx() / ctx.max_seqs();
  EncodeOptions eo;
  eo.parse_special = o.parse_special;
  std::vector<Stream> slots(size_t(ctx.max_seqs()));
  std::vector<size_t> job(slots.size());  // the prompt each slot runs
  std::vector<int> n_prompt(slots.size());
  std::vector<bool> busy(slots.size(), false);
  for (int i = 0; i < ctx.max_seqs(); ++i) ctx.seq_remove(i);
  BatchProgress progress;
  progress.total = prompts.size();
  const auto t0 = std::chrono::steady_clock::now();
  size_t next = 0;
  const auto report = [&](size_t i, PromptResult&& r) {
    progress.generated += int64_t(r.tokens.size());
    ++progress.done;
    on_done(i, std::move(r));
  };
  while (true) {
    for (size_t k = 0; k < slots.size(); ++k)
      while (!busy[k] && next < prompts.size()) {
        const size_t i = next++;
        PromptResult r;
        std::vector<int32_t> ids = tok.encode(prompts[i], eo);
        r.n_prompt = int(ids.size());
        if (prompts[i].empty() || r.n_prompt >= share) {
          r.finish = Finish::Error;
          r.error = prompts[i].empty() ? "empty prompt"
                                : "the prompt is " + std::to_string(ids.size()) + " tokens; a sequence holds " +
                                      std::to_string(share) + " (-c " + std::to_string(ctx.n_ctx()) +
                                      " over -np " + std::to_string(ctx.max_seqs()) + ")";
          report(i, std::move(r));
          continue;
        }
        Stream& s = slots[k];
        s = Stream{};
        s.seq = int(k);
        s.feed = std::move(ids);
        s.n_predict = std::min(o.n_predict, share - r.n_prompt);
        SamplerParams p = sp;
        p.seed = sp.seed + uint64_t(i);
        s.sampler = Sampler(p);
        ctx.seq_remove(s.seq);
        job[k] = i;
        n_prompt[k] = r.n_prompt;
        busy[k] = true;
        if (s.n_predict <= 0) finish(s, Finish::Length);
      }
    std::vector<Stream*> running;
    for (size_t k = 0; k < slots.size(); ++k)
      if (busy[k]) running.push_back(&slots[k]);
    if (running.empty()) break;
    step_streams(ctx, tok, o, running);
    for (size_t k = 0; k < slots.size(); ++k) {
      if (!busy[k] || !slots[k].done) continue;
      PromptResult r;
      r.tokens = std::move(slots[k].out);
      r.text = std::move(slots[k].text);
      r.n_prompt = n_prompt[k];
      r.finish = slots[k].finish;
      busy[k] = false;
      report(job[k], std::move(r));
    }
    progress.seconds = seconds_since(t0);
    if (on_progress) on_progress(progress);
  }
  progress.seconds = seconds_since(t0);
  if (on_progress) on_progress(progress);
}

}  // namespace tern
