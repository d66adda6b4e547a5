#include "tern/thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdio>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tern {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// Spins before sleeping, in rounds: a decode step's regions are tens to
// hundreds of microseconds apart by a few microseconds of serial work, so a
// spin catches the next region without a futex round trip. But a spinning
// thread holds a core its partner may need: when another process has
// preempted the thread this one waits for, the wait ends only after that
// process's time slice, unless this thread sleeps and the scheduler moves
// the preempted one onto the freed core. The length of a wait cannot tell
// the two cases apart (in a VM the host pauses threads for 1-9 ms with
// nothing else running), so after each round the waiter reads the CPU
// time of the threads it waits for: it spins on while they all ran for
// most of the round, and sleeps at once otherwise. One round is about
// 20-60 us, depending on the cost of a pause.
constexpr int kSpins = 1 << 10;
constexpr int kMaxRounds = 16;
// The caller-alone fallback (thread_pool.h). A region with both threads
// takes the caller's share plus its wait for the others; alone it takes
// both shares. So once the waits outgrow the caller's own work, the second
// thread costs more than it gives: a busy loop on a worker's core makes
// the caller wait out the worker's preemptions at region after region
// (a millisecond or more each). The host's pauses of a virtual CPU (a few
// milliseconds, a few times a second) and a niced process's short slices
// stay below that. Windows of at least kWindowNs; stretches of kSoloFirst
// runs (about one decode step at S's shape), doubling to kSoloMax while the
// waits keep winning, back to kSoloFirst after kCalmWindows windows in
// which they did not.
constexpr int64_t kWindowNs = 25000000;
constexpr int64_t kSoloFirst = 128, kSoloMax = 8192, kCalmWindows = 40;

// -1 when the clock cannot be read; clockid_t(-1), the pool's "no clock",
// is never valid (its low bits name no CPU-time clock).
int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return -1;
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Waits until `word` no longer holds `old`. `running(wall_ns)` says whether
// the threads this one waits for were on a CPU for most of the last
// `wall_ns` nanoseconds.
template <class Running>
void wait_while(const std::atomic<uint32_t>& word, uint32_t old, Running&& running) {
  int64_t since = clock_ns(CLOCK_MONOTONIC);
  for (int round = 0; round < kMaxRounds; ++round) {
    for (int i = 0; i < kSpins; ++i) {
      if (word.load(std::memory_order_acquire) != old) return;
      cpu_relax();
    }
    const int64_t now = clock_ns(CLOCK_MONOTONIC);
    if (!running(now - since)) break;
    since = now;
  }
  while (word.load(std::memory_order_acquire) == old) word.wait(old, std::memory_order_acquire);
}

}  // namespace

int ThreadPool::quota_cpus(const std::string& cpu_max) {
  long long quota = 0, period = 0;
  if (std::sscanf(cpu_max.c_str(), "%lld %lld", &quota, &period) != 2 || quota <= 0 || period <= 0) return 0;
  return int(std::max<long long>(1, (quota + period - 1) / period));
}

int64_t row_chunk(int64_t rows, int threads, int64_t per_thread) {
  if (threads <= 1) return std::max(rows, int64_t(1));
  const int64_t want = (rows + per_thread * threads - 1) / (per_thread * threads);
  return std::max(int64_t(16), (want + 15) / 16 * 16);
}

int ThreadPool::available_cpus() {
  int n = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) n = CPU_COUNT(&set);
  if (n == 0) n = std::max(1, int(std::thread::hardware_concurrency()));
  // cgroup v2 at the usual mount; a process in a nested cgroup sees its own
  // cgroup's file there when the namespace is private (containers).
  if (std::FILE* f = std::fopen("/sys/fs/cgroup/cpu.max", "r")) {
    char buf[64] = {};
    const bool got = std::fgets(buf, sizeof buf, f) != nullptr;
    std::fclose(f);
    if (const int q = got ? quota_cpus(buf) : 0; q > 0) n = std::min(n, q);
  }
  return n;
}

ThreadPool::ThreadPool(int threads)
    : n_(threads > 0 ? threads : available_cpus()),
      clocks_(size_t(n_), clockid_t(-1)),
      last_cpu_(size_t(n_), -1),
      done_(new std::atomic<uint32_t>[size_t(n_)]) {
  errors_.resize(size_t(n_));
  threads_.reserve(size_t(n_ - 1));
  for (int t = 0; t < n_; ++t) done_[size_t(t)].store(0, std::memory_order_relaxed);
  for (int t = 1; t < n_; ++t) {
    threads_.emplace_back([this, t] { worker(t); });
    // A thread whose clock cannot be read counts as not running, so its
    // waiters fall back to the short spin.
    clockid_t c;
    clocks_[size_t(t)] = pthread_getcpuclockid(threads_.back().native_handle(), &c) == 0 ? c : clockid_t(-1);
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& th : threads_) th.join();
}

void ThreadPool::worker(int t) {
  uint32_t seen = 0;
  for (;;) {
    // Waits for the caller, which runs the serial steps between regions.
    const clockid_t caller = caller_clock_.load(std::memory_order_relaxed);
    int64_t last = -1;
    wait_while(generation_, seen, [&](int64_t wall_ns) {
      const int64_t now = clock_ns(caller);
      const bool ran = last < 0 || (now >= 0 && 2 * (now - last) >= wall_ns);
      last = now;
      return ran && now >= 0;
    });
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_relaxed)) return;
    try {
      (*job_)(t);
    } catch (...) {
      errors_[size_t(t)] = std::current_exception();
    }
    done_[size_t(t)].store(seen, std::memory_order_relaxed);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::run(const std::function<void(int)>& job, Split split) {
  next_.store(0, std::memory_order_relaxed);
  if (n_ > 1 && split == Split::Claimed && solo_left_ > 0) {
    // The workers are not woken: they sleep after their spin, and the
    // scheduler can give the caller whichever core is free.
    --solo_left_;
    ++solo_runs_;
    return job(0);
  }
  for (std::exception_ptr& e : errors_) e = nullptr;
  job_ = &job;
  const int64_t start = n_ > 1 ? clock_ns(CLOCK_MONOTONIC) : 0;
  uint32_t gen = 0;
  if (n_ > 1) {
    clockid_t self;
    caller_clock_.store(pthread_getcpuclockid(pthread_self(), &self) == 0 ? self : clockid_t(-1),
                        std::memory_order_relaxed);
    pending_.store(uint32_t(n_ - 1), std::memory_order_relaxed);
    gen = generation_.fetch_add(1, std::memory_order_release) + 1;  // publishes job_, next_, errors_
    generation_.notify_all();
  }
  try {
    job(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  const int64_t worked = n_ > 1 ? clock_ns(CLOCK_MONOTONIC) : 0;
  // Spins on only while every worker still in the job is on a CPU.
  bool first = true;
  const auto workers_running = [&](int64_t wall_ns) {
    bool all = true;
    for (int t = 1; t < n_; ++t) {
      if (done_[size_t(t)].load(std::memory_order_relaxed) == gen) continue;
      int64_t& last = last_cpu_[size_t(t)];
      const int64_t now = clock_ns(clocks_[size_t(t)]);
      if (now < 0 || (!first && 2 * (now - last) < wall_ns)) all = false;
      last = now;
    }
    first = false;
    return all;
  };
  for (uint32_t left = pending_.load(std::memory_order_acquire); n_ > 1 && left != 0;
       left = pending_.load(std::memory_order_acquire))
    wait_while(pending_, left, workers_running);
  // Only Claimed runs could have gone to the caller alone, so only their
  // waits argue for it; an EveryThread run's shares are fixed by its job.
  if (n_ > 1 && split == Split::Claimed) account(start, worked, clock_ns(CLOCK_MONOTONIC));
  job_ = nullptr;
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
}

// The caller worked from `start` to `worked` in a shared run and waited
// for the workers until `end`.
void ThreadPool::account(int64_t start, int64_t worked, int64_t end) {
  if (start < 0 || worked < start || end < worked) return;  // no clock
  if (window_start_ < 0) window_start_ = start;
  window_work_ += worked - start;
  window_wait_ += end - worked;
  if (end - window_start_ < kWindowNs) return;
  if (window_wait_ > window_work_) {
    solo_len_ = solo_len_ == 0 ? kSoloFirst : std::min(2 * solo_len_, kSoloMax);
    solo_left_ = solo_len_;
    calm_windows_ = 0;
  } else if (++calm_windows_ >= kCalmWindows) {
    solo_len_ = 0;
  }
  window_start_ = -1;
  window_work_ = window_wait_ = 0;
}

}  // namespace tern
