// The dense (output head) GEMM for the NEON sets: F32, F16 (vcvt), BF16
// (a 16-bit widening shift) in f32 registers with vfmaq, and Q8_0 and Q6_K
// rows against int8 activations (DenseQ8Rows, DenseQ6Rows), in the summation orders kernels.h
// fixes, so results equal the scalar set's bit for bit. A
// row's 16 lanes are four q-register accumulators (lanes 4a .. 4a+3 in
// accumulator a); two rows go side by side for eight FMA chains.
//
// Internal linkage: each includer has its own -march flags.
#pragma once
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "../dense_driver.h"
#include "tern/quant.h"

namespace tern::kernels_detail {
namespace {

using gguf::TensorType;

// Lanes [k, k + 4) of a row.
template <TensorType T>
inline float32x4_t dense_load4(const uint8_t* row, int64_t k) {
  if constexpr (T == TensorType::F32) {
    return vld1q_f32(reinterpret_cast<const float*>(row) + k);
  } else {
    const uint16x4_t h = vld1_u16(reinterpret_cast<const uint16_t*>(row) + k);
    if constexpr (T == TensorType::F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    else return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
  }
}

// Lanes j + 8, then j + 4, j + 2, j + 1, as the scalar set adds them.
inline float dense_reduce16(const float32x4_t a[4]) {
  const float32x4_t s = vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[1], a[3]));
  const float32x2_t t = vadd_f32(vget_low_f32(s), vget_high_f32(s));
  return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
}

// Rows w[0..R) (rb bytes apart) against one vector x[K].
template <TensorType T, int R>
struct DenseRows {
  static inline void run(const uint8_t* w, int64_t rb, int64_t K, const float* x, float* out) {
    float32x4_t acc[R][4];
    for (int r = 0; r < R; ++r)
      for (int a = 0; a < 4; ++a) acc[r][a] = vdupq_n_f32(0.0f);
    const int64_t full = K / 16 * 16;
    for (int64_t k = 0; k < full; k += 16) {
      float32x4_t xv[4];
      for (int a = 0; a < 4; ++a) xv[a] = vld1q_f32(x + k + 4 * a);
      for (int r = 0; r < R; ++r)
        for (int a = 0; a < 4; ++a)
          acc[r][a] = vfmaq_f32(acc[r][a], dense_load4<T>(w + r * rb, k + 4 * a), xv[a]);
    }
    if (full < K) {  // the last partial group, zero-padded on both sides
      const size_t rest = size_t(K - full), elem = T == TensorType::F32 ? 4 : 2;
      float xt[16] = {};
      std::memcpy(xt, x + full, rest * sizeof(float));
      for (int r = 0; r < R; ++r) {
        alignas(16) uint8_t wt[64] = {};
        std::memcpy(wt, w + r * rb + full * int64_t(elem), rest * elem);
        for (int a = 0; a < 4; ++a)
          acc[r][a] = vfmaq_f32(acc[r][a], dense_load4<T>(wt, 4 * a), vld1q_f32(xt + 4 * a));
      }
    }
    for (int r = 0; r < R; ++r) out[r] = dense_reduce16(acc[r]);
  }
};

// Q8_0 rows against int8 activations: widening multiplies, pairwise adds
// into lane j = the exact sum of products 4j .. 4j + 3 (lanes 0-3 in
// acc[0], 4-7 in acc[1]), scaled by fp16(d_w) * d_x.
template <int R>
struct DenseQ8Rows {
  static inline int32x4_t sums16(int8x16_t w, int8x16_t x) {
    const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x)));
    const int32x4_t hi = vpaddlq_s16(vmull_s8(vget_high_s8(w), vget_high_s8(x)));
    return vpaddq_s32(lo, hi);
  }
  static inline void run(const uint8_t* w, int64_t rb, int64_t nb, const ActQ8* a, float* out) {
    float32x4_t acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; ++b) {
      const int8x16_t x0 = vld1q_s8(a[b].qs), x1 = vld1q_s8(a[b].qs + 16);
      for (int r = 0; r < R; ++r) {
        const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(w + r * rb) + b;
        uint16_t dh;
        std::memcpy(&dh, &blk->d, 2);
        const float d = fp16_to_f32(dh) * a[b].d;
        acc[r][0] = vfmaq_n_f32(acc[r][0], vcvtq_f32_s32(sums16(vld1q_s8(blk->qs), x0)), d);
        acc[r][1] = vfmaq_n_f32(acc[r][1], vcvtq_f32_s32(sums16(vld1q_s8(blk->qs + 16), x1)), d);
      }
    }
    for (int r = 0; r < R; ++r) {  // lanes j + 4, then j + 2, j + 1
      const float32x4_t s = vaddq_f32(acc[r][0], acc[r][1]);
      const float32x2_t t = vadd_f32(vget_low_f32(s), vget_high_f32(s));
      out[r] = vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
    }
  }
};

// Q6_K rows against int8 activations (per 256 values): 16 codes at a time
// rebuilt from a nibble and a 2-bit pair, made signed (q - 32), widening
// products summed per 16-value group, times the group's scale, into an
// exact int32 sum per block; one fma per block and row in block order.
template <int R>
struct DenseQ6Rows {
  static inline int32x4_t group(int8x16_t q, int8x16_t x, int8_t scale) {
    const int32x4_t s = vpaddq_s32(vpaddlq_s16(vmull_s8(vget_low_s8(q), vget_low_s8(x))),
                                   vpaddlq_s16(vmull_s8(vget_high_s8(q), vget_high_s8(x))));
    return vmulq_n_s32(s, int32_t(scale));
  }
  static inline void run(const uint8_t* w, int64_t rb, int64_t nb, const ActQ8K* a, float* out) {
    float acc[R];
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    const uint8x16_t m4 = vdupq_n_u8(0xF), m3 = vdupq_n_u8(3);
    const int8x16_t k32 = vdupq_n_s8(32);
    for (int64_t b = 0; b < nb; ++b) {
      for (int r = 0; r < R; ++r) {
        const BlockQ6_K* blk = reinterpret_cast<const BlockQ6_K*>(w + r * rb) + b;
        int32x4_t sum = vdupq_n_s32(0);
        for (int half = 0; half < 2; ++half)
          for (int c = 0; c < 32; c += 16) {  // values 32 * j + c .. + 15 of this half
            const uint8x16_t l0 = vld1q_u8(blk->ql + 64 * half + c), l1 = vld1q_u8(blk->ql + 64 * half + 32 + c);
            const uint8x16_t h = vld1q_u8(blk->qh + 32 * half + c);
            const uint8x16_t q[4] = {
                vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(h, m3), 4)),
                vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m3), 4)),
                vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4), m3), 4)),
                vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(h, 6), 4))};
            for (int j = 0; j < 4; ++j) {
              const int i = 128 * half + 32 * j + c;
              const int8x16_t qs = vsubq_s8(vreinterpretq_s8_u8(q[j]), k32);
              sum = vaddq_s32(sum, group(qs, vld1q_s8(a[b].qs + i), blk->scales[i / 16]));
            }
          }
        uint16_t dh;
        std::memcpy(&dh, &blk->d, 2);
        acc[r] = __builtin_fmaf(fp16_to_f32(dh) * a[b].d, float(vaddvq_s32(sum)), acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) out[r] = acc[r];
  }
};

void dense_gemm_neon(const DenseMatrix& m, const float* x, int64_t n, float* y, int64_t ldy,
                     int64_t r0, int64_t r1) {
  dense_gemm_driver<DenseRows, DenseQ8Rows, DenseQ6Rows, 2>(m, x, n, y, ldy, r0, r1);
}

}  // namespace
}  // namespace tern::kernels_detail
