// Fairy2i's fused phase kernel for AVX2 (kernels.h PhaseGemm), shared by the
// avx2 and avx2-vnni sets: one pass per complex row and stage computes all
// eight sub-products from the FAIRY2I bit planes as they are stored, which
// the unfused scalar kernel reads eight times.
//
// Each byte of a bit plane (8 columns) indexes a table of 256 lane masks
// (8 KiB, stays in L1): the sign plane's mask, cut to the float sign bit,
// flips the input (FairyFuse's pre-negation as one xor: the minus signs
// become adds), and the axis plane's keeps the signed input for the
// imaginary-axis sums, its complement for the real-axis ones. Only loads,
// logic ops and adds: no blends (one port on many cores) and no per-lane
// shifts. Adding +0 leaves a lane unchanged (a lane that starts at +0 can
// never become -0), so the sums are the scalar kernel's masked sums exactly.
//
// A sum's 16 lanes would need sixteen accumulators for eight sums, every
// ymm register, so a row runs twice per stage: lanes 0..7 of every sum
// (columns 16g .. 16g + 7), then lanes 8..15; the second pass finds the
// row's planes and the input in cache. The reduction then adds lane j and
// j + 8 (the two passes' vectors), j + 4, j + 2, j + 1, as kernels.h orders
// it. On Zen 3 (this machine, bench/tern_bench_phase) this runs at about
// 0.6x the AVX2 TQ2_0 float kernel's weights per second: per 8 complex
// columns (32 real weights) it spends 24 vector ops where TQ2_0 spends 8.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "../phase_driver.h"
#include "tern/phase.h"

namespace tern::kernels_detail {
namespace {

// Lane masks of a byte of a bit plane: lane j all ones if bit j is set.
struct LaneMasks {
  alignas(32) uint32_t m[256][8];
};
constexpr LaneMasks make_lane_masks() {
  LaneMasks t{};
  for (int b = 0; b < 256; ++b)
    for (int j = 0; j < 8; ++j) t.m[b][j] = (b >> j) & 1 ? 0xFFFFFFFFu : 0u;
  return t;
}
constexpr LaneMasks kLaneMasks = make_lane_masks();

inline __m256 lane_mask(uint8_t byte) {
  return _mm256_load_ps(reinterpret_cast<const float*>(kLaneMasks.m[byte]));
}

// Lanes `half` * 8 .. + 7 of the eight sums of one row and stage, in
// kernels.h's order; x = a, then b.
struct PhaseSums {
  __m256 s[8];
};

inline PhaseSums phase_half(const BlockPhase* row, int64_t nb, const float* a, const float* b, int half) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  PhaseSums acc;
  for (auto& v : acc.s) v = _mm256_setzero_ps();
  for (int64_t blk = 0; blk < nb; ++blk) {
    const auto* ua = reinterpret_cast<const uint8_t*>(&row[blk].u_axis);
    const auto* us = reinterpret_cast<const uint8_t*>(&row[blk].u_sign);
    const auto* wa = reinterpret_cast<const uint8_t*>(&row[blk].w_axis);
    const auto* ws = reinterpret_cast<const uint8_t*>(&row[blk].w_sign);
    // Unrolled, GCC computes all four groups' terms before the adds and
    // spills them; one group at a time keeps everything in registers.
#pragma GCC unroll 1
    for (int g = 0; g < kPhaseBlock / 16; ++g) {  // 16-column groups; this half's 8 columns
      const int byte = 2 * g + half;
      const float* xa_p = a + blk * kPhaseBlock + 8 * byte;
      const __m256 xa = _mm256_loadu_ps(xa_p), xb = _mm256_loadu_ps(xa_p + (b - a));
      const __m256 mua = lane_mask(ua[byte]), mwa = lane_mask(wa[byte]);
      const __m256 mus = _mm256_and_ps(lane_mask(us[byte]), sign_bit);
      const __m256 mws = _mm256_and_ps(lane_mask(ws[byte]), sign_bit);
      const __m256 ua_ = _mm256_xor_ps(xa, mus), ub_ = _mm256_xor_ps(xb, mus);
      const __m256 wa_ = _mm256_xor_ps(xa, mws), wb_ = _mm256_xor_ps(xb, mws);
      // TrUa, TiUb, TrWa, TiWb, TrUb, TiUa, TrWb, TiWa
      acc.s[0] = _mm256_add_ps(acc.s[0], _mm256_andnot_ps(mua, ua_));
      acc.s[1] = _mm256_add_ps(acc.s[1], _mm256_and_ps(mua, ub_));
      acc.s[2] = _mm256_add_ps(acc.s[2], _mm256_andnot_ps(mwa, wa_));
      acc.s[3] = _mm256_add_ps(acc.s[3], _mm256_and_ps(mwa, wb_));
      acc.s[4] = _mm256_add_ps(acc.s[4], _mm256_andnot_ps(mua, ub_));
      acc.s[5] = _mm256_add_ps(acc.s[5], _mm256_and_ps(mua, ua_));
      acc.s[6] = _mm256_add_ps(acc.s[6], _mm256_andnot_ps(mwa, wb_));
      acc.s[7] = _mm256_add_ps(acc.s[7], _mm256_and_ps(mwa, wa_));
    }
  }
  return acc;
}

// Lanes j and j + 8 (the halves), then j + 4, j + 2, j + 1.
inline float phase_reduce(__m256 lo, __m256 hi) {
  const __m256 v8 = _mm256_add_ps(lo, hi);
  const __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
  const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
  return _mm_cvtss_f32(_mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1)));
}

void phase_gemm_avx2(const PhaseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                     int64_t r1) {
  phase_gemm_driver(w, x, n, y, ldy, r0, r1,
                    [](const BlockPhase* row, int64_t nb, const float* a, const float* b, float S[8]) {
                      const PhaseSums lo = phase_half(row, nb, a, b, 0), hi = phase_half(row, nb, a, b, 1);
                      for (int g = 0; g < 8; ++g) S[g] = phase_reduce(lo.s[g], hi.s[g]);
                    });
}

}  // namespace
}  // namespace tern::kernels_detail
