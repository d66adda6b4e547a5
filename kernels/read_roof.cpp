// The plain read the memory-bound kernels are measured against (the roof):
// sum a buffer with the widest loads the CPU has. Integer adds on several
// accumulators keep the loop bound by loads, not by add latency, and it
// prefetches 1 KiB ahead; without the prefetch one core read 10-15% less
// on the machines of docs/PERFORMANCE.md. Shared by the kernel benchmark
// (bench/) and `tern bench`, so both compare against the same loop.
//
// The one place in tern_kernels with ISA code outside an ISA file: target
// attributes on single functions (not -m flags on the file) keep the rest
// runnable on any x86-64, and the path is chosen from cpu_features().
#include <cstring>

#include "tern/kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tern {
namespace {

constexpr size_t kAhead = 1024;

inline void prefetch_chunk(const uint8_t* p) {
  for (size_t l = 0; l < kReadChunk; l += 64) __builtin_prefetch(p + kAhead + l);
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) uint64_t sum_avx512(const uint8_t* p, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += kReadChunk) {
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
  for (size_t i = 0; i < n; i += kReadChunk) {
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
    if (i % kReadChunk == 0) prefetch_chunk(p + i);
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

}  // namespace

uint64_t read_sum(const uint8_t* p, size_t n, const char** isa) {
  const char* name = "";
  const SumFn sum = pick(&name);
  if (isa) *isa = name;
  return sum(p, n / kReadChunk * kReadChunk);
}

}  // namespace tern
