// Fairy2i's phase kernel on int8 activations for NEON (kernels.h
// PhaseGemmI8), shared by neon-tbl and neon-sdot. NEON multiplies signed
// bytes by signed bytes, so the weights go in as t itself: per 16 complex
// columns, vtstq spreads each plane's 16 bits to byte masks, the sign mask
// or'ed with 1 gives +1 or -1 (0x01 or 0xff), and the axis mask keeps it
// for the imaginary-axis sums, its complement for the real-axis ones. No
// offset to take off, unlike vpdpbusd. `Dot` is the set's signed byte
// product into int32 lanes (sdot, else smull and pairwise add).
//
// Internal linkage: each includer has its own -march flags.
#pragma once
#include <arm_neon.h>

#include <cstdint>

#include "../phase_driver.h"
#include "tern/phase.h"

namespace tern::kernels_detail {
namespace {

// 0xff in byte j where bit j of `bits` is set, else 0.
inline uint8x16_t phase_bit_bytes(uint64_t bits) {
  const uint8x16_t bit = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  return vtstq_u8(vcombine_u8(vdup_n_u8(uint8_t(bits)), vdup_n_u8(uint8_t(bits >> 8))), bit);
}

// One row and stage against one vector q (a, then b at nb * 64).
template <class Dot>
inline void phase_sums_i8_neon(const BlockPhase* row, int64_t nb, const int8_t* q, int32_t S[8]) {
  const int64_t K = nb * kPhaseBlock;
  const uint8x16_t one = vdupq_n_u8(1);
  int32x4_t acc[8];
  for (auto& s : acc) s = vdupq_n_s32(0);
  for (int64_t blk = 0; blk < nb; ++blk) {
    const BlockPhase& p = row[blk];
    for (int g = 0; g < kPhaseBlock / 16; ++g) {
      const int shift = 16 * g;
      const uint8x16_t ua = phase_bit_bytes(p.u_axis >> shift), wa = phase_bit_bytes(p.w_axis >> shift);
      const uint8x16_t tu = vorrq_u8(phase_bit_bytes(p.u_sign >> shift), one);  // +1 or -1
      const uint8x16_t tw = vorrq_u8(phase_bit_bytes(p.w_sign >> shift), one);
      const int8x16_t tru = vreinterpretq_s8_u8(vbicq_u8(tu, ua)), tiu = vreinterpretq_s8_u8(vandq_u8(tu, ua));
      const int8x16_t trw = vreinterpretq_s8_u8(vbicq_u8(tw, wa)), tiw = vreinterpretq_s8_u8(vandq_u8(tw, wa));
      const int64_t at = blk * kPhaseBlock + shift;
      const int8x16_t a = vld1q_s8(q + at), b = vld1q_s8(q + K + at);
      phase_products(acc, tru, tiu, trw, tiw, a, b, &Dot::dot);
    }
  }
  for (int j = 0; j < 8; ++j) S[j] = vaddvq_s32(acc[j]);
}

template <class Dot>
void phase_gemm_i8_neon(const PhaseMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                        float* y, int64_t ldy, int64_t r0, int64_t r1) {
  phase_gemm_i8_driver<1>(w, xq, n, digits, xscale, y, ldy, r0, r1,
                          [](const BlockPhase* row, int64_t nb, const int8_t* q, int64_t, int, int32_t(*S)[8]) {
                            phase_sums_i8_neon<Dot>(row, nb, q, S[0]);
                          });
}

}  // namespace
}  // namespace tern::kernels_detail
