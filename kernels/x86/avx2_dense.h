// The dense (output head) GEMM for every x86 set: F32, F16 (F16C) and BF16
// (a 16-bit shift) widened to f32 in registers and multiplied with FMA, in
// the summation order kernels.h fixes, so results equal the scalar set's bit
// for bit. A row's 16 lanes are two ymm accumulators. A batch of float rows
// runs as tiles of 2 rows x 2 vectors (dense_tile_avx2: each row widened
// once for both vectors) over blocks of rows that stay in L2. One vector
// takes two rows side by side, prefetched as one stream (prefetch_tile_linear):
// on Zen 5 the head read 1.15-1.3x faster that way than as four row
// streams, and four FMA chains still run 1.5x the one-core roof from cache.
// Q8_0 and Q6_K rows multiply int8 activations instead (DenseQ8Rows,
// DenseQ6Rows), as llama.cpp does, with the same row counts and prefetch
// (decode with those heads 1.04-1.09x on Zen 5).
//
// Internal linkage for the reason avx2_common.h gives: each includer has its
// own -m flags (which must include -mfma -mf16c).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "../dense_driver.h"
#include "prefetch.h"
#include "tern/quant.h"

namespace tern::kernels_detail {
namespace {

using gguf::TensorType;

// Eight F16 or BF16 values in each of a and b, widened to f32.
template <TensorType T>
inline void dense_widen16(__m128i a, __m128i b, __m256& lo, __m256& hi) {
  if constexpr (T == TensorType::F16) {
    lo = _mm256_cvtph_ps(a);
    hi = _mm256_cvtph_ps(b);
  } else {
    lo = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(a), 16));
    hi = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
  }
}

// Lanes [k, k + 16) of a row as two vectors of 8 f32.
template <TensorType T>
inline void dense_load16(const uint8_t* row, int64_t k, __m256& lo, __m256& hi) {
  if constexpr (T == TensorType::F32) {
    const float* p = reinterpret_cast<const float*>(row) + k;
    lo = _mm256_loadu_ps(p);
    hi = _mm256_loadu_ps(p + 8);
  } else {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + k;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8));
    dense_widen16<T>(a, b, lo, hi);
  }
}

// Lanes [k, k + rest) of a row (0 < rest < 16), zeros past them, with
// masked loads that touch no byte past the row's end. The partial group was
// first copied into zeroed stack buffers; at S's decode (a value row holds
// the positions so far, so it nearly always ends in a partial group) the
// reload of those copies stalled on store forwarding, a third of attention's
// dense time.
template <TensorType T>
inline void dense_tail16(const uint8_t* row, int64_t k, int rest, __m256& lo, __m256& hi) {
  if constexpr (T == TensorType::F32) {
    const float* p = reinterpret_cast<const float*>(row) + k;
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    lo = _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(rest), lanes));
    hi = _mm256_maskload_ps(p + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32(rest - 8), lanes));
  } else {
    // Whole pairs of 16-bit values as int32 lanes, then an odd last value
    // put in its lane alone.
    const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + k;
    const __m128i pairs = _mm_setr_epi32(0, 1, 2, 3);
    const int whole = rest / 2;
    __m128i a = _mm_maskload_epi32(reinterpret_cast<const int*>(p),
                                   _mm_cmpgt_epi32(_mm_set1_epi32(whole), pairs));
    __m128i b = _mm_maskload_epi32(reinterpret_cast<const int*>(p + 8),
                                   _mm_cmpgt_epi32(_mm_set1_epi32(whole - 4), pairs));
    if (rest % 2) {
      const int last = rest - 1;
      const __m128i v = _mm_set1_epi16(short(p[last]));
      const __m128i at = _mm_cmpeq_epi16(_mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7), _mm_set1_epi16(short(last % 8)));
      if (last < 8) a = _mm_blendv_epi8(a, v, at);
      else b = _mm_blendv_epi8(b, v, at);
    }
    dense_widen16<T>(a, b, lo, hi);
  }
}

// The prefetch for row r of R read side by side, `off` bytes in: one stream
// for the tile when its rows lie back to back (the head), else one per row
// (the KV cache's rows, padded to the context).
inline void prefetch_rows(const uint8_t* w, int64_t rb, int R, int r, int64_t off, bool back_to_back) {
  if (back_to_back) prefetch_tile_linear(w, rb, R, r, off);
  else prefetch_tile_row(w, rb, R, r, off);
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
    const int64_t full = K / 16 * 16, elem = T == TensorType::F32 ? 4 : 2;
    const bool back_to_back = rb == K * elem;  // the head; not the KV cache's padded rows
    for (int64_t k = 0; k < full; k += 16) {
      const __m256 xl = _mm256_loadu_ps(x + k), xh = _mm256_loadu_ps(x + k + 8);
      for (int r = 0; r < R; ++r) {
        if (elem == 4 || k % 32 == 0) prefetch_rows(w, rb, R, r, k * elem, back_to_back);
        __m256 wl, wh;
        dense_load16<T>(w + r * rb, k, wl, wh);
        lo[r] = _mm256_fmadd_ps(wl, xl, lo[r]);
        hi[r] = _mm256_fmadd_ps(wh, xh, hi[r]);
      }
    }
    if (full < K) {  // the last partial group, zero-padded on both sides
      const int rest = int(K - full);
      __m256 xl, xh;
      dense_tail16<TensorType::F32>(reinterpret_cast<const uint8_t*>(x), full, rest, xl, xh);
      for (int r = 0; r < R; ++r) {
        __m256 wl, wh;
        dense_tail16<T>(w + r * rb, full, rest, wl, wh);
        lo[r] = _mm256_fmadd_ps(wl, xl, lo[r]);
        hi[r] = _mm256_fmadd_ps(wh, xh, hi[r]);
      }
    }
    for (int r = 0; r < R; ++r) out[r] = dense_reduce16(lo[r], hi[r]);
  }
};

// Q8_0 rows against int8 activations, llama.cpp's vpmaddubsw dot: |w| times
// x with w's sign, pair sums (|w| <= 128 and |x| <= 127 keep them below
// 32767), then vpmaddwd against ones gives lane j the exact sum of products
// 4j .. 4j + 3, scaled by fp16(d_w) * d_x into lane j.
template <int R>
struct DenseQ8Rows {
  static inline void run(const uint8_t* w, int64_t rb, int64_t nb, const ActQ8* a, float* out) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    const bool back_to_back = rb == nb * int64_t(sizeof(BlockQ8_0));
    for (int64_t b = 0; b < nb; ++b) {
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b].qs));
      for (int r = 0; r < R; ++r) {
        prefetch_rows(w, rb, R, r, b * int64_t(sizeof(BlockQ8_0)), back_to_back);
        const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(w + r * rb) + b;
        uint16_t dh;
        std::memcpy(&dh, &blk->d, 2);  // blocks are 34 bytes: unaligned
        const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs));
        const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(wq, wq), _mm256_sign_epi8(xq, wq));
        const __m256 s = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(dh) * a[b].d), s, acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) {  // lanes j + 4, then j + 2, j + 1
      __m128 v = _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1));
      v = _mm_add_ps(v, _mm_movehl_ps(v, v));
      v = _mm_add_ss(v, _mm_movehdup_ps(v));
      out[r] = _mm_cvtss_f32(v);
    }
  }
};

// Q6_K rows against int8 activations (per 256 values), as llama.cpp's
// AVX2 dot: the unsigned 6-bit codes (rebuilt from a nibble and a 2-bit
// pair) times x with vpmaddubsw (63 * 127 * 2 fits int16), times the
// 16-value groups' scales with vpmaddwd, less 32 * sum(scale * group sum of
// x) for the codes' offset: the exact int32 sum per block, then one fma
// per block and row in block order.
template <int R>
struct DenseQ6Rows {
  static inline void run(const uint8_t* w, int64_t rb, int64_t nb, const ActQ8K* a, float* out) {
    float acc[R];
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    const __m256i m4 = _mm256_set1_epi8(0xF), m3 = _mm256_set1_epi8(3);
    // Byte masks putting int16 scale 2j (of a lane-duplicated 8) in every
    // int16 of the low 128 bits and scale 2j + 1 in the high ones.
    __m256i pick[4];
    for (int j = 0; j < 4; ++j)
      pick[j] = _mm256_setr_epi8(
          char(4 * j), char(4 * j + 1), char(4 * j), char(4 * j + 1), char(4 * j), char(4 * j + 1), char(4 * j),
          char(4 * j + 1), char(4 * j), char(4 * j + 1), char(4 * j), char(4 * j + 1), char(4 * j), char(4 * j + 1),
          char(4 * j), char(4 * j + 1), char(4 * j + 2), char(4 * j + 3), char(4 * j + 2), char(4 * j + 3),
          char(4 * j + 2), char(4 * j + 3), char(4 * j + 2), char(4 * j + 3), char(4 * j + 2), char(4 * j + 3),
          char(4 * j + 2), char(4 * j + 3), char(4 * j + 2), char(4 * j + 3), char(4 * j + 2), char(4 * j + 3));
    const bool back_to_back = rb == nb * int64_t(sizeof(BlockQ6_K));
    for (int64_t b = 0; b < nb; ++b) {
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b].bsums));
      for (int r = 0; r < R; ++r) {
        for (int64_t o = 0; o < int64_t(sizeof(BlockQ6_K)); o += 64)  // a block spans 3-4 lines
          prefetch_rows(w, rb, R, r, b * int64_t(sizeof(BlockQ6_K)) + o, back_to_back);
        const BlockQ6_K* blk = reinterpret_cast<const BlockQ6_K*>(w + r * rb) + b;
        const __m256i sc16 =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales)));
        // The offset: 32 * sum over groups of scale * (sum of x), as int32 lanes.
        __m256i sum = _mm256_slli_epi32(_mm256_madd_epi16(sc16, bsums), 5);
        sum = _mm256_sub_epi32(_mm256_setzero_si256(), sum);
        // Scales 0-7, then 8-15, in both 128-bit lanes: one per half.
        const __m256i lanes[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00),
                                  _mm256_permute2x128_si256(sc16, sc16, 0x11)};
        for (int half = 0; half < 2; ++half) {
          const __m256i scales = lanes[half];
          const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->ql + 64 * half));
          const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->ql + 64 * half + 32));
          const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qh + 32 * half));
          const __m256i q[4] = {
              _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m3), 4)),
              _mm256_or_si256(_mm256_and_si256(l1, m4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m3), 4)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m3), 4)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m3), 4))};
          for (int j = 0; j < 4; ++j) {
            const __m256i xq =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b].qs + 128 * half + 32 * j));
            const __m256i p = _mm256_maddubs_epi16(q[j], xq);
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, _mm256_shuffle_epi8(scales, pick[j])));
          }
        }
        __m128i v = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4E));
        v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xB1));
        uint16_t dh;
        std::memcpy(&dh, &blk->d, 2);
        acc[r] = __builtin_fmaf(_cvtsh_ss(dh) * a[b].d, float(_mm_cvtsi128_si32(v)), acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) out[r] = acc[r];
  }
};

// Rows w[0..R) (rb bytes apart) against vectors x[0..N) (K floats apart),
// y[i * ldy + r]: each row's 16 values are widened once for N vectors (the
// F16/BF16 widening, not the FMA, bounded DenseRows at a batch: each
// vector widened every row again, 4 products a cycle on Zen 3). Every
// (row, vector) pair keeps DenseRows's two accumulators and order.
template <TensorType T, int R, int N>
__attribute__((noinline)) void dense_tile_avx2(const uint8_t* w, int64_t rb, int64_t K, const float* x, float* y,
                                               int64_t ldy) {
  constexpr int64_t elem = T == TensorType::F32 ? 4 : 2;
  __m256 lo[R][N], hi[R][N];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int i = 0; i < N; ++i) lo[r][i] = hi[r][i] = _mm256_setzero_ps();
  const int64_t full = K / 16 * 16;
  for (int64_t k = 0; k < full; k += 16) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      if (elem == 4 || k % 32 == 0) prefetch_tile_row(w, rb, R, r, k * elem);
      __m256 wl, wh;
      dense_load16<T>(w + r * rb, k, wl, wh);
#pragma GCC unroll 4
      for (int i = 0; i < N; ++i) {
        lo[r][i] = _mm256_fmadd_ps(wl, _mm256_loadu_ps(x + i * K + k), lo[r][i]);
        hi[r][i] = _mm256_fmadd_ps(wh, _mm256_loadu_ps(x + i * K + k + 8), hi[r][i]);
      }
    }
  }
  if (full < K) {  // the last partial group, zero-padded on both sides
    const int rest = int(K - full);
    for (int r = 0; r < R; ++r) {
      __m256 wl, wh;
      dense_tail16<T>(w + r * rb, full, rest, wl, wh);
      for (int i = 0; i < N; ++i) {
        __m256 xl, xh;
        dense_tail16<TensorType::F32>(reinterpret_cast<const uint8_t*>(x + i * K), full, rest, xl, xh);
        lo[r][i] = _mm256_fmadd_ps(wl, xl, lo[r][i]);
        hi[r][i] = _mm256_fmadd_ps(wh, xh, hi[r][i]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int i = 0; i < N; ++i) y[i * ldy + r] = dense_reduce16(lo[r][i], hi[r][i]);
}

// Vectors x[0..N) against rows [b0, b1), kTileRows at a time, then one by one.
constexpr int kTileRows = 2, kTileVecs = 2;  // 8 accumulators, 2 widened rows, 4 vector loads: 14 of 16 ymm
template <TensorType T, int N>
void dense_vectors_rows_avx2(const uint8_t* w, int64_t rb, int64_t K, const float* x, float* y, int64_t ldy,
                             int64_t b0, int64_t b1) {
  int64_t r = b0;
  for (; r + kTileRows <= b1; r += kTileRows) dense_tile_avx2<T, kTileRows, N>(w + r * rb, rb, K, x, y + r, ldy);
  for (; r < b1; ++r) dense_tile_avx2<T, 1, N>(w + r * rb, rb, K, x, y + r, ldy);
}

// Blocks of rows that fit half of a 256 KiB L2 (the smallest of the AVX2
// parts tern runs on), each taken by every kTileVecs vectors in turn: a
// row streams from DRAM once per call and from L2 for the other vectors.
template <TensorType T>
void dense_gemm_tiled_avx2(const DenseMatrix& m, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                           int64_t r1) {
  constexpr int64_t kBlockBytes = int64_t(128) << 10;
  const int64_t K = m.cols, rb = dense_stride(m);
  const int64_t fit = kBlockBytes / (rb > 0 ? rb : 1) / kTileRows * kTileRows;
  const int64_t block = fit > kTileRows ? fit : kTileRows;
  const uint8_t* w = static_cast<const uint8_t*>(m.data);
  for (int64_t b0 = r0; b0 < r1; b0 += block) {
    const int64_t b1 = b0 + block < r1 ? b0 + block : r1;
    int64_t i = 0;
    for (; i + kTileVecs <= n; i += kTileVecs)
      dense_vectors_rows_avx2<T, kTileVecs>(w, rb, K, x + i * K, y + i * ldy, ldy, b0, b1);
    if (i < n) dense_vectors_rows_avx2<T, 1>(w, rb, K, x + i * K, y + i * ldy, ldy, b0, b1);
  }
}

void dense_gemm_x86(const DenseMatrix& m, const float* x, int64_t n, float* y, int64_t ldy,
                    int64_t r0, int64_t r1) {
  const bool float_rows =
      m.type == TensorType::F32 || m.type == TensorType::F16 || m.type == TensorType::BF16;
  // One vector (decode's stream, tuned in DenseRows) and quantized rows.
  if (n < 2 || !float_rows) return dense_gemm_driver<DenseRows, DenseQ8Rows, DenseQ6Rows, 4, 2>(m, x, n, y, ldy, r0, r1);
  check_dense_call(m, n, ldy, r0, r1);
  switch (m.type) {
    case TensorType::F32: return dense_gemm_tiled_avx2<TensorType::F32>(m, x, n, y, ldy, r0, r1);
    case TensorType::F16: return dense_gemm_tiled_avx2<TensorType::F16>(m, x, n, y, ldy, r0, r1);
    default: return dense_gemm_tiled_avx2<TensorType::BF16>(m, x, n, y, ldy, r0, r1);
  }
}

}  // namespace
}  // namespace tern::kernels_detail
