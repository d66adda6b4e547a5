// The forward pass's thread team: every thread runs each job once, chunks
// cover every item exactly once, errors come back to the caller, and the
// model's output does not depend on the number of threads; contexts on one
// model run from several threads at once. CI also runs this file under
// ThreadSanitizer (.ci/run, TERN_TSAN).
#include <gtest/gtest.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tern/context.h"
#include "tern/model.h"
#include "tern/thread_pool.h"

namespace {

TEST(ThreadPool, EveryThreadRunsEachJobOnce) {
  for (int n : {1, 2, 3, 5}) {
    tern::ThreadPool pool(n);
    ASSERT_EQ(pool.size(), n);
    std::vector<int> calls(size_t(n), 0);
    for (int run = 0; run < 200; ++run) pool.run([&](int t) { ++calls[size_t(t)]; });
    for (int c : calls) EXPECT_EQ(c, 200);
  }
}

TEST(ThreadPool, DefaultIsTheAvailableCpus) {
  tern::ThreadPool pool;
  EXPECT_EQ(pool.size(), tern::ThreadPool::available_cpus());
  EXPECT_GE(pool.size(), 1);
}

// A container given 1.5 CPUs gets 2 threads, not one per host core; "max"
// is no limit. The affinity mask is the other bound (taskset below).
TEST(ThreadPool, CgroupQuotaBoundsTheDefault) {
  EXPECT_EQ(tern::ThreadPool::quota_cpus("max 100000\n"), 0);
  EXPECT_EQ(tern::ThreadPool::quota_cpus("150000 100000\n"), 2);
  EXPECT_EQ(tern::ThreadPool::quota_cpus("100000 100000"), 1);
  EXPECT_EQ(tern::ThreadPool::quota_cpus("5000 100000"), 1);
  EXPECT_EQ(tern::ThreadPool::quota_cpus("garbage"), 0);
}

TEST(ThreadPool, AffinityMaskBoundsTheDefault) {
  cpu_set_t old;
  ASSERT_EQ(sched_getaffinity(0, sizeof old, &old), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &old)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int n = tern::ThreadPool::available_cpus();
  sched_setaffinity(0, sizeof old, &old);
  EXPECT_EQ(n, 1);
}

TEST(ThreadPool, ChunksCoverEveryItemOnce) {
  tern::ThreadPool pool(3);
  for (int64_t items : {0, 1, 7, 16, 1000, 4099})
    for (int64_t chunk : {1, 16, 5000}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(items));
      pool.run([&](int) {
        pool.for_chunks(items, chunk, [&](int64_t b, int64_t e) {
          EXPECT_LT(b, e);
          EXPECT_LE(e, items);
          for (int64_t i = b; i < e; ++i) seen[size_t(i)].fetch_add(1, std::memory_order_relaxed);
        });
      });
      for (int64_t i = 0; i < items; ++i) ASSERT_EQ(seen[size_t(i)].load(), 1) << items << " " << chunk << " " << i;
    }
}

// Results written by workers are visible to the caller after run() returns,
// and the next run sees the caller's writes (no stale job state).
TEST(ThreadPool, RunsAreOrdered) {
  tern::ThreadPool pool(4);
  std::vector<int64_t> data(4096, 0);
  for (int round = 1; round <= 50; ++round) {
    pool.run([&](int) {
      pool.for_chunks(int64_t(data.size()), 64, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) data[size_t(i)] += i;
      });
    });
    for (size_t i = 0; i < data.size(); i += 511) ASSERT_EQ(data[i], int64_t(i) * round);
    data[0] = 0;
  }
}

TEST(ThreadPool, ErrorOfTheLowestThreadIsRethrownAndThePoolStaysUsable) {
  tern::ThreadPool pool(3);
  try {
    pool.run([](int t) {
      if (t >= 1) throw std::runtime_error("thread " + std::to_string(t));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "thread 1");
  }
  EXPECT_THROW(pool.run([](int t) {
    if (t == 0) throw std::logic_error("caller");
  }),
               std::logic_error);
  std::atomic<int> ran{0};
  pool.run([&](int) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 3);
}

// Sleeping workers (past the spin) wake for the next run.
TEST(ThreadPool, WakesAfterIdle) {
  tern::ThreadPool pool(2);
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.run([&](int) { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 6);
}

// A waiter spins on only while the thread it waits for is on a CPU: here the
// worker sleeps in the kernel, and the caller gives its core up at once
// instead of spinning through the wait (which would keep a preempted
// worker off that core when another process shares the machine).
TEST(ThreadPool, WaiterSleepsWhileTheWorkerIsOffTheCpu) {
  tern::ThreadPool pool(2);
  pool.run([](int) {});  // threads started and past their first wait
  timespec a{}, b{};
  ASSERT_EQ(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a), 0);
  pool.run([](int t) {
    if (t == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  ASSERT_EQ(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b), 0);
  const double cpu_ms = double(b.tv_sec - a.tv_sec) * 1e3 + double(b.tv_nsec - a.tv_nsec) / 1e6;
  EXPECT_LT(cpu_ms, 20.0) << "the caller spun through the worker's sleep";
}

// A worker that keeps the caller waiting (here it sleeps before it claims
// anything, as a worker preempted by another process would) makes the
// caller wait longer than it works; Claimed jobs then go to the caller
// alone, still covering every item once, while jobs that need every
// thread still reach them all. The worker sleeps before claiming, not
// inside an item: how soon a woken worker gets a CPU differs between
// machines (under ctest -j2 on one CI machine it never claimed an item
// before the caller had done them all), and the wait must not depend on it.
// EveryThread runs in between do not count: their long waits would
// otherwise switch the pool over on their own.
TEST(ThreadPool, ClaimedJobsGoToTheCallerWhenWaitsOutgrowItsWork) {
  tern::ThreadPool pool(2);
  constexpr int64_t kItems = 16;
  std::vector<std::atomic<int>> hits(kItems);
  for (int i = 0; i < 20; ++i)
    pool.run([](int t) {
      if (t == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    });
  std::atomic<int> called{0};
  pool.run([&](int) { called.fetch_add(1); }, tern::ThreadPool::Split::Claimed);
  EXPECT_EQ(called.load(), 2) << "EveryThread waits switched the pool to the caller alone";
  bool covered = true;
  int runs = 0;
  const auto start = std::chrono::steady_clock::now();
  for (; pool.solo_runs() == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(10); ++runs) {
    for (auto& h : hits) h.store(0);
    pool.run([&](int t) {
      if (t == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      pool.for_chunks(kItems, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
        while (std::chrono::steady_clock::now() < until) {
        }
      });
    }, tern::ThreadPool::Split::Claimed);
    for (auto& h : hits) covered &= h.load() == 1;
  }
  EXPECT_GT(pool.solo_runs(), 0) << "still sharing after " << runs << " runs";
  EXPECT_TRUE(covered);
  // The stretch alone has just begun.
  std::atomic<int> ran{0};
  pool.run([&](int) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 2);
  for (auto& h : hits) h.store(0);
  const int64_t before = pool.solo_runs();
  pool.run([&](int t) {
    EXPECT_EQ(t, 0);
    pool.for_chunks(kItems, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
    });
  }, tern::ThreadPool::Split::Claimed);
  EXPECT_EQ(pool.solo_runs(), before + 1);
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

// The bundled model: logits of a prompt and a decode step are the same bit
// for bit with 1, 2 and 3 threads (rows are claimed in different chunks by
// different threads, but every row's sum is computed the same way). Batches
// of 4 keep a token's norms and RoPE on the caller; batches of 24 spread
// them over the pool (kTokensForRegion in src/model/forward.cpp is 16).
void test_output_does_not_depend_on_threads(int batch) {
  const std::string path = std::string(TERN_SOURCE_DIR) + "/models/kjv-bitnet-6m-tq2_0.gguf";
  std::vector<int32_t> prompt{1, 45, 318, 31, 278, 115, 292, 322};
  for (int i = 0; i < 32; ++i) prompt.push_back(int32_t(3 + (i * 131) % 4000));  // 40 tokens
  std::vector<float> want;
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE("batch " + std::to_string(batch) + ", " + std::to_string(threads) + " threads");
    auto m = tern::Model::load(path);
    // The prompt goes through gemm in several batches.
    tern::Context ctx(*m, {.ctx = 64, .max_batch = batch, .threads = threads});
    EXPECT_EQ(ctx.threads(), threads);
    auto a = ctx.forward(prompt, 0, true);
    std::vector<float> got(a.begin(), a.end());
    const int32_t next = 100;
    auto b = ctx.forward(std::span<const int32_t>(&next, 1), int(prompt.size()), false);
    got.insert(got.end(), b.begin(), b.end());
    if (want.empty()) want = got;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << threads << " threads, logit " << i;
  }
}

TEST(ThreadPool, ModelOutputDoesNotDependOnThreads) {
  for (const int batch : {4, 24}) test_output_does_not_depend_on_threads(batch);
}

TEST(ThreadPool, ContextsOfOneModelHaveTheirOwnTeams) {
  const std::string path = std::string(TERN_SOURCE_DIR) + "/models/kjv-bitnet-6m-tq2_0.gguf";
  auto m = tern::Model::load(path);
  tern::Context one(*m, {.threads = 1}), three(*m, {.threads = 3});
  EXPECT_EQ(one.threads(), 1);
  EXPECT_EQ(three.threads(), 3);
  const std::vector<int32_t> prompt{1, 45, 318};
  auto a = one.forward(prompt, 0, false);
  const std::vector<float> want(a.begin(), a.end());
  auto b = three.forward(prompt, 0, false);
  EXPECT_EQ(std::vector<float>(b.begin(), b.end()), want);
}

// One model, four contexts, each on a thread of its own with a team of its
// own, all at once: each gets the logits its run gets alone. The model's
// first head product (the head's check) and the head's move off the file's
// mapping happen during these runs, from whichever context gets there first.
TEST(Contexts, SeveralThreadsRunOneModelAtOnce) {
  const std::string path = std::string(TERN_SOURCE_DIR) + "/models/kjv-bitnet-6m-tq2_0.gguf";
  constexpr int kThreads = 4, kSteps = 12;
  const auto run = [](const tern::Model& m, int which, int team) {
    tern::Context ctx(m, {.ctx = 64, .threads = team});
    std::vector<int32_t> ids{1, int32_t(45 + which), 318, int32_t(31 * which + 2)};
    std::vector<float> all;
    auto l = ctx.forward(ids, 0, false);
    for (int i = 0; i < kSteps; ++i) {
      all.insert(all.end(), l.begin(), l.end());
      const int32_t next = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
      l = ctx.forward({&next, 1}, int(ids.size()) + i, false);
    }
    return all;
  };
  std::vector<std::vector<float>> want;
  {
    const auto alone = tern::Model::load(path);
    for (int t = 0; t < kThreads; ++t) want.push_back(run(*alone, t, 1));
  }
  const auto shared = tern::Model::load(path);
  std::vector<std::vector<float>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { got[size_t(t)] = run(*shared, t, 1 + t % 2); });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[size_t(t)], want[size_t(t)]) << "context " << t;
  EXPECT_NE(shared->head().data, shared->weights().output.data);  // moved once, by one of them
}

}  // namespace
