#include "kernel_choice.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "tern/clock.h"

namespace tern {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// CLFLUSHOPT flushes lines out of order, CLFLUSH one after another: with
// CLFLUSH the flushes were about half of --kernel auto's load of a 2B model
// on a Xeon guest (perf).
__attribute__((target("clflushopt"))) void flush_lines_opt(const char* b, int64_t bytes) {
  for (int64_t i = 0; i < bytes; i += 64) _mm_clflushopt(const_cast<char*>(b + i));
  _mm_clflushopt(const_cast<char*>(b + bytes - 1));
}
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
// bitnet_b1_58-large's shapes (git show d2934d8:docs/PERFORMANCE.md, "Kernel chosen per
// shape by measurement"). (The first version
// read a buffer of twice the last-level cache instead: 64-256 MiB
// allocated per load, and a VM may report the host's whole L3.)
// CLFLUSH, CLFLUSHOPT and DC CIVAC need only read access, so the mapped
// file's read-only pages flush too.
void flush_lines(const void* p, int64_t bytes) {
  if (!p || bytes <= 0) return;
  const auto* b = static_cast<const char*>(p);
#if defined(__x86_64__) || defined(__i386__)
  if (cpu_features().clflushopt) {
    flush_lines_opt(b, bytes);
    fence_flushes();
    return;
  }
#endif
  for (int64_t i = 0; i < bytes; i += 64) flush_line(b + i);
  flush_line(b + bytes - 1);  // the last line when p is not 64-aligned
  fence_flushes();
}

// A prepared kernel reads only its layout (load_linear lets the file's bytes
// go), so only the lines it reads are flushed: flushing both took half of
// --kernel auto's load.
void flush_matrix(const TernaryMatrix& w, int64_t prepared_bytes) {
  if (w.packed) flush_lines(w.packed, prepared_bytes);
  else if (w.data) flush_lines(w.data, w.rows * ternary_row_bytes(w.type, w.cols));
  flush_lines(w.row_scale, w.rows * int64_t(sizeof(float)));
}

// A candidate's matrix in its own layout, and its best time so far.
struct Candidate {
  const KernelSet* k;
  TernaryMatrix m;
  std::shared_ptr<const void> layout;
  int64_t prepared_bytes = 0;
  double best = 1e30;
};

// Round robin, so a machine whose bandwidth drifts during the timing (a
// shared guest moves 10-20% within a second) slows every candidate alike:
// timed one candidate after another, sets that share a decode loop
// (avx512-amx, avx512-vnni) came out up to 7% apart on a Xeon guest, and
// avx2 or avx2-vnni, 10-30% slower per byte in real tokens, displaced them
// on some loads. At least `calls` rounds, and more until each candidate
// has run for min_timed seconds: a 35 us call of a small matrix varied by
// 25% between rounds there, so its best of three was a coin toss.
void time_round_robin(std::span<Candidate* const> cs, const int8_t* q, int64_t n, int32_t* sums,
                      int calls, double min_timed) {
  constexpr int kMaxRounds = 64;
  std::vector<double> timed(cs.size(), 0.0);
  for (int i = 0; i < kMaxRounds; ++i) {
    if (i >= calls && *std::min_element(timed.begin(), timed.end()) >= min_timed) break;
    for (size_t j = 0; j < cs.size(); ++j) {
      Candidate* x = cs[j];
      flush_matrix(x->m, x->prepared_bytes);
      const auto t0 = std::chrono::steady_clock::now();
      x->k->gemm_i8(x->m, q, n, sums, 0, x->m.rows);
      const double t = seconds_since(t0);
      x->best = std::min(x->best, t);
      timed[j] += t;
    }
  }
}

// The first of cs, unless a later one is more than kDisplaceMargin faster.
Candidate* pick(std::span<Candidate* const> cs) {
  Candidate* chosen = nullptr;
  for (Candidate* x : cs)
    if (!chosen || x->best < chosen->best * (1 - kDisplaceMargin)) chosen = x;
  return chosen;
}

}  // namespace

std::vector<KernelChoice> time_kernels(std::span<const TernaryMatrix> shapes, int n,
                                       std::span<const KernelSet* const> candidates, int calls) {
  std::vector<KernelChoice> out;
  for (const TernaryMatrix& w : shapes) {
    KernelChoice c{w.type, w.rows, w.cols, {}, {}, nullptr};
    // The input's values do not change an int8 kernel's speed; the fixed
    // seed only keeps two loads alike.
    const int64_t prompt_n = int64_t(kChoicePromptTokens) * n;
    std::vector<int8_t> q(static_cast<size_t>(prompt_n * w.cols));
    std::mt19937 rng(1);
    for (int8_t& v : q) v = int8_t(int(rng() % 255) - 127);
    std::vector<int32_t> sums(static_cast<size_t>(prompt_n * w.rows));
    std::vector<Candidate> all;
    for (const KernelSet* k : candidates) {
      Candidate& x = all.emplace_back(Candidate{k, w, nullptr});
      if (k->prepare) {
        x.layout = k->prepare(w);
        x.m.packed = x.layout.get();
        x.prepared_bytes = x.m.packed ? k->prepared_bytes(w) : 0;
      }
      // First touch: page faults of a fresh layout are not the kernel's.
      k->gemm_i8(x.m, q.data(), n, sums.data(), 0, w.rows);
    }
    std::vector<Candidate*> cs;
    for (Candidate& x : all) cs.push_back(&x);
    time_round_robin(cs, q.data(), n, sums.data(), calls, 1e-3);
    double fastest = 1e30;
    for (const Candidate* x : cs) fastest = std::min(fastest, x->best);
    // Close calls get a longer look. Sets 5-10% apart in real tokens
    // (avx2-vnni against avx512-amx on a Xeon) timed within 5% of each
    // other in a third of the loads after a millisecond each.
    std::vector<Candidate*> close;
    for (Candidate* x : cs)
      if (x->best <= fastest * 1.15) close.push_back(x);
    if (close.size() > 1) time_round_robin(close, q.data(), n, sums.data(), 0, 4e-3);
    fastest = 1e30;
    for (const Candidate* x : cs) {
      c.seconds.emplace_back(x->k, x->best);
      fastest = std::min(fastest, x->best);
    }
    // Decode times closer than the margin are the machine's noise, not the
    // sets' difference; a prompt batch tells those sets apart.
    std::vector<Candidate*> tied;
    for (Candidate* x : cs)
      if (x->best * (1 - kDisplaceMargin) <= fastest) tied.push_back(x);
    if (tied.size() > 1) {
      for (Candidate* x : tied) x->best = 1e30;
      time_round_robin(tied, q.data(), prompt_n, sums.data(), 2, 0);
      for (const Candidate* x : tied) c.prompt_seconds.emplace_back(x->k, x->best);
    }
    c.chosen = pick(tied)->k;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace tern
