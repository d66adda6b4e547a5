// A fixed team of threads for the forward pass, in place of OpenMP regions.
//
// Why not OpenMP: libgomp's idle threads spin for a long while before they
// sleep, and its `parallel for` splits work statically. With another process
// on one of the cores, the thread sharing that core got half of it and every
// region waited for it: `tern generate -t 2` beside a busy loop kept 0.25 of
// its speed alone (Zen 3). Here work is claimed in small chunks from a shared
// counter, so the thread on a free core takes what the other cannot reach,
// and a thread with nothing to do spins only while the thread it waits for
// is on a CPU (it reads that thread's CPU-time clock), then sleeps on a
// futex, which also lets the scheduler move a preempted worker onto the idle
// core. When the caller spends more time waiting for preempted workers than
// working (another process takes a share of their cores), it runs the
// regions that allow it alone for a while.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <ctime>
#include <memory>
#include <thread>
#include <vector>

namespace tern {

// Rows per claimed chunk when `threads` threads split `rows` rows: about 4
// chunks per thread, so a thread slowed by another process leaves a few
// for the others, in multiples of 16 rows (kernels work on 2 to 32 rows at
// a time, and a chunk should cover whole cache lines of scales and
// outputs); one chunk when alone. Every chunk costs a claim and a cold
// start of its prefetch stream: two-thread decode on Zen 5 was faster with
// 4 per thread than with 16 (git show d2934d8:docs/PERFORMANCE.md,
// "Threads on Zen 5"). The forward pass and the kernel benchmarks split
// rows with it.
// `per_thread` sets another number of chunks per thread (a prompt's
// products take 16: product_chunk in src/model/forward.cpp).
int64_t row_chunk(int64_t rows, int threads, int64_t per_thread = 4);

class ThreadPool {
 public:
  // `threads` threads in all (the caller of run() is one of them); 0 means
  // one per CPU this process may run on.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_; }
  // CPUs this process may use: its affinity mask (taskset, cpusets), cut to
  // the CPU quota of its cgroup (docker --cpus, systemd CPUQuota=), rounded
  // up. The default size, so a default run never starts more busy threads
  // than it is given cores.
  static int available_cpus();
  // The cgroup part: CPUs a cgroup v2 "cpu.max" text ("max 100000",
  // "150000 100000") allows, rounded up; 0 when it sets no limit.
  static int quota_cpus(const std::string& cpu_max);

  // What a job needs of the threads. EveryThread: job(t) runs once on
  // every thread t in [0, size()). Claimed: all of its work is claimed
  // through claim() / for_chunks, so any of the threads can finish it, and
  // the pool may run it on the caller alone (job(0)): it does so for a
  // stretch of runs after the caller has spent more time waiting at the
  // end of Claimed runs than in its own share of them, over 25 ms or more.
  enum class Split { EveryThread, Claimed };

  // Calls job(t) on the threads `split` asks for, the caller being t = 0,
  // and returns when all calls have returned. If calls throw, the
  // exception of the lowest t is rethrown here once all have finished.
  // Not reentrant: a job must not call run().
  void run(const std::function<void(int)>& job, Split split = Split::EveryThread);

  // Runs of Claimed jobs made on the caller alone so far (tests, diagnostics).
  int64_t solo_runs() const { return solo_runs_; }

  // Within a job: claims `n` items of the counter run() zeroes, returning
  // the first (items past the caller's total mean the work is done).
  int64_t claim(int64_t n) { return next_.fetch_add(n, std::memory_order_relaxed); }

  // Within a job: for `items` items in chunks of `chunk`, calls f(begin,
  // end) on each chunk this thread claims.
  template <class F>
  void for_chunks(int64_t items, int64_t chunk, F&& f) {
    for (int64_t b = claim(chunk); b < items; b = claim(chunk)) f(b, b + chunk < items ? b + chunk : items);
  }

 private:
  void worker(int t);
  void account(int64_t start, int64_t worked, int64_t end);

  int n_ = 1;
  std::vector<std::thread> threads_;
  const std::function<void(int)>* job_ = nullptr;
  std::vector<std::exception_ptr> errors_;  // [n_] per thread of the current run
  std::vector<clockid_t> clocks_;           // [n_] CPU-time clock of each worker ([0] unused)
  std::vector<int64_t> last_cpu_;           // [n_] the caller's last reading of each clock, ns
  std::unique_ptr<std::atomic<uint32_t>[]> done_;  // [n_] generation each worker last finished
  std::atomic<clockid_t> caller_clock_{clockid_t(-1)};  // CPU-time clock of run()'s caller
  alignas(64) std::atomic<uint32_t> generation_{0};  // bumped to start a run
  alignas(64) std::atomic<uint32_t> pending_{0};     // workers still in the run
  alignas(64) std::atomic<int64_t> next_{0};         // claim() counter
  std::atomic<bool> stop_{false};
  // The caller-alone fallback: Claimed runs left to make alone; the length
  // of the next stretch (doubling while the waits keep winning); windows
  // since they last did; runs made alone so far; and the current window's
  // start (monotonic ns, -1 before its first run) and the caller's time
  // working and waiting in it, ns.
  int64_t solo_left_ = 0, solo_len_ = 0, calm_windows_ = 0, solo_runs_ = 0;
  int64_t window_start_ = -1, window_work_ = 0, window_wait_ = 0;
};

}  // namespace tern
