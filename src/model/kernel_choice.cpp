#include "kernel_choice.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "clock.h"

namespace tern {

namespace {

// Reading twice the last-level cache evicts a matrix, so the call after it
// streams its weights from memory as a decode step does. At least 64 MiB;
// at most 256 MiB, since a VM may report the host's whole L3 (this Zen 3
// guest: 256 MiB, of which a core reaches 32).
// Timed warm, a kernel that wins in cache can lose by 2x in a real token:
// avx2-tl1 did on bitnet_b1_58-large's shapes (docs/PERFORMANCE.md).
class Evictor {
 public:
  Evictor() {
    const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    const size_t bytes = std::clamp<size_t>(llc > 0 ? 2 * size_t(llc) : 0, size_t(64) << 20, size_t(256) << 20);
    buf_.assign(bytes / sizeof(uint64_t), 1);
  }
  void run() {
    uint64_t sum = 0;
    for (size_t i = 0; i < buf_.size(); i += 8) sum += buf_[i];  // one word per 64-byte line
    sink_ = sum;
  }

 private:
  std::vector<uint64_t> buf_;
  volatile uint64_t sink_ = 0;
};

}  // namespace

std::vector<KernelChoice> time_kernels(std::span<const TernaryMatrix> shapes, int n,
                                       std::span<const KernelSet* const> candidates, int calls) {
  Evictor evict;
  std::vector<KernelChoice> out;
  for (const TernaryMatrix& w : shapes) {
    KernelChoice c{w.type, w.rows, w.cols, {}, nullptr};
    // The input's values do not change an int8 kernel's speed; the fixed
    // seed only keeps two loads alike.
    std::vector<int8_t> q(static_cast<size_t>(n * w.cols));
    std::mt19937 rng(1);
    for (int8_t& v : q) v = int8_t(int(rng() % 255) - 127);
    std::vector<int32_t> sums(static_cast<size_t>(n * w.rows));
    double chosen_time = 0;
    for (const KernelSet* k : candidates) {
      TernaryMatrix m = w;
      std::shared_ptr<const void> layout;
      if (k->prepare) {
        layout = k->prepare(w);
        m.packed = layout.get();
      }
      auto call = [&] { k->gemm_i8(m, q.data(), n, sums.data(), 0, m.rows); };
      call();  // first touch: page faults of a fresh layout are not the kernel's
      double best = 1e30;
      for (int i = 0; i < calls; ++i) {
        evict.run();
        const auto t0 = std::chrono::steady_clock::now();
        call();
        best = std::min(best, seconds_since(t0));
      }
      c.seconds.emplace_back(k, best);
      if (!c.chosen || best < chosen_time) {
        c.chosen = k;
        chosen_time = best;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace tern
