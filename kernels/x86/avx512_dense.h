// The dense GEMM of the AVX-512 sets. A batch (perplexity's every-token
// head, attention's query groups) runs as tiles of R rows x N vectors with
// R * N zmm accumulators: each weight vector is widened once for N vectors
// and each activation vector loaded once for R rows (avx2_dense.h's tiles
// do the same with half the registers' width and count).
//
// A zmm's lane j sums products j, j + 16, j + 32, ... exactly as the two
// ymm accumulators of avx2_dense.h (and the scalar set) do, and the lanes
// are reduced in the same order, so results equal the scalar set's bit for
// bit. One vector, and Q8_0/Q6_K rows, keep avx2_dense.h's loops.
//
// Internal linkage for the reason avx2_common.h gives; needs -mavx512f
// -mavx512bw -mavx512vl besides avx2_dense.h's flags.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "avx2_dense.h"

namespace tern::kernels_detail {
namespace {

// 16 floats at p; a partial group (Partial, lanes outside m) reads zeros,
// as the scalar order's padding.
template <bool Partial>
inline __m512 dense_load_ps(const float* p, __mmask16 m) {
  if constexpr (Partial) return _mm512_maskz_loadu_ps(m, p);
  else return _mm512_loadu_ps(p);
}

// Lanes [k, k + 16) of a row widened to f32.
template <TensorType T, bool Partial>
inline __m512 dense_wide16(const uint8_t* row, int64_t k, __mmask16 m) {
  if constexpr (T == TensorType::F32) {
    return dense_load_ps<Partial>(reinterpret_cast<const float*>(row) + k, m);
  } else {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + k;
    const __m256i h = Partial ? _mm256_maskz_loadu_epi16(m, p)
                              : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (T == TensorType::F16) return _mm512_cvtph_ps(h);
    else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

inline float dense_reduce_zmm(__m512 v) {
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  return dense_reduce16(_mm512_castps512_ps256(v), hi);
}

// Rows w[0..R) (rb bytes apart) against vectors x[0..N) (K floats apart):
// y[i * ldy + r].
template <TensorType T, int R, int N>
void dense_tile(const uint8_t* w, int64_t rb, int64_t K, const float* x, float* y, int64_t ldy) {
  constexpr int64_t elem = T == TensorType::F32 ? 4 : 2;
  __m512 acc[R][N];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < N; ++i) acc[r][i] = _mm512_setzero_ps();
  const auto step = [&]<bool Partial>(int64_t k, __mmask16 m) {
    __m512 xv[N];
    for (int i = 0; i < N; ++i) xv[i] = dense_load_ps<Partial>(x + i * K + k, m);
    for (int r = 0; r < R; ++r) {
      if (elem == 4 || k % 32 == 0) prefetch_tile_row(w, rb, R, r, k * elem);
      const __m512 wv = dense_wide16<T, Partial>(w + r * rb, k, m);
      for (int i = 0; i < N; ++i) acc[r][i] = _mm512_fmadd_ps(wv, xv[i], acc[r][i]);
    }
  };
  const int64_t full = K / 16 * 16;
  for (int64_t k = 0; k < full; k += 16) step.template operator()<false>(k, 0xFFFF);
  if (full < K) step.template operator()<true>(full, __mmask16((1u << (K - full)) - 1));
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < N; ++i) y[i * ldy + r] = dense_reduce_zmm(acc[r][i]);
}

// Vectors x[0..N) against rows [b0, b1), 4 at a time, then one by one.
template <TensorType T, int N>
void dense_vectors_rows(const uint8_t* w, int64_t rb, int64_t K, const float* x, float* y, int64_t ldy,
                        int64_t b0, int64_t b1) {
  constexpr int R = 4;
  int64_t r = b0;
  for (; r + R <= b1; r += R) dense_tile<T, R, N>(w + r * rb, rb, K, x, y + r, ldy);
  for (; r < b1; ++r) dense_tile<T, 1, N>(w + r * rb, rb, K, x, y + r, ldy);
}

// Blocks of rows that fit half the L2 cache (a 2 MiB L2 on the Xeons and
// Zen 4/5 this set runs on; 1 MiB on Skylake-SP still holds them), each
// taken by every 4 vectors in turn: the 4 vectors (24-40 KB at real
// widths) stay in L1 while the block's rows stream from L2, which reads at
// twice the rate per product (2-byte weights against 4-byte floats).
template <TensorType T>
void dense_gemm_tiled(const DenseMatrix& m, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                      int64_t r1) {
  constexpr int N = 4;
  constexpr int64_t kBlockBytes = int64_t(512) << 10;
  const int64_t K = m.cols, rb = dense_stride(m);
  const int64_t block = std::max<int64_t>(4, kBlockBytes / std::max<int64_t>(rb, 1) / 4 * 4);
  const uint8_t* w = static_cast<const uint8_t*>(m.data);
  for (int64_t b0 = r0; b0 < r1; b0 += block) {
    const int64_t b1 = std::min(b0 + block, r1);
    int64_t i = 0;
    for (; i + N <= n; i += N) dense_vectors_rows<T, N>(w, rb, K, x + i * K, y + i * ldy, ldy, b0, b1);
    switch (n - i) {
      case 3: dense_vectors_rows<T, 3>(w, rb, K, x + i * K, y + i * ldy, ldy, b0, b1); break;
      case 2: dense_vectors_rows<T, 2>(w, rb, K, x + i * K, y + i * ldy, ldy, b0, b1); break;
      case 1: dense_vectors_rows<T, 1>(w, rb, K, x + i * K, y + i * ldy, ldy, b0, b1); break;
      default: break;
    }
  }
}

void dense_gemm_avx512(const DenseMatrix& m, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                       int64_t r1) {
  const bool float_rows =
      m.type == TensorType::F32 || m.type == TensorType::F16 || m.type == TensorType::BF16;
  // One vector and quantized rows: avx2_dense.h's loops, which check the call.
  if (n < 2 || !float_rows) return dense_gemm_x86(m, x, n, y, ldy, r0, r1);
  check_dense_call(m, n, ldy, r0, r1);
  switch (m.type) {
    case TensorType::F32: return dense_gemm_tiled<TensorType::F32>(m, x, n, y, ldy, r0, r1);
    case TensorType::F16: return dense_gemm_tiled<TensorType::F16>(m, x, n, y, ldy, r0, r1);
    default: return dense_gemm_tiled<TensorType::BF16>(m, x, n, y, ldy, r0, r1);
  }
}

}  // namespace
}  // namespace tern::kernels_detail
