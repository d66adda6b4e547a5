// The dense (output head) GEMM for every x86 set: F32, F16 (F16C), BF16
// (a 16-bit shift) and Q8_0 (int8 times its fp16 scale) widened to f32 in
// registers and multiplied with FMA, in
// the summation order kernels.h fixes, so results equal the scalar set's bit
// for bit. A row's 16 lanes are two ymm accumulators; four rows go side by
// side so eight independent FMA chains hide the FMA latency, and each row
// streams once from memory per call (a batch re-reads it from L1).
//
// Internal linkage for the reason avx2_common.h gives: each includer has its
// own -m flags (which must include -mfma -mf16c).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "../dense_driver.h"
#include "tern/quant.h"

namespace tern::kernels_detail {
namespace {

using gguf::TensorType;

// Lanes [k, k + 16) of a row as two vectors of 8 f32. A Q8_0 row's 16
// values lie in one block (k is a multiple of 16): fp16(d) * q is exact.
template <TensorType T>
inline void dense_load16(const uint8_t* row, int64_t k, __m256& lo, __m256& hi) {
  if constexpr (T == TensorType::F32) {
    const float* p = reinterpret_cast<const float*>(row) + k;
    lo = _mm256_loadu_ps(p);
    hi = _mm256_loadu_ps(p + 8);
  } else if constexpr (T == TensorType::Q8_0) {
    const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row) + k / QK8_0;
    uint16_t dh;
    std::memcpy(&dh, &b->d, 2);  // blocks are 34 bytes: unaligned
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(dh));
    const int8_t* q = b->qs + k % QK8_0;
    const __m128i q16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    lo = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q16)), d);
    hi = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q16, 8))), d);
  } else {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + k;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8));
    if constexpr (T == TensorType::F16) {
      lo = _mm256_cvtph_ps(a);
      hi = _mm256_cvtph_ps(b);
    } else {
      lo = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(a), 16));
      hi = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
    }
  }
}

// Lanes j + 8, then j + 4, j + 2, j + 1, as the scalar set adds them.
inline float dense_reduce16(__m256 lo, __m256 hi) {
  const __m256 v = _mm256_add_ps(lo, hi);
  __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  a = _mm_add_ss(a, _mm_movehdup_ps(a));
  return _mm_cvtss_f32(a);
}

// Rows w[0..R) (rb bytes apart) against one vector x[K].
template <TensorType T, int R>
struct DenseRows {
  static inline void run(const uint8_t* w, int64_t rb, int64_t K, const float* x, float* out) {
    __m256 lo[R], hi[R];
    for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
    if constexpr (T == TensorType::Q8_0) {  // a block at a time: its scale widened once
      for (int64_t k = 0; k < K; k += QK8_0) {
        const __m256 x0 = _mm256_loadu_ps(x + k), x1 = _mm256_loadu_ps(x + k + 8);
        const __m256 x2 = _mm256_loadu_ps(x + k + 16), x3 = _mm256_loadu_ps(x + k + 24);
        for (int r = 0; r < R; ++r) {
          const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(w + r * rb) + k / QK8_0;
          uint16_t dh;
          std::memcpy(&dh, &b->d, 2);  // blocks are 34 bytes: unaligned
          const __m256 d = _mm256_set1_ps(_cvtsh_ss(dh));
          const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
          const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 16));
          auto widen = [&](__m128i q) { return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d); };
          lo[r] = _mm256_fmadd_ps(widen(q0), x0, lo[r]);
          hi[r] = _mm256_fmadd_ps(widen(_mm_srli_si128(q0, 8)), x1, hi[r]);
          lo[r] = _mm256_fmadd_ps(widen(q1), x2, lo[r]);
          hi[r] = _mm256_fmadd_ps(widen(_mm_srli_si128(q1, 8)), x3, hi[r]);
        }
      }
      for (int r = 0; r < R; ++r) out[r] = dense_reduce16(lo[r], hi[r]);
      return;
    }
    const int64_t full = K / 16 * 16;
    for (int64_t k = 0; k < full; k += 16) {
      const __m256 xl = _mm256_loadu_ps(x + k), xh = _mm256_loadu_ps(x + k + 8);
      for (int r = 0; r < R; ++r) {
        __m256 wl, wh;
        dense_load16<T>(w + r * rb, k, wl, wh);
        lo[r] = _mm256_fmadd_ps(wl, xl, lo[r]);
        hi[r] = _mm256_fmadd_ps(wh, xh, hi[r]);
      }
    }
    if (full < K) {  // the last partial group (never Q8_0), zero-padded on both sides
      const size_t rest = size_t(K - full), elem = T == TensorType::F32 ? 4 : 2;
      alignas(32) float xt[16] = {};
      std::memcpy(xt, x + full, rest * sizeof(float));
      const __m256 xl = _mm256_load_ps(xt), xh = _mm256_load_ps(xt + 8);
      for (int r = 0; r < R; ++r) {
        alignas(32) uint8_t wt[64] = {};
        std::memcpy(wt, w + r * rb + full * int64_t(elem), rest * elem);
        __m256 wl, wh;
        dense_load16<T>(wt, 0, wl, wh);
        lo[r] = _mm256_fmadd_ps(wl, xl, lo[r]);
        hi[r] = _mm256_fmadd_ps(wh, xh, hi[r]);
      }
    }
    for (int r = 0; r < R; ++r) out[r] = dense_reduce16(lo[r], hi[r]);
  }
};

void dense_gemm_x86(const DenseMatrix& m, const float* x, int64_t n, float* y, int64_t ldy,
                    int64_t r0, int64_t r1) {
  dense_gemm_driver<DenseRows, 4>(m, x, n, y, ldy, r0, r1);
}

}  // namespace
}  // namespace tern::kernels_detail
