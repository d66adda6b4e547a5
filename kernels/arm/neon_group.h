// Group-scaled rows (kernels.h GroupGemmI8) for NEON, shared by neon-sdot
// and neon-tbl. Code byte b of a block holds weights 4b + k in bits 2k, so
// per 64 weights one 16-byte load gives four vectors of codes c = w + 1
// (shift and mask), and the activations are laid out once per call as
// planes to match (vld4q de-interleaves 64 of them: plane k, byte b =
// x[4b + k]). `Dot` is the set's signed byte product into int32 lanes
// (sdot, else smull and pairwise add); codes 0..3 are valid signed bytes.
// A group's sum of c x less the group's sum of x is the exact integer sum
// of w x; tokens are taken one at a time, each row's groups in increasing
// order through the double fma chain: the scalar set's bits.
//
// Exactness: a lane holds at most 32 products of a code (at most 3) and a
// byte (3 * 128 * 32 < 2^14), so 255 a + b per lane and a group's four
// lanes stay exact in int32.
//
// Internal linkage: each includer has its own -march flags.
#pragma once
#include <arm_neon.h>

#include <cmath>
#include <cstdint>

#include "../code_layout.h"
#include "../kernel_sets.h"
#include "tern/quant.h"
#include "tern/quant_group.h"

namespace tern::kernels_detail {
namespace {

// One token's nd digit vectors as planes ([nd][K]: per 64 activations the
// four de-interleaved planes of 16), each group's sum of x per digit
// (xsum[v * G + g]), and the digits' number of those sums (xnum[g]).
inline void group_planes_neon(const int8_t* xq, int nd, int64_t K, int group, int8_t* planes, int32_t* xsum,
                              double* xnum) {
  const int64_t G = K / group;
  for (int v = 0; v < nd; ++v) {
    const int8_t* x = xq + v * K;
    int8_t* p = planes + v * K;
    for (int64_t j = 0; j < K; j += 64) {
      const int8x16x4_t d = vld4q_s8(x + j);
      for (int k = 0; k < 4; ++k) vst1q_s8(p + j + 16 * k, d.val[k]);
    }
    for (int64_t g = 0; g < G; ++g) {
      int32_t s = 0;
      for (int j = 0; j < group; j += 16) s += vaddlvq_s8(vld1q_s8(x + g * group + j));
      xsum[v * G + g] = s;
    }
  }
  for (int64_t g = 0; g < G; ++g) {
    double num = xsum[g];
    for (int v = 1; v < nd; ++v) num = num * 255.0 + xsum[v * G + g];
    xnum[g] = num;
  }
}

// One row and token: the groups' exact sums scaled in order.
template <class Dot, int ND>
inline float group_row_neon(const uint8_t* row, int64_t G, int group, const int8_t* planes, int64_t K,
                            const double* xnum, float inv) {
  const int64_t bb = group_block_bytes(group);
  const uint8x16_t m3 = vdupq_n_u8(3);
  double acc = 0;
  for (int64_t g = 0; g < G; ++g) {
    const uint8_t* b = row + g * bb;
    int32x4_t s[ND];
    for (auto& x : s) x = vdupq_n_s32(0);
    for (int j = 0; j < group; j += 64) {
      const uint8x16_t codes = vld1q_u8(b + 2 + j / 4);
      const int8x16_t c[4] = {vreinterpretq_s8_u8(vandq_u8(codes, m3)),
                              vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(codes, 2), m3)),
                              vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(codes, 4), m3)),
                              vreinterpretq_s8_u8(vshrq_n_u8(codes, 6))};
      for (int v = 0; v < ND; ++v) {
        const int8_t* p = planes + v * K + g * group + j;
        for (int k = 0; k < 4; ++k) s[v] = Dot::dot(s[v], c[k], vld1q_s8(p + 16 * k));
      }
    }
    double num;
    if constexpr (ND == 1) {
      num = vaddvq_s32(s[0]);
    } else {  // 255 s0 + s1 per lane, a third digit in double
      num = vaddvq_s32(vmlaq_n_s32(s[1], s[0], 255));
      if constexpr (ND == 3) num = num * 255.0 + vaddvq_s32(s[2]);
    }
    acc = std::fma(num - xnum[g], double(fp16_to_f32(uint16_t(b[0] | b[1] << 8))), acc);
  }
  return float(acc) * inv;
}

template <class Dot, int ND>
void group_rows_neon(const GroupMatrix& w, const int8_t* planes, const double* xnum, float xscale, float* y,
                     int64_t r0, int64_t r1) {
  const int64_t G = w.groups(), rb = G * group_block_bytes(w.group);
  const float inv = 1.0f / xscale;
  for (int64_t r = r0; r < r1; ++r) y[r] = group_row_neon<Dot, ND>(w.data + r * rb, G, w.group, planes, w.cols, xnum, inv);
}

// Tokens one at a time (each with its one to three digits; more go to the
// scalar set).
template <class Dot>
void group_gemm_i8_neon(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                        float* y, int64_t ldy, int64_t r0, int64_t r1) {
  check_group_call(w, n, ldy, r0, r1);
  const int64_t K = w.cols, G = w.groups();
  for (int64_t i = 0; i < n; ++i) {
    const int nd = digits[i];
    if (nd < 1 || nd > 3) {
      scalar_kernels().group_gemm_i8(w, xq, 1, &digits[i], &xscale[i], y + i * ldy, ldy, r0, r1);
    } else {
      uint8_t* buf = thread_scratch(1, size_t(nd * K) + size_t(nd * G) * 4 + size_t(G) * 8 + 64);
      int8_t* planes = reinterpret_cast<int8_t*>(buf);
      int32_t* xsum = reinterpret_cast<int32_t*>(buf + nd * K);
      double* xnum = reinterpret_cast<double*>(buf + ((nd * K + nd * G * 4 + 7) & ~int64_t(7)));
      group_planes_neon(xq, nd, K, w.group, planes, xsum, xnum);
      if (nd == 1) group_rows_neon<Dot, 1>(w, planes, xnum, xscale[i], y + i * ldy, r0, r1);
      else if (nd == 2) group_rows_neon<Dot, 2>(w, planes, xnum, xscale[i], y + i * ldy, r0, r1);
      else group_rows_neon<Dot, 3>(w, planes, xnum, xscale[i], y + i * ldy, r0, r1);
    }
    xq += int64_t(nd) * K;
  }
}

}  // namespace
}  // namespace tern::kernels_detail
