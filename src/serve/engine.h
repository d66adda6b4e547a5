// tern serve's engine: one thread runs a Context of `slots` sequences with
// continuous batching. Each step is one batch holding a decode token of
// every generating slot and prompt chunks of newly admitted ones (decode
// tokens first; a long prompt is fed in chunks, so it never stalls the
// others). A request waits in a bounded queue while every slot is busy. A
// slot keeps what its cache holds after a request ends, and a new request
// goes to the free slot whose cache shares the longest prefix with its
// prompt, which it does not feed again (llama-server's cache_prompt). The
// HTTP threads only queue jobs and read what they produce, so a slow
// client never holds the engine up; a cancelled job (its client gone)
// frees its slot at the next step.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api.h"
#include "tern/context.h"
#include "tern/generate.h"
#include "tern/tokenizer.h"

namespace tern::serve {

// One choice of one request, from the queue to its end. The engine writes
// the output fields under `m` and notifies `cv`; the HTTP thread reads them.
struct Job {
  // Set before submit(), read-only after.
  std::vector<int32_t> prompt;
  int max_tokens = 0;  // already capped to the slot's context
  SamplerParams sampling;
  std::vector<std::string> stop;
  int logprobs = -1;
  bool ignore_eos = false;
  std::chrono::steady_clock::time_point queued;

  std::atomic<bool> cancelled{false};  // the client is gone: stop at the next step

  std::mutex m;
  std::condition_variable cv;
  // Under m: the released text (stop strings held back until they cannot
  // match), its tokens' log probabilities, and how it ended.
  std::string text;
  std::vector<size_t> token_ends;  // text.size() once each generated token's text was released: one per token
  std::vector<TokenLogprob> logprobs_out;
  int n_cached = 0;  // prompt tokens found in the slot's cache
  bool done = false;
  Finish finish = Finish::Stop;
  std::string error;  // with Finish::Error: what went wrong
  std::optional<std::chrono::steady_clock::time_point> first_token;
};

struct EngineOptions {
  int slots = 4;
  int ctx = 0;          // positions over all slots (ContextOptions::ctx)
  int threads = 0;
  int max_queue = 64;   // jobs waiting while every slot is busy; submit() refuses more
  int max_batch = 256;  // tokens per step
  gguf::TensorType cache_type_k = gguf::TensorType::F32, cache_type_v = gguf::TensorType::F32;
};

struct EngineStats {
  int busy_slots = 0, queued = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0, cached_tokens = 0;
  double tokens_per_second = 0;  // generated over the last few seconds
};

class Engine {
 public:
  Engine(const Model& model, const Tokenizer& tok, const EngineOptions& o);
  ~Engine();  // finishes every job (Finish::Length) and joins the thread

  int slot_ctx() const { return slot_ctx_; }  // positions one request can use
  int slots() const { return int(slots_.size()); }
  const Context& context() const { return ctx_; }
  // Queues a job; false (nothing queued) when the queue is full.
  bool submit(const std::shared_ptr<Job>& job);
  // Ends every queued and running job now (Finish::Length), and refuses new
  // ones; jobs' readers see them done.
  void shutdown();
  EngineStats stats() const;

 private:
  struct Slot;
  void loop();
  void admit(std::unique_lock<std::mutex>& lock);
  // The free slot whose cached tokens share the longest prefix with
  // `prompt` (that length in `shared`), or null when none is free.
  Slot* free_slot(const std::vector<int32_t>& prompt, size_t& shared) const;
  // Sets slot s to run job from its first `keep` cached tokens on: the
  // stream to feed, the stop-string scan and the log-probability hook.
  void start(Slot& s, const std::shared_ptr<Job>& job, size_t keep);
  void step();
  void finish(Slot& s, Finish f);

  const Model& model_;
  const Tokenizer& tok_;
  Context ctx_;
  int slot_ctx_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;
  int max_queue_ = 0;

  mutable std::mutex m_;  // queue_, stop_, the counters
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
  int busy_ = 0;
  int64_t prompt_tokens_ = 0, generated_tokens_ = 0, cached_tokens_ = 0;
  std::deque<std::pair<std::chrono::steady_clock::time_point, int>> recent_;  // (step end, tokens) of the last seconds
  std::thread thread_;
};

}  // namespace tern::serve
