// Fairy2i's fused phase kernel for AVX2 (kernels.h PhaseGemm), shared by the
// avx2 and avx2-vnni sets: one pass per complex row and stage computes all
// eight sub-products from the FAIRY2I bit planes as they are stored, which
// the unfused scalar kernel reads eight times.
//
// A plane's 32-bit word is broadcast and shifted left per lane (vpsllvd) so
// that column j's bit lands in bit 31 of its lane, which is all vblendvps
// reads: the sign plane picks x or a pre-negated copy of x (FairyFuse's
// trick: the minus signs become adds), the axis plane picks that or zero
// for the real-axis and the imaginary-axis sums. Adding +0 leaves a lane
// unchanged (a lane that starts at +0 can never become -0), so the sums are
// the scalar kernel's masked sums exactly.
//
// Sixteen accumulators (eight sums of 16 lanes) would take every ymm
// register, so a row runs twice per stage: lanes 0..7 of every sum (columns
// 16g .. 16g + 7), then lanes 8..15; the second pass finds the row's planes
// and the input in cache. The reduction then adds lane j and j + 8 (the two
// passes' vectors), j + 4, j + 2, j + 1, as kernels.h orders it.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "../kernel_sets.h"
#include "tern/phase.h"

namespace tern::kernels_detail {
namespace {

// The eight sums of kernels.h's order, one 8-lane half of each.
struct PhaseSums {
  __m256 s[8];
};

// Lanes `half` * 8 .. + 7 of the sums of one row and stage; x = a, then b.
inline PhaseSums phase_half(const BlockPhase* row, int64_t nb, const float* a, const float* b, int half) {
  const __m256 zero = _mm256_setzero_ps(), neg = _mm256_set1_ps(-0.0f);
  // Bit 8 * half + lane, or that plus 16, moved to bit 31.
  const __m256i lo = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
  const __m256i sh[2] = {_mm256_sub_epi32(lo, _mm256_set1_epi32(8 * half)),
                         _mm256_sub_epi32(lo, _mm256_set1_epi32(8 * half + 16))};
  PhaseSums acc;
  for (auto& v : acc.s) v = zero;
  for (int64_t blk = 0; blk < nb; ++blk) {
    const auto* planes = reinterpret_cast<const uint32_t*>(row + blk);  // u_axis, u_sign, w_axis, w_sign
    for (int word = 0; word < 2; ++word) {  // 32 columns per 32-bit word
      const __m256i ua = _mm256_set1_epi32(int(planes[0 + word])), us = _mm256_set1_epi32(int(planes[2 + word]));
      const __m256i wa = _mm256_set1_epi32(int(planes[4 + word])), ws = _mm256_set1_epi32(int(planes[6 + word]));
      for (int g = 0; g < 2; ++g) {  // the 16-column groups of the word
        const int64_t col = blk * kPhaseBlock + word * 32 + g * 16 + half * 8;
        const __m256 xa = _mm256_loadu_ps(a + col), xb = _mm256_loadu_ps(b + col);
        const __m256 na = _mm256_xor_ps(xa, neg), nb_ = _mm256_xor_ps(xb, neg);
        const __m256 mua = _mm256_castsi256_ps(_mm256_sllv_epi32(ua, sh[g]));
        const __m256 mus = _mm256_castsi256_ps(_mm256_sllv_epi32(us, sh[g]));
        const __m256 mwa = _mm256_castsi256_ps(_mm256_sllv_epi32(wa, sh[g]));
        const __m256 mws = _mm256_castsi256_ps(_mm256_sllv_epi32(ws, sh[g]));
        const __m256 ua_ = _mm256_blendv_ps(xa, na, mus), ub_ = _mm256_blendv_ps(xb, nb_, mus);
        const __m256 wa_ = _mm256_blendv_ps(xa, na, mws), wb_ = _mm256_blendv_ps(xb, nb_, mws);
        // TrUa, TiUb, TrWa, TiWb, TrUb, TiUa, TrWb, TiWa
        acc.s[0] = _mm256_add_ps(acc.s[0], _mm256_blendv_ps(ua_, zero, mua));
        acc.s[1] = _mm256_add_ps(acc.s[1], _mm256_blendv_ps(zero, ub_, mua));
        acc.s[2] = _mm256_add_ps(acc.s[2], _mm256_blendv_ps(wa_, zero, mwa));
        acc.s[3] = _mm256_add_ps(acc.s[3], _mm256_blendv_ps(zero, wb_, mwa));
        acc.s[4] = _mm256_add_ps(acc.s[4], _mm256_blendv_ps(ub_, zero, mua));
        acc.s[5] = _mm256_add_ps(acc.s[5], _mm256_blendv_ps(zero, ua_, mua));
        acc.s[6] = _mm256_add_ps(acc.s[6], _mm256_blendv_ps(wb_, zero, mwa));
        acc.s[7] = _mm256_add_ps(acc.s[7], _mm256_blendv_ps(zero, wa_, mwa));
      }
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

inline float fma1(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

void phase_gemm_avx2(const PhaseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                     int64_t r1) {
  check_phase_call(w, n, ldy, r0, r1);
  const int64_t M = w.rows, K = w.cols, nb = K / kPhaseBlock;
  const auto* blocks = reinterpret_cast<const BlockPhase*>(w.data);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t i = 0; i < n; ++i) {
      const float* a = x + i * 2 * K;
      float* out = y + i * ldy;
      for (int st = 0; st < w.stages; ++st) {
        const BlockPhase* row = blocks + (st * M + r) * nb;
        const PhaseSums lo = phase_half(row, nb, a, a + K, 0), hi = phase_half(row, nb, a, a + K, 1);
        float S[8];
        for (int g = 0; g < 8; ++g) S[g] = phase_reduce(lo.s[g], hi.s[g]);
        const float* s = w.scales + 4 * st;
        float re = s[kUre] * S[0];
        re = fma1(-s[kUim], S[1], re);
        re = fma1(s[kWre], S[2], re);
        re = fma1(s[kWim], S[3], re);
        float im = s[kUre] * S[4];
        im = fma1(s[kUim], S[5], im);
        im = fma1(-s[kWre], S[6], im);
        im = fma1(s[kWim], S[7], im);
        out[r] = st == 0 ? re : out[r] + re;
        out[M + r] = st == 0 ? im : out[M + r] + im;
      }
    }
}

}  // namespace
}  // namespace tern::kernels_detail
