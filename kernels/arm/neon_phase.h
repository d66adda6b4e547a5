// Fairy2i's fused phase kernel for NEON (kernels.h PhaseGemm), shared by
// the neon-tbl and neon-sdot sets: one pass per complex row, stage and
// matrix (U, W) over the FAIRY2I bit planes, four of the eight sums at a
// time. vtstq turns a plane's 32-bit word into full lane masks; the sign
// mask's sign bit flips the input (FairyFuse's pre-negation as one eor, so
// the minus signs become adds) and the axis mask keeps it for the
// imaginary-axis sums, its complement for the real-axis ones. Adding +0
// leaves a lane unchanged (a lane that starts at +0 never becomes -0), so
// the sums are the scalar kernel's masked sums bit for bit. A sum's 16
// lanes are four q registers (lanes 4q .. 4q + 3 in register q), reduced as
// kernels.h orders it.
//
// Internal linkage: each includer has its own -march flags.
#pragma once
#include <arm_neon.h>

#include <cstdint>

#include "../phase_driver.h"
#include "tern/phase.h"

namespace tern::kernels_detail {
namespace {

// One matrix's sums T_r a, T_i b, T_r b, T_i a of one row and stage.
struct PhaseQuads {
  float32x4_t ra[4], ib[4], rb[4], ia[4];
};

inline PhaseQuads phase_matrix_pass(const BlockPhase* row, int64_t nb, const float* a, const float* b,
                                    int matrix) {
  const uint32x4_t sign_bit = vdupq_n_u32(0x80000000u);
  const int32x4_t lane = {0, 1, 2, 3};
  PhaseQuads acc;
  for (int q = 0; q < 4; ++q)
    acc.ra[q] = acc.ib[q] = acc.rb[q] = acc.ia[q] = vdupq_n_f32(0.0f);
  for (int64_t blk = 0; blk < nb; ++blk) {
    const auto* words = reinterpret_cast<const uint32_t*>(row + blk) + 4 * matrix;  // axis x2, sign x2
    for (int word = 0; word < 2; ++word) {
      const uint32x4_t axis = vdupq_n_u32(words[word]), sign = vdupq_n_u32(words[2 + word]);
      for (int quad = 0; quad < 8; ++quad) {  // columns 4 quad .. + 3 of the word
        const uint32x4_t bits = vshlq_u32(vdupq_n_u32(1), vaddq_s32(lane, vdupq_n_s32(4 * quad)));
        const int64_t col = blk * kPhaseBlock + word * 32 + quad * 4;
        const uint32x4_t ma = vtstq_u32(axis, bits);
        const uint32x4_t ms = vandq_u32(vtstq_u32(sign, bits), sign_bit);
        const uint32x4_t sa = veorq_u32(vreinterpretq_u32_f32(vld1q_f32(a + col)), ms);
        const uint32x4_t sb = veorq_u32(vreinterpretq_u32_f32(vld1q_f32(b + col)), ms);
        const int q = quad % 4;  // the 16-lane sum's register: column mod 16
        acc.ra[q] = vaddq_f32(acc.ra[q], vreinterpretq_f32_u32(vbicq_u32(sa, ma)));
        acc.ib[q] = vaddq_f32(acc.ib[q], vreinterpretq_f32_u32(vandq_u32(sb, ma)));
        acc.rb[q] = vaddq_f32(acc.rb[q], vreinterpretq_f32_u32(vbicq_u32(sb, ma)));
        acc.ia[q] = vaddq_f32(acc.ia[q], vreinterpretq_f32_u32(vandq_u32(sa, ma)));
      }
    }
  }
  return acc;
}

// Lanes j and j + 8, then j + 4, j + 2, j + 1.
inline float phase_reduce(const float32x4_t v[4]) {
  const float32x4_t w = vaddq_f32(vaddq_f32(v[0], v[2]), vaddq_f32(v[1], v[3]));
  const float32x2_t h = vadd_f32(vget_low_f32(w), vget_high_f32(w));
  return vget_lane_f32(h, 0) + vget_lane_f32(h, 1);
}

void phase_gemm_neon(const PhaseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                     int64_t r1) {
  phase_gemm_driver(w, x, n, y, ldy, r0, r1,
                    [](const BlockPhase* row, int64_t nb, const float* a, const float* b, float S[8]) {
                      const PhaseQuads u = phase_matrix_pass(row, nb, a, b, 0), v = phase_matrix_pass(row, nb, a, b, 1);
                      // TrUa, TiUb, TrWa, TiWb, TrUb, TiUa, TrWb, TiWa
                      const float32x4_t* order[8] = {u.ra, u.ib, v.ra, v.ib, u.rb, u.ia, v.rb, v.ia};
                      for (int g = 0; g < 8; ++g) S[g] = phase_reduce(order[g]);
                    });
}

}  // namespace
}  // namespace tern::kernels_detail
