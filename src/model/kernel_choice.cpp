#include "kernel_choice.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "clock.h"

namespace tern {

namespace {

#if defined(__x86_64__) || defined(__i386__)
void flush_line(const void* p) { _mm_clflush(p); }
void fence_flushes() { _mm_mfence(); }
#elif defined(__aarch64__)
void flush_line(const void* p) { __asm__ __volatile__("dc civac, %0" : : "r"(p) : "memory"); }
void fence_flushes() { __asm__ __volatile__("dsb ish" : : : "memory"); }
#else
void flush_line(const void*) {}  // no user-space flush: the timing runs warm
void fence_flushes() {}
#endif

// Flushing a matrix's lines from every cache level makes the call after it
// stream its weights from memory, as a decode step does, while its input
// stays cached, as in a decode step. Timed warm, a kernel that wins in
// cache can lose by 2x in a real token: avx2-tl1 did on
// bitnet_b1_58-large's shapes (docs/PERFORMANCE.md). (The first version
// read a buffer of twice the last-level cache instead: 64-256 MiB
// allocated per load, and a VM may report the host's whole L3.)
// CLFLUSH and DC CIVAC need only read access, so the mapped file's
// read-only pages flush too.
void flush_lines(const void* p, int64_t bytes) {
  if (!p || bytes <= 0) return;
  const auto* b = static_cast<const char*>(p);
  for (int64_t i = 0; i < bytes; i += 64) flush_line(b + i);
  flush_line(b + bytes - 1);  // the last line when p is not 64-aligned
  fence_flushes();
}

void flush_matrix(const TernaryMatrix& w, int64_t prepared_bytes) {
  if (w.packed) flush_lines(w.packed, prepared_bytes);
  if (w.data) flush_lines(w.data, w.rows * ternary_row_bytes(w.type, w.cols));
  flush_lines(w.row_scale, w.rows * int64_t(sizeof(float)));
}

}  // namespace

std::vector<KernelChoice> time_kernels(std::span<const TernaryMatrix> shapes, int n,
                                       std::span<const KernelSet* const> candidates, int calls) {
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
      int64_t prepared_bytes = 0;
      if (k->prepare) {
        layout = k->prepare(w);
        m.packed = layout.get();
        prepared_bytes = m.packed ? k->prepared_bytes(w) : 0;
      }
      auto call = [&] { k->gemm_i8(m, q.data(), n, sums.data(), 0, m.rows); };
      call();  // first touch: page faults of a fresh layout are not the kernel's
      double best = 1e30;
      for (int i = 0; i < calls; ++i) {
        flush_matrix(m, prepared_bytes);
        const auto t0 = std::chrono::steady_clock::now();
        call();
        best = std::min(best, seconds_since(t0));
      }
      c.seconds.emplace_back(k, best);
      if (!c.chosen || best < chosen_time * (1 - kDisplaceMargin)) {
        c.chosen = k;
        chosen_time = best;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace tern
