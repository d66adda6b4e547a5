// Fairy2i's fused phase kernel for AVX-512 (kernels.h PhaseGemm), FairyFuse's
// second idea: one pass per complex row and stage computes all eight
// sub-products into eight zmm accumulators, and reduces each once per row.
//
// FairyFuse extracts its lane masks with pext from interleaved 2-bit codes.
// FAIRY2I already stores each block as bit planes, so a mask is a 16-bit
// load straight into a k register (kmovw k, m16), with no pext, shift or
// general-register move on the way. The planes are only read here, so
// reading a uint64_t plane as 16-bit masks reorders nothing.
// Each call first writes a negated copy of its input (FairyFuse's
// pre-negation: the minus signs become adds); the sign plane then picks x
// or -x with a blend, and the axis plane routes the signed input with a
// masked add: to the imaginary-axis sum where its bit is set, to the
// real-axis sum (mask complemented, knotw) where it is clear. Blends and
// masked adds are non-destructive in their inputs, so the loop needs no
// register copies (a merge-masked xor would, for every input it flips
// twice). Per 16 complex columns and stage: 4 input loads, 4 mask loads,
// 2 knotw, 4 blends and 8 masked adds.
//
// Lane j of a zmm sum holds columns 16g + j of every block in order, which
// is lane j of the AVX2 kernel's two passes (j < 8: the low pass, else the
// high one), and the reduction adds lane j and j + 8, then j + 4, j + 2,
// j + 1, as kernels.h orders it. A masked-off lane is the scalar kernel's
// add of +0 (a sum that starts at +0 never becomes -0), so every sum is the
// scalar kernel's bit for bit.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "../code_layout.h"
#include "../phase_driver.h"
#include "tern/phase.h"

namespace tern::kernels_detail {
namespace {

inline __mmask16 plane_mask(const uint64_t& plane, int g) {
  // The intrinsic takes a non-const pointer but only reads through it.
  return _load_mask16(const_cast<__mmask16*>(reinterpret_cast<const __mmask16*>(&plane) + g));
}

// Lanes j and j + 8, then j + 4, j + 2, j + 1.
inline float phase_reduce_512(__m512 v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 v8 = _mm256_add_ps(lo, hi);
  const __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
  const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
  return _mm_cvtss_f32(_mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1)));
}

// The eight sums of one row and stage in kernels.h's order: TrUa, TiUb,
// TrWa, TiWb, TrUb, TiUa, TrWb, TiWa. na and nb_ are -a and -b.
inline void phase_sums_avx512(const BlockPhase* row, int64_t nb, const float* a, const float* b,
                              const float* na, const float* nb_, float S[8]) {
  __m512 acc[8];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (int64_t blk = 0; blk < nb; ++blk) {
    const BlockPhase& p = row[blk];
    // Unrolled, GCC renames the accumulators between groups with a
    // register move per masked add.
#pragma GCC unroll 1
    for (int g = 0; g < kPhaseBlock / 16; ++g) {
      const int64_t at = blk * kPhaseBlock + 16 * g;
      const __m512 xa = _mm512_loadu_ps(a + at), xb = _mm512_loadu_ps(b + at);
      const __m512 nxa = _mm512_loadu_ps(na + at), nxb = _mm512_loadu_ps(nb_ + at);
      const __mmask16 mua = plane_mask(p.u_axis, g), mwa = plane_mask(p.w_axis, g);
      const __mmask16 rua = _knot_mask16(mua), rwa = _knot_mask16(mwa);
      const __mmask16 mus = plane_mask(p.u_sign, g), mws = plane_mask(p.w_sign, g);
      const __m512 ua = _mm512_mask_blend_ps(mus, xa, nxa), ub = _mm512_mask_blend_ps(mus, xb, nxb);
      const __m512 wa = _mm512_mask_blend_ps(mws, xa, nxa), wb = _mm512_mask_blend_ps(mws, xb, nxb);
      acc[0] = _mm512_mask_add_ps(acc[0], rua, acc[0], ua);
      acc[1] = _mm512_mask_add_ps(acc[1], mua, acc[1], ub);
      acc[2] = _mm512_mask_add_ps(acc[2], rwa, acc[2], wa);
      acc[3] = _mm512_mask_add_ps(acc[3], mwa, acc[3], wb);
      acc[4] = _mm512_mask_add_ps(acc[4], rua, acc[4], ub);
      acc[5] = _mm512_mask_add_ps(acc[5], mua, acc[5], ua);
      acc[6] = _mm512_mask_add_ps(acc[6], rwa, acc[6], wb);
      acc[7] = _mm512_mask_add_ps(acc[7], mwa, acc[7], wa);
    }
  }
  for (int s = 0; s < 8; ++s) S[s] = phase_reduce_512(acc[s]);
}

// The unfused form, for bench_phase to measure what fusing saves: the
// eight sums of a stage as eight passes, each over four rows at once (four
// independent add chains, as in tern_pext_row_block; one row alone would
// wait on its single chain's latency), loading its masks and input,
// signing and adding. The planes stay in L1 between passes. The sums and
// their order are the fused kernel's.
template <int kPlane, bool kOnB, bool kImaginary>  // kPlane: 0 = U's planes, 2 = W's
inline void unfused_pass(const BlockPhase* const rows[4], int64_t nb, const float* a, const float* b,
                         const float* na, const float* nb_, float out[4]) {
  const float* x = kOnB ? b : a;
  const float* nx = kOnB ? nb_ : na;
  __m512 acc[4];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (int64_t blk = 0; blk < nb; ++blk)
    for (int g = 0; g < kPhaseBlock / 16; ++g) {
      const int64_t at = blk * kPhaseBlock + 16 * g;
      const __m512 xv = _mm512_loadu_ps(x + at), nxv = _mm512_loadu_ps(nx + at);
      for (int r = 0; r < 4; ++r) {
        const uint64_t* planes = &rows[r][blk].u_axis;
        const __mmask16 axis = plane_mask(planes[kPlane], g);
        const __m512 v = _mm512_mask_blend_ps(plane_mask(planes[kPlane + 1], g), xv, nxv);
        acc[r] = _mm512_mask_add_ps(acc[r], kImaginary ? axis : _knot_mask16(axis), acc[r], v);
      }
    }
  for (int r = 0; r < 4; ++r) out[r] = phase_reduce_512(acc[r]);
}

void phase_gemm_avx512_unfused(const PhaseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
                               int64_t r0, int64_t r1, const float* neg) {
  const int64_t M = w.rows, K = w.cols, nb = K / kPhaseBlock;
  const auto* blocks = reinterpret_cast<const BlockPhase*>(w.data);
  for (int64_t i = 0; i < n; ++i) {
    const float *a = x + i * 2 * K, *b = a + K, *na = neg + i * 2 * K, *nb_ = na + K;
    float* out = y + i * ldy;
    for (int64_t r = r0; r < r1; r += 4) {
      const int R = int(std::min<int64_t>(4, r1 - r));
      for (int st = 0; st < w.stages; ++st) {
        const BlockPhase* rows[4];
        for (int k = 0; k < 4; ++k) rows[k] = blocks + (st * M + r + std::min(k, R - 1)) * nb;
        float S[8][4];  // TrUa, TiUb, TrWa, TiWb, TrUb, TiUa, TrWb, TiWa
        unfused_pass<0, false, false>(rows, nb, a, b, na, nb_, S[0]);
        unfused_pass<0, true, true>(rows, nb, a, b, na, nb_, S[1]);
        unfused_pass<2, false, false>(rows, nb, a, b, na, nb_, S[2]);
        unfused_pass<2, true, true>(rows, nb, a, b, na, nb_, S[3]);
        unfused_pass<0, true, false>(rows, nb, a, b, na, nb_, S[4]);
        unfused_pass<0, false, true>(rows, nb, a, b, na, nb_, S[5]);
        unfused_pass<2, true, false>(rows, nb, a, b, na, nb_, S[6]);
        unfused_pass<2, false, true>(rows, nb, a, b, na, nb_, S[7]);
        for (int k = 0; k < R; ++k) {
          const float row_sums[8] = {S[0][k], S[1][k], S[2][k], S[3][k], S[4][k], S[5][k], S[6][k], S[7][k]};
          phase_store(w.scales + 4 * st, row_sums, st, &out[r + k], &out[M + r + k]);
        }
      }
    }
  }
}

// Both forms: the call check and the input's negated copy, then the
// fused form through the shared driver or the unfused one's own loops.
template <bool kFused>
void phase_gemm_avx512(const PhaseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                       int64_t r1) {
  check_phase_call(w, n, ldy, r0, r1);
  const int64_t len = n * 2 * w.cols;
  float* neg = reinterpret_cast<float*>(thread_scratch(1, size_t(len) * sizeof(float)));
  const __m512i sign = _mm512_set1_epi32(INT32_MIN);
  for (int64_t k = 0; k < len; k += 16)  // 2 * cols is a multiple of 128
    _mm512_storeu_si512(neg + k, _mm512_xor_si512(_mm512_loadu_si512(x + k), sign));
  if constexpr (kFused)
    phase_gemm_driver(w, x, n, y, ldy, r0, r1,
                      [&](const BlockPhase* row, int64_t nb, const float* a, const float* b, float S[8]) {
                        phase_sums_avx512(row, nb, a, b, neg + (a - x), neg + (b - x), S);
                      });
  else
    phase_gemm_avx512_unfused(w, x, n, y, ldy, r0, r1, neg);
}

}  // namespace
}  // namespace tern::kernels_detail
