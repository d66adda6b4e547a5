// The dense (output head) GEMM for the NEON sets: F32, F16 (vcvt), BF16
// (a 16-bit widening shift) and Q8_0 (int8 times its fp16 scale) in f32
// registers with vfmaq, in the summation order kernels.h fixes, so results
// equal the scalar set's bit for bit. A
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

// Lanes [k, k + 4) of a row. A Q8_0 row's 4 values lie in one block:
// fp16(d) * q is exact.
template <TensorType T>
inline float32x4_t dense_load4(const uint8_t* row, int64_t k) {
  if constexpr (T == TensorType::F32) {
    return vld1q_f32(reinterpret_cast<const float*>(row) + k);
  } else if constexpr (T == TensorType::Q8_0) {
    const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(row) + k / QK8_0;
    uint16_t dh;
    std::memcpy(&dh, &b->d, 2);
    int8_t q4[8] = {};
    std::memcpy(q4, b->qs + k % QK8_0, 4);
    const int32x4_t q = vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8(q4))));
    return vmulq_n_f32(vcvtq_f32_s32(q), fp16_to_f32(dh));
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
    if (full < K) {  // the last partial group (never Q8_0), zero-padded on both sides
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

void dense_gemm_neon(const DenseMatrix& m, const float* x, int64_t n, float* y, int64_t ldy,
                     int64_t r0, int64_t r1) {
  dense_gemm_driver<DenseRows, 2>(m, x, n, y, ldy, r0, r1);
}

}  // namespace
}  // namespace tern::kernels_detail
