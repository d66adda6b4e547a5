// The dense (output head) GEMM for the NEON sets: F32, F16 (vcvt) and BF16
// (a 16-bit widening shift) in f32 registers with vfmaq, in the summation
// order kernels.h fixes, so results equal the scalar set's bit for bit. A
// row's 16 lanes are four q-register accumulators (lanes 4a .. 4a+3 in
// accumulator a); two rows go side by side for eight FMA chains.
//
// Internal linkage: each includer has its own -march flags.
#pragma once
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "../dense_driver.h"

namespace tern::kernels_detail {
namespace {

using gguf::TensorType;

template <TensorType T>
inline float32x4_t dense_load4(const typename DenseElem<T>::type* p) {
  if constexpr (T == TensorType::F32)
    return vld1q_f32(p);
  else if constexpr (T == TensorType::F16)
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
  else
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

// Lanes j + 8, then j + 4, j + 2, j + 1, as the scalar set adds them.
inline float dense_reduce16(const float32x4_t a[4]) {
  const float32x4_t s = vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[1], a[3]));
  const float32x2_t t = vadd_f32(vget_low_f32(s), vget_high_f32(s));
  return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
}

template <TensorType T, int R>
struct DenseRows {
  static inline void run(const typename DenseElem<T>::type* w, int64_t K, const float* x,
                         float* out) {
    using E = typename DenseElem<T>::type;
    float32x4_t acc[R][4];
    for (int r = 0; r < R; ++r)
      for (int a = 0; a < 4; ++a) acc[r][a] = vdupq_n_f32(0.0f);
    const int64_t full = K / 16 * 16;
    for (int64_t k = 0; k < full; k += 16) {
      float32x4_t xv[4];
      for (int a = 0; a < 4; ++a) xv[a] = vld1q_f32(x + k + 4 * a);
      for (int r = 0; r < R; ++r)
        for (int a = 0; a < 4; ++a)
          acc[r][a] = vfmaq_f32(acc[r][a], dense_load4<T>(w + r * K + k + 4 * a), xv[a]);
    }
    if (full < K) {  // the last partial group, zero-padded on both sides
      const size_t rest = size_t(K - full);
      float xt[16] = {};
      std::memcpy(xt, x + full, rest * sizeof(float));
      for (int r = 0; r < R; ++r) {
        E wt[16] = {};
        std::memcpy(wt, w + r * K + full, rest * sizeof(E));
        for (int a = 0; a < 4; ++a)
          acc[r][a] = vfmaq_f32(acc[r][a], dense_load4<T>(wt + 4 * a), vld1q_f32(xt + 4 * a));
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
