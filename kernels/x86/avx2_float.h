// The AVX2 + FMA float-activation path shared by the avx2 and avx2-vnni
// sets (for CPUs without AVX-512). Each 256-weight block is decoded once to
// 256 floats t in {-1, 0, +1} (vpermps looks the code up in {-1, 0, 1, 2}),
// then every activation vector of the batch meets it with FMAs.
//
// Accuracy: t * x is exact, so only additions round. Per vector and block,
// eight 8-lane accumulators take four terms each, are added pairwise into a
// block sum, and block sums go into a running total (one chain of K / 256
// adds per lane) that is reduced horizontally and scaled at the end: about
// 12 + K / 256 roundings on sums bounded by sum |x|, i.e. ~2.3e-6 relative
// at K = 6912, inside the 1e-5 contract. The per-vector order does not
// depend on how many vectors share a call: one vector alone gets the bits
// it gets in a batch.
//
// Anonymous namespace for the reasons given in avx2_common.h.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "avx2_common.h"

namespace tern::kernels_detail {
namespace {

inline __m256 code_table() { return _mm256_setr_ps(-1.0f, 0.0f, 1.0f, 2.0f, -1.0f, 0.0f, 1.0f, 2.0f); }

// TQ2_0 straight from the bytes: 8 bytes zero-extended to 32-bit lanes hold
// the codes of elements 32n + m.. for all four n; vpermps reads the low
// three bits of a lane, and bit 2 (the next code's low bit) only selects the
// upper copy of the table.
inline void tq2_floats(const uint8_t* qs, float* t) {
  const __m256 tbl = code_table();
  for (int h = 0; h < 2; ++h)
    for (int m = 0; m < 32; m += 8) {
      const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 32 * h + m)));
      float* o = t + 128 * h + m;
      _mm256_store_ps(o, _mm256_permutevar8x32_ps(tbl, b));
      _mm256_store_ps(o + 32, _mm256_permutevar8x32_ps(tbl, _mm256_srli_epi32(b, 2)));
      _mm256_store_ps(o + 64, _mm256_permutevar8x32_ps(tbl, _mm256_srli_epi32(b, 4)));
      _mm256_store_ps(o + 96, _mm256_permutevar8x32_ps(tbl, _mm256_srli_epi32(b, 6)));
    }
}

// TQ1_0 through the byte codes of decode_tq1.
inline void tq1_floats(const uint8_t* blk, float* t) {
  const __m256 tbl = code_table();
  __m256i c[8];
  decode_tq1(blk, c);
  for (int i = 0; i < 8; ++i) {
    const __m128i lo = _mm256_castsi256_si128(c[i]), hi = _mm256_extracti128_si256(c[i], 1);
    float* o = t + 32 * i;
    _mm256_store_ps(o, _mm256_permutevar8x32_ps(tbl, _mm256_cvtepu8_epi32(lo)));
    _mm256_store_ps(o + 8, _mm256_permutevar8x32_ps(tbl, _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8))));
    _mm256_store_ps(o + 16, _mm256_permutevar8x32_ps(tbl, _mm256_cvtepu8_epi32(hi)));
    _mm256_store_ps(o + 24, _mm256_permutevar8x32_ps(tbl, _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8))));
  }
}

inline __m256 block_dot(const float* t, const float* x) {
  __m256 a[8];
  for (int j = 0; j < 8; ++j) a[j] = _mm256_mul_ps(_mm256_load_ps(t + 8 * j), _mm256_loadu_ps(x + 8 * j));
  for (int i = 1; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      a[j] = _mm256_fmadd_ps(_mm256_load_ps(t + 64 * i + 8 * j), _mm256_loadu_ps(x + 64 * i + 8 * j), a[j]);
  return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])),
                       _mm256_add_ps(_mm256_add_ps(a[4], a[5]), _mm256_add_ps(a[6], a[7])));
}

// block_dot(tq2_floats(qs), x) without the round trip through memory, for
// a vector that has its block to itself. Bit-identical: accumulator j takes
// elements 64i + 8j.. for i = 0..3 in that order, the first by a multiply.
inline __m256 block_dot_tq2(const uint8_t* qs, const float* x) {
  const __m256 tbl = code_table();
  __m256 a[8];
  for (int h = 0; h < 2; ++h)
    for (int m = 0; m < 4; ++m) {
      const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 32 * h + 8 * m)));
      for (int n = 0; n < 4; ++n) {
        const __m256 t = _mm256_permutevar8x32_ps(tbl, _mm256_srli_epi32(b, 2 * n));
        const int i = 2 * h + n / 2, j = 4 * (n % 2) + m;  // element 128h + 32n + 8m = 64i + 8j
        const __m256 xv = _mm256_loadu_ps(x + 64 * i + 8 * j);
        a[j] = i == 0 ? _mm256_mul_ps(t, xv) : _mm256_fmadd_ps(t, xv, a[j]);
      }
    }
  return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])),
                       _mm256_add_ps(_mm256_add_ps(a[4], a[5]), _mm256_add_ps(a[6], a[7])));
}

inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <bool kTq1>
void rows_f32(const TernaryMatrix& w, const Source& src, const float* x, int64_t nv, float* y, int64_t r0,
              int64_t r1) {
  const int64_t K = w.cols, M = w.rows, nb = K / QK, bb = src.block_bytes, rb = nb * bb;
  alignas(32) float t[QK];
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = src.base + r * rb;
    __m256 total[4];
    for (auto& s : total) s = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      if constexpr (!kTq1) {
        if (nv == 1) {
          total[0] = _mm256_add_ps(total[0], block_dot_tq2(row + b * bb, x + b * QK));
          continue;
        }
      }
      if constexpr (kTq1)
        tq1_floats(row + b * bb, t);
      else
        tq2_floats(row + b * bb, t);
      for (int64_t v = 0; v < nv; ++v) total[v] = _mm256_add_ps(total[v], block_dot(t, x + v * K + b * QK));
    }
    for (int64_t v = 0; v < nv; ++v) y[v * M + r] = w.row_scale[r] * hsum_ps(total[v]);
  }
}

void gemm_f32_avx2(const TernaryMatrix& w, const float* x, int64_t n, float* y, int64_t r0, int64_t r1) {
  check_call(w, ActMode::Float, n, r0, r1);
  const Source src = source_of(w);
  const int64_t K = w.cols, M = w.rows;
  for (int64_t i0 = 0; i0 < n; i0 += 4) {
    const int64_t nv = n - i0 < 4 ? n - i0 : 4;
    if (src.tq1)
      rows_f32<true>(w, src, x + i0 * K, nv, y + i0 * M, r0, r1);
    else
      rows_f32<false>(w, src, x + i0 * K, nv, y + i0 * M, r0, r1);
  }
}

}  // namespace
}  // namespace tern::kernels_detail
