// Prompt batches on the AVX2 sets (avx2_common.h): each group of rows (Mul's
// kRows, four or six) is decoded into byte codes t + 1 once per slice of columns, and every
// block of vectors runs over those bytes, so the tile's inner loop is loads
// and products alone. The per-block path decodes each block again for
// every four vectors: at n = 64 a block's shifts and masks are paid 16
// times. avx512_bytes.h does the same with 512-bit vectors.
//
// Internal linkage, and no std:: templates, for the reasons avx2_common.h
// gives.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "../code_layout.h"
#include "avx2_common.h"

namespace tern::kernels_detail {
namespace {

// Batches of this many vectors or more take this path; at 4 the per-block
// loop was as fast (git show d2934d8:docs/PERFORMANCE.md, "The AVX2 sets' prompts
// through bytes").
constexpr int64_t kByteMinVecs = 8;
// Columns per slice, in 256-column blocks: 6 rows x 3840 bytes = 22.5 KiB,
// which stays in L1 while every vector block streams its share of the
// slice past it (the avx512 path's reason and size).
constexpr int64_t kByteSliceBlocks = 15;

// The codes t + 1 of R <= G rows (row r at rows + r * rb) in blocks
// [b0, b1) as bytes: 32 columns 32 s .. 32 s + 31 of the slice for row r at
// out + 32 (G s + r), so one column step's rows are one run.
template <int G>
inline void decode_byte_rows(const uint8_t* rows, int64_t rb, int R, const Source& src, int64_t b0, int64_t b1,
                             uint8_t* out) {
  const int64_t bb = src.block_bytes;
  for (int r = 0; r < R; ++r)
    for (int64_t b = b0; b < b1; ++b) {
      __m256i c[8];
      if (src.tq1)
        decode_tq1(rows + r * rb + b * bb, c);
      else
        decode_tq2(rows + r * rb + b * bb, c);
      uint8_t* o = out + 32 * (G * 8 * (b - b0) + r);
      for (int i = 0; i < 8; ++i) _mm256_store_si256(reinterpret_cast<__m256i*>(o + 32 * G * i), c[i]);
    }
}

// Lane r of the result: the sum of a[r]'s eight lanes, r < 4.
inline __m128i row_sums4(__m256i a0, __m256i a1, __m256i a2, __m256i a3) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a0, a1), _mm256_hadd_epi32(a2, a3));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// Where a tile's sums go: acc [V][8] holds the earlier slices' sums (read
// unless first, written unless last); on the last slice vector v's R sums,
// less qsum[v], go to dst + v * M.
struct ByteOut {
  int32_t* acc;
  bool first, last;
  const int32_t* qsum;
  int32_t* dst;
  int64_t M;
};

// Lanes r < R of rows [4h, 4h + 4) of the tile's vector v, each less q,
// to dst (the rows' place in the output), or added to / stored in acc.
template <int R>
inline void finish_rows(__m128i e, int h, const ByteOut& out, int v) {
  int32_t* a = out.acc + 8 * v + 4 * h;
  if (!out.first) e = _mm_add_epi32(e, _mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
  if (!out.last) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(a), e);
  } else {
    e = _mm_sub_epi32(e, _mm_set1_epi32(out.qsum[v]));
    const __m128i mask = _mm_cmpgt_epi32(_mm_set1_epi32(R - 4 * h), _mm_setr_epi32(0, 1, 2, 3));
    _mm_maskstore_epi32(out.dst + v * out.M + 4 * h, mask, e);
  }
}

// The code sums of R <= G rows against V vectors over `steps` 32-column
// steps of decode_byte_rows<G>'s bytes (x[v] at the slice's start). Mul supplies
// acc += codes . activations per 32 bytes and how many vectors fit its
// registers. The unroll pragmas keep acc in registers: GCC replaces an
// array by scalars only where every index is a constant. Not inlined: in
// the caller, values live around the call took registers and put partial
// sums on the stack (avx2's tile at 0.65x).
template <class Mul, int R, int V>
__attribute__((noinline)) void byte_tile(const uint8_t* codes, const int8_t* const* x, int64_t steps, const ByteOut& out) {
  constexpr int G = Mul::kRows;
  __m256i acc[R][V];
  const typename Mul::Consts k{};
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_si256();
  // Spans of at most Mul::kSpan steps gather into part[][], which
  // Mul::fold adds to acc: int16 partial sums for vpmaddubsw, whose
  // widening would otherwise cost two more instructions per product.
  for (int64_t s0 = 0; s0 < steps; s0 += Mul::kSpan) {
    const int64_t s1 = steps - s0 < Mul::kSpan ? steps : s0 + Mul::kSpan;
    __m256i part[R][V];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) part[r][v] = _mm256_setzero_si256();
    for (int64_t s = s0; s < s1; ++s) {
      __m256i xv[V];
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) xv[v] = load32(x[v] + 32 * s);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256i c = _mm256_load_si256(reinterpret_cast<const __m256i*>(codes + 32 * (G * s + r)));
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) Mul::dot(part[r][v], c, xv[v], k);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) Mul::fold(acc[r][v], part[r][v], k);
  }
  const __m256i z = _mm256_setzero_si256();
  const auto row = [&](int r, int v) { return r < R ? acc[r < R ? r : 0][v] : z; };
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    finish_rows<R>(row_sums4(row(0, v), row(1, v), row(2, v), row(3, v)), 0, out, v);
    if constexpr (R > 4) finish_rows<R>(row_sums4(row(4, v), row(5, v), row(6, v), row(7, v)), 1, out, v);
  }
}

// byte_tile for rows <= Mul::kRows rows and V <= Mul::kMaxVecs vectors.
template <class Mul, int R = 1>
void byte_tile_any(int rows, int V, const uint8_t* codes, const int8_t* const* x, int64_t steps,
                   const ByteOut& out) {
  static_assert(Mul::kMaxVecs >= 1 && Mul::kMaxVecs <= 3);
  if constexpr (R < Mul::kRows)
    if (rows > R) return byte_tile_any<Mul, R + 1>(rows, V, codes, x, steps, out);
  if (V == 1) return byte_tile<Mul, R, 1>(codes, x, steps, out);
  if constexpr (Mul::kMaxVecs >= 2)
    if (V == 2) return byte_tile<Mul, R, 2>(codes, x, steps, out);
  if constexpr (Mul::kMaxVecs >= 3) return byte_tile<Mul, R, 3>(codes, x, steps, out);
}

// sums[i * M + r] = code sum of row r against vector i minus qsum[i], for
// rows [r0, r1) and n vectors (q[i] at q + i K), through the bytes.
template <class Mul>
void byte_rows_avx2(const TernaryMatrix& w, const Source& src, const int8_t* q, int64_t n, const int32_t* qsum,
                    int32_t* sums, int64_t r0, int64_t r1) {
  const int64_t K = w.cols, M = w.rows, nb = K / QK, rb = nb * src.block_bytes;
  // Slices of equal length, so that none is a short remainder paying a
  // tile's reductions for little work.
  const int64_t slices = (nb + kByteSliceBlocks - 1) / kByteSliceBlocks, step = (nb + slices - 1) / slices;
  constexpr int G = Mul::kRows;
  static_assert(G >= 1 && G <= 8);  // byte_tile reduces rows four at a time, twice at most
  uint8_t* bytes = thread_scratch(0, size_t(kByteSliceBlocks * QK * G + 8 * 4 * n));
  int32_t* acc = reinterpret_cast<int32_t*>(bytes + kByteSliceBlocks * QK * G);
  for (int64_t r = r0; r < r1; r += G) {
    const int R = r1 - r < G ? int(r1 - r) : G;
    const uint8_t* rows = src.base + r * rb;
    // The next group's rows, one contiguous run, while this one's tiles
    // run: its decode would otherwise wait on DRAM once per group.
    if (r + G < r1) {
      const uint8_t* ahead = rows + G * rb;
      const int64_t len = (r1 - r - G < G ? r1 - r - G : G) * rb;
      for (int64_t o = 0; o < len; o += 64) asm volatile("prefetcht1 %0" : : "m"(ahead[o]));
    }
    for (int64_t b0 = 0; b0 < nb; b0 += step) {
      const int64_t b1 = b0 + step < nb ? b0 + step : nb;
      decode_byte_rows<G>(rows, rb, R, src, b0, b1, bytes);
      for (int64_t i = 0; i < n; i += Mul::kMaxVecs) {
        const int V = n - i < Mul::kMaxVecs ? int(n - i) : Mul::kMaxVecs;
        const int8_t* xs[3];
        for (int v = 0; v < V; ++v) xs[v] = q + (i + v) * K + QK * b0;
        const ByteOut to{acc + 8 * i, b0 == 0, b1 == nb, qsum + i, sums + i * M + r, M};
        byte_tile_any<Mul>(R, V, bytes, xs, 8 * (b1 - b0), to);
      }
    }
  }
}

// The int8 product of the AVX2 sets: short batches through Dot's per-block
// loop (gemm_i8_driver), prompts through the bytes and Mul's tile.
template <class Dot, class Mul>
void gemm_i8_avx2(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0, int64_t r1) {
  if (n < kByteMinVecs) return gemm_i8_driver<Dot>(w, q, n, sums, r0, r1);
  check_call(w, ActMode::Int8, n, r0, r1);
  const int64_t K = w.cols;
  auto* qsum = reinterpret_cast<int32_t*>(thread_scratch(2, size_t(4 * n)));
  for (int64_t i = 0; i < n; ++i) qsum[i] = sum_q(q + i * K, K);
  byte_rows_avx2<Mul>(w, source_of(w), q, n, qsum, sums, r0, r1);
}

}  // namespace
}  // namespace tern::kernels_detail
