// Int8 activations (quantize_act_i8 in quant.h) with NEON, for both NEON
// sets; the same bytes as the portable reference:
//   max: on the magnitudes' bit patterns as integers (the order of
//     non-negative floats), NaN lanes zeroed first, as std::max(acc, NaN)
//     keeps acc (FMAXNM would turn a signalling NaN into a NaN result);
//   clamp: FMAXNM(v, -128) gives -128 for NaN as fmax does (v = x * s is
//     never a signalling NaN), and clamping before rounding equals rounding
//     before, the bounds being integers;
//   round: FCVTNS rounds to nearest, ties to even, as nearbyint does in the
//     default mode.
// The last n % 16 values go through the same code in a zero-padded copy.
//
// Internal linkage: each includer has its own -march flags.
#pragma once
#include <arm_neon.h>

#include <cstdint>

#include "tern/quant.h"

namespace tern::kernels_detail {
namespace {

inline void quantize_i8_16(const float* x, float32x4_t s, int8_t* q) {
  const float32x4_t lo = vdupq_n_f32(-128.0f), hi = vdupq_n_f32(127.0f);
  int32x4_t v[4];
  for (int i = 0; i < 4; ++i)
    v[i] = vcvtnq_s32_f32(vminnmq_f32(vmaxnmq_f32(vmulq_f32(vld1q_f32(x + 4 * i), s), lo), hi));
  const int16x8_t a = vcombine_s16(vqmovn_s32(v[0]), vqmovn_s32(v[1]));
  const int16x8_t b = vcombine_s16(vqmovn_s32(v[2]), vqmovn_s32(v[3]));
  vst1q_s8(q, vcombine_s8(vqmovn_s16(a), vqmovn_s16(b)));
}

inline uint32x4_t magnitude_bits(const float* x) {
  const uint32x4_t m = vandq_u32(vreinterpretq_u32_f32(vld1q_f32(x)), vdupq_n_u32(0x7fffffff));
  return vandq_u32(m, vcleq_u32(m, vdupq_n_u32(0x7f800000)));  // NaN -> 0
}

float quantize_i8_neon(const float* x, int64_t n, int8_t* q) {
  const int64_t body = n / 16 * 16;
  float tail[16] = {};
  for (int64_t i = body; i < n; ++i) tail[i - body] = x[i];
  uint32x4_t m = vdupq_n_u32(0);
  for (int64_t i = 0; i < body; i += 4) m = vmaxq_u32(m, magnitude_bits(x + i));
  for (int i = 0; i < 16; i += 4) m = vmaxq_u32(m, magnitude_bits(tail + i));
  const float amax = vgetq_lane_f32(vreinterpretq_f32_u32(vdupq_n_u32(vmaxvq_u32(m))), 0);
  const float s = act_i8_scale(amax);
  const float32x4_t vs = vdupq_n_f32(s);
  for (int64_t i = 0; i < body; i += 16) quantize_i8_16(x + i, vs, q + i);
  if (body < n) {
    int8_t out[16];
    quantize_i8_16(tail, vs, out);
    for (int64_t i = body; i < n; ++i) q[i] = out[i - body];
  }
  return s;
}

}  // namespace
}  // namespace tern::kernels_detail
