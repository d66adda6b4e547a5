// The plain read-bandwidth roof every kernel is compared against: sum a
// buffer larger than 4 x L3 with the widest loads available. Integer adds on
// several accumulators keep the loop bound by loads, not by add latency.
// The roof is the fastest plain read found on the machines of
// docs/PERFORMANCE.md, so that no kernel looks better than it is: the buffer
// is on transparent huge pages (as the repacked weight layouts are) and the
// loop prefetches 1 KiB ahead; either one alone left 10-15% of the
// bandwidth unused on one core.
// target attributes (not per-file -m flags) keep the rest of this file
// runnable on any x86-64; the path is chosen from tern::cpu_features().
#include <omp.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <cstdlib>
#include <cstring>
#include <memory>

#include "bench.h"
#include "tern/error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tern::bench {
namespace {

constexpr size_t kChunk = 256;  // bytes per unrolled step of every path
constexpr size_t kAhead = 1024;

inline void prefetch_chunk(const uint8_t* p) {
  for (size_t l = 0; l < kChunk; l += 64) __builtin_prefetch(p + kAhead + l);
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) uint64_t sum_avx512(const uint8_t* p, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += kChunk) {
    prefetch_chunk(p + i);
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
  }
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  uint64_t s = 0;
  for (uint64_t v : lanes) s += v;
  return s;
}

__attribute__((target("avx2"))) uint64_t sum_avx2(const uint8_t* p, size_t n) {
  __m256i a[8];
  for (auto& v : a) v = _mm256_setzero_si256();
  for (size_t i = 0; i < n; i += kChunk) {
    prefetch_chunk(p + i);
    for (int j = 0; j < 8; ++j)
      a[j] = _mm256_add_epi64(a[j], _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32 * j)));
  }
  __m256i s = a[0];
  for (int j = 1; j < 8; ++j) s = _mm256_add_epi64(s, a[j]);
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

// Left to the compiler's vectorizer (SSE2 at least on x86-64).
uint64_t sum_plain(const uint8_t* p, size_t n) {
  uint64_t acc[8] = {};
  for (size_t i = 0; i < n; i += 64) {
    if (i % kChunk == 0) prefetch_chunk(p + i);
    for (int j = 0; j < 8; ++j) {
      uint64_t v;
      std::memcpy(&v, p + i + 8 * j, 8);
      acc[j] += v;
    }
  }
  uint64_t s = 0;
  for (uint64_t v : acc) s += v;
  return s;
}

using SumFn = uint64_t (*)(const uint8_t*, size_t);

SumFn pick(const char** isa) {
  const CpuFeatures& f = cpu_features();
#if defined(__x86_64__)
  if (f.avx512f && f.os_avx512) {
    *isa = "avx512";
    return sum_avx512;
  }
  if (f.avx2 && f.os_avx) {
    *isa = "avx2";
    return sum_avx2;
  }
#endif
  (void)f;
  *isa = "plain";
  return sum_plain;
}

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
std::unique_ptr<uint8_t[], FreeDeleter> g_buf;
size_t g_bytes = 0;

}  // namespace

RoofBuffer roof_buffer() {
  if (!g_buf) {
    constexpr size_t kUnit = size_t(kRoofSlices) << 21;  // whole 2 MiB pages per slice
    const size_t bytes = (size_t(cold_bytes()) + kUnit - 1) / kUnit * kUnit;
    check_fits(int64_t(bytes), "read-roof buffer");
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(1u << 21, bytes));
    if (p == nullptr) throw Error("bench: cannot allocate " + std::to_string(bytes) + " bytes for the read roof");
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, bytes, MADV_HUGEPAGE);  // before the first touch, which allocates the pages
#endif
    g_buf.reset(p);
    g_bytes = bytes;
    // Distinct content per word: no zero-page or merged pages to read instead.
    uint64_t* w = reinterpret_cast<uint64_t*>(p);
    for (size_t i = 0; i < bytes / 8; ++i) w[i] = i * 0x9E3779B97F4A7C15ull;
  }
  return RoofBuffer{g_buf.get(), g_bytes};
}

void release_roof_buffer() {
  g_buf.reset();
  g_bytes = 0;
}

uint64_t read_range(const RoofBuffer& b, size_t offset, size_t bytes, int threads) {
  const char* isa = "";
  const SumFn sum = pick(&isa);
  const size_t chunks = bytes / kChunk;
  const uint8_t* base = b.data + offset / kChunk * kChunk;
  uint64_t total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    const size_t nt = size_t(omp_get_num_threads()), t = size_t(omp_get_thread_num());
    const size_t c0 = chunks * t / nt, c1 = chunks * (t + 1) / nt;
    if (c0 < c1) total += sum(base + c0 * kChunk, (c1 - c0) * kChunk);
  }
  return total;
}

uint64_t read_slice(const RoofBuffer& b, int slice, int threads, const char** isa) {
  pick(isa);
  return read_range(b, size_t(slice) * b.slice_bytes(), b.slice_bytes(), threads);
}

}  // namespace tern::bench
