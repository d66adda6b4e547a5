#include "tern/thread_pool.h"

#include <sched.h>

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

// Spins before sleeping: a decode step's regions are tens to hundreds of
// microseconds apart by a few microseconds of serial work, so a short spin
// catches the next region without a futex round trip, while a thread that
// would wait longer (another process holds the core, or the run is over)
// gives the core up. About 20-60 us, depending on the cost of a pause.
constexpr int kSpins = 1 << 10;

// Waits until `word` no longer holds `old`.
void wait_while(const std::atomic<uint32_t>& word, uint32_t old) {
  for (int i = 0; i < kSpins; ++i) {
    if (word.load(std::memory_order_acquire) != old) return;
    cpu_relax();
  }
  while (word.load(std::memory_order_acquire) == old) word.wait(old, std::memory_order_acquire);
}

}  // namespace

int ThreadPool::quota_cpus(const std::string& cpu_max) {
  long long quota = 0, period = 0;
  if (std::sscanf(cpu_max.c_str(), "%lld %lld", &quota, &period) != 2 || quota <= 0 || period <= 0) return 0;
  return int(std::max<long long>(1, (quota + period - 1) / period));
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

ThreadPool::ThreadPool(int threads) : n_(threads > 0 ? threads : available_cpus()) {
  errors_.resize(size_t(n_));
  threads_.reserve(size_t(n_ - 1));
  for (int t = 1; t < n_; ++t) threads_.emplace_back([this, t] { worker(t); });
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
    wait_while(generation_, seen);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_relaxed)) return;
    try {
      (*job_)(t);
    } catch (...) {
      errors_[size_t(t)] = std::current_exception();
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::run(const std::function<void(int)>& job) {
  for (std::exception_ptr& e : errors_) e = nullptr;
  job_ = &job;
  next_.store(0, std::memory_order_relaxed);
  if (n_ > 1) {
    pending_.store(uint32_t(n_ - 1), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);  // publishes job_, next_, errors_
    generation_.notify_all();
  }
  try {
    job(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  for (uint32_t left = pending_.load(std::memory_order_acquire); n_ > 1 && left != 0;
       left = pending_.load(std::memory_order_acquire))
    wait_while(pending_, left);
  job_ = nullptr;
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
}

}  // namespace tern
