#include "engine.h"

#include <algorithm>
#include <cmath>

#include "tern/error.h"
#include "tern/streams.h"

namespace tern::serve {

using Clock = std::chrono::steady_clock;

namespace {

// Generated text is released as soon as no stop string can begin in it: a
// tail that is the start of one is held back until the next piece decides.
struct StopScan {
  std::string held;
  // Adds `piece`; returns what can go out now. `hit`: a stop string was
  // found, the text before it released and the rest dropped.
  std::string push(const std::vector<std::string>& stops, const std::string& piece, bool& hit) {
    held += piece;
    size_t at = std::string::npos;
    for (const std::string& s : stops) at = std::min(at, held.find(s));
    if (at != std::string::npos) {
      hit = true;
      std::string out = held.substr(0, at);
      held.clear();
      return out;
    }
    size_t keep = 0;  // the longest tail that is a proper prefix of a stop string
    for (const std::string& s : stops)
      for (size_t j = std::min(s.size() - 1, held.size()); j > keep; --j)
        if (held.compare(held.size() - j, j, s, 0, j) == 0) {
          keep = j;
          break;
        }
    std::string out = held.substr(0, held.size() - keep);
    held.erase(0, held.size() - keep);
    return out;
  }
};

// log softmax(logits)[token], and the `top` most likely tokens' (ties by id).
TokenLogprob logprob_of(const Tokenizer& tok, std::span<const float> logits, int32_t token, int top) {
  float mx = logits[0];
  for (float v : logits) mx = std::max(mx, v);
  double sum = 0;
  for (float v : logits) sum += std::exp(double(v - mx));
  const double lse = double(mx) + std::log(sum);
  TokenLogprob t;
  t.text = tok.token_piece(token);
  t.logprob = float(double(logits[size_t(token)]) - lse);
  if (top > 0) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    const size_t k = std::min(size_t(top), ids.size());
    std::partial_sort(ids.begin(), ids.begin() + long(k), ids.end(), [&](int32_t a, int32_t b) {
      return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
    });
    for (size_t i = 0; i < k; ++i)
      t.top.push_back({tok.token_piece(ids[i]), float(double(logits[size_t(ids[i])]) - lse)});
  }
  return t;
}

}  // namespace

struct Engine::Slot {
  int seq = 0;
  std::vector<int32_t> cached;  // what the sequence's cache holds, in order
  std::shared_ptr<Job> job;     // null: free
  Stream stream;
  StopScan scan;
  bool stopped = false;         // a stop string ended it
};

Engine::Engine(const Model& model, const Tokenizer& tok, const EngineOptions& o)
    : model_(model),
      tok_(tok),
      ctx_(model, {.ctx = o.ctx,
                   .max_seqs = o.slots,
                   .max_batch = o.max_batch,
                   .threads = o.threads,
                   .cache_type_k = o.cache_type_k,
                   .cache_type_v = o.cache_type_v}),
      max_queue_(o.max_queue) {
  // Each slot's share: any slots within their shares fit the cache together.
  slot_ctx_ = ctx_.n_ctx() / o.slots;
  if (slot_ctx_ < 2)
    throw Error("-c " + std::to_string(ctx_.n_ctx()) + " over -np " + std::to_string(o.slots) +
                " leaves a slot no room for a prompt");
  for (int i = 0; i < o.slots; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->seq = i;
  }
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  shutdown();
  if (thread_.joinable()) thread_.join();
}

bool Engine::submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> lock(m_);
    // Room: the free slots, then max_queue waiting for one.
    if (stop_ || int(queue_.size()) >= max_queue_ + slots() - busy_) return false;
    job->queued = Clock::now();
    queue_.push_back(job);
  }
  wake_.notify_one();
  return true;
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_one();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(m_);
  EngineStats s;
  s.busy_slots = busy_;
  s.queued = int(queue_.size());
  s.prompt_tokens = prompt_tokens_;
  s.generated_tokens = generated_tokens_;
  s.cached_tokens = cached_tokens_;
  if (recent_.size() >= 2) {
    int n = 0;
    for (size_t i = 1; i < recent_.size(); ++i) n += recent_[i].second;
    const double dt = std::chrono::duration<double>(recent_.back().first - recent_.front().first).count();
    if (dt > 0) s.tokens_per_second = n / dt;
  }
  return s;
}

namespace {

void publish(Job& job, const std::string& text, bool done, Finish finish) {
  {
    std::lock_guard<std::mutex> lock(job.m);
    job.text += text;
    if (done) {
      job.done = true;
      job.finish = finish;
    }
  }
  job.cv.notify_all();
}

}  // namespace

void Engine::finish(Slot& s, Finish f) {
  Job& job = *s.job;
  // Text held back for a stop string that never came goes out now.
  std::string rest = s.stopped || f == Finish::Error ? std::string() : s.scan.held + s.stream.utf8.flush();
  if (s.stopped && f != Finish::Error) f = Finish::Stop;
  {
    // The slot counts as free before its client learns the job is done, so
    // that client's next request finds room (only this thread admits).
    std::lock_guard<std::mutex> lock(m_);
    --busy_;
  }
  publish(job, rest, true, f);
  // The cache holds the prompt and every sampled token but the last.
  std::vector<int32_t> all = job.prompt;
  all.insert(all.end(), s.stream.out.begin(), s.stream.out.end());
  all.resize(std::min(all.size(), size_t(ctx_.seq_length(s.seq))));
  ctx_.seq_truncate(s.seq, int(all.size()));
  s.cached = std::move(all);
  s.job.reset();
}

Engine::Slot* Engine::free_slot(const std::vector<int32_t>& prompt, size_t& shared) const {
  Slot* best = nullptr;
  shared = 0;
  for (auto& s : slots_) {
    if (s->job) continue;
    size_t n = 0;
    while (n < s->cached.size() && n < prompt.size() && s->cached[n] == prompt[n]) ++n;
    if (!best || n > shared) {
      best = s.get();
      shared = n;
    }
  }
  return best;
}

void Engine::start(Slot& s, const std::shared_ptr<Job>& job, size_t keep) {
  ctx_.seq_truncate(s.seq, int(keep));
  s.cached.resize(keep);
  s.job = job;
  s.stopped = false;
  s.scan = StopScan{};
  s.stream = Stream{};
  s.stream.seq = s.seq;
  s.stream.feed.assign(job->prompt.begin() + long(keep), job->prompt.end());
  s.stream.n_predict = job->max_tokens;
  s.stream.ignore_eos = job->ignore_eos;
  s.stream.sampler = Sampler(job->sampling);
  Job* j = job.get();
  Slot* slot = &s;
  s.stream.on_text = [this, j, slot](const std::string& piece) {
    bool hit = false;
    const std::string out = slot->scan.push(j->stop, piece, hit);
    publish(*j, out, false, Finish::Stop);
    if (hit) {
      slot->stopped = true;
      slot->stream.done = true;
      slot->stream.finish = Finish::Stop;
    }
  };
  if (job->logprobs >= 0)
    s.stream.on_sample = [this, j](int32_t token, std::span<const float> logits) {
      if (tok_.is_eog(token)) return;
      TokenLogprob lp = logprob_of(tok_, logits, token, j->logprobs);
      std::lock_guard<std::mutex> l(j->m);
      j->logprobs_out.push_back(std::move(lp));
    };
  std::lock_guard<std::mutex> l(job->m);
  job->n_cached = int(keep);
}

// Queued jobs into free slots, each to the one whose cache shares the
// longest prefix with its prompt. The slot is set up with the lock
// released; the counters change under it.
void Engine::admit(std::unique_lock<std::mutex>& lock) {
  while (!queue_.empty()) {
    size_t shared = 0;
    Slot* best = free_slot(queue_.front()->prompt, shared);
    if (!best) return;
    std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    ++busy_;
    lock.unlock();
    // At least the last prompt token is fed: its logits draw the first token.
    const size_t keep = std::min(shared, job->prompt.size() - 1);
    start(*best, job, keep);
    lock.lock();
    prompt_tokens_ += int64_t(job->prompt.size());
    cached_tokens_ += int64_t(keep);
    if (job->max_tokens <= 0) {
      lock.unlock();
      best->stream.done = true;
      finish(*best, Finish::Length);
      lock.lock();
    }
  }
}

void Engine::step() {
  std::vector<Stream*> running;
  for (auto& s : slots_) {
    if (!s->job) continue;
    if (s->job->cancelled.load(std::memory_order_relaxed)) {
      s->stream.done = true;
      finish(*s, Finish::Stop);
      continue;
    }
    running.push_back(&s->stream);
  }
  if (running.empty()) return;
  GenerateOptions o;
  int sampled = 0;
  try {
    sampled = step_streams(ctx_, tok_, o, running);
  } catch (const std::exception& e) {
    // A fault of the model file found by this step (a bad head row): every
    // running job ends with it.
    for (auto& s : slots_)
      if (s->job) {
        {
          std::lock_guard<std::mutex> l(s->job->m);
          s->job->error = e.what();
        }
        s->stream.done = true;
        finish(*s, Finish::Error);
      }
    return;
  }
  // A step samples at most one token per slot: where a slot's job has one
  // more, the text released so far is that token's (a stream sends a chunk
  // per token, as llama-server's).
  for (auto& s : slots_) {
    if (!s->job) continue;
    Job& j = *s->job;
    bool grew = false;
    {
      std::lock_guard<std::mutex> l(j.m);
      if (s->stream.out.size() > j.token_ends.size()) {
        j.token_ends.push_back(j.text.size());
        if (!j.first_token) j.first_token = Clock::now();
        grew = true;
      }
    }
    if (grew) j.cv.notify_all();
  }
  for (auto& s : slots_)
    if (s->job && s->stream.done) finish(*s, s->stream.finish);
  std::lock_guard<std::mutex> lock(m_);
  generated_tokens_ += sampled;
  const auto now = Clock::now();
  recent_.push_back({now, sampled});
  while (recent_.size() > 2 && now - recent_.front().first > std::chrono::seconds(5)) recent_.pop_front();
}

void Engine::loop() {
  std::unique_lock<std::mutex> lock(m_);
  while (true) {
    if (stop_) break;
    admit(lock);
    if (busy_ == 0) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      continue;
    }
    lock.unlock();
    step();
    lock.lock();
  }
  // Shutdown: every job ends now, its readers told.
  std::deque<std::shared_ptr<Job>> queued;
  queued.swap(queue_);
  lock.unlock();
  for (auto& j : queued) publish(*j, "", true, Finish::Length);
  for (auto& s : slots_)
    if (s->job) finish(*s, Finish::Length);
}

}  // namespace tern::serve
