// Fairy2i's phase kernel on int8 activations for AVX-512 VNNI (kernels.h
// PhaseGemmI8): the fused pass of avx512_phase.h with vpdpbusd doing 64
// multiply-adds per instruction where the float kernel's masked add does 16.
//
// vpdpbusd multiplies unsigned bytes by signed ones, so each sub-product's
// weights go in as t + 1 in {0, 1, 2} (t in {-1, 0, +1}) against the signed
// activations, and the sum of the activations comes off at the end (it is
// computed once per call and vector, not per row). Per 64 complex columns
// the two bit planes of U become Tr_U + 1 and Ti_U + 1 in three byte blends
// straight from k registers: sign picks 0 or 2, then the axis bit puts 1
// where the entry belongs to the other axis. W the same; then eight
// vpdpbusd per vector. The sums are integers, so neither the lane layout
// nor the reduction order matters: every set gets the same ones.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "../code_layout.h"
#include "../phase_driver.h"
#include "avx2_phase_i8.h"
#include "tern/phase.h"

namespace tern::kernels_detail {
namespace {

// One row and stage against V vectors q + v * stride; qsum[2 v] and
// qsum[2 v + 1] are the sums of vector v's a and b halves.
template <int V>
inline void phase_sums_i8_avx512(const BlockPhase* row, int64_t nb, const int8_t* q, int64_t stride,
                                 const int32_t* qsum, int32_t (*S)[8]) {
  const int64_t K = nb * kPhaseBlock;
  const __m512i one = _mm512_set1_epi8(1), two = _mm512_set1_epi8(2), zero = _mm512_setzero_si512();
  __m512i acc[V][8];
  for (int v = 0; v < V; ++v)
    for (auto& s : acc[v]) s = _mm512_setzero_si512();
  for (int64_t blk = 0; blk < nb; ++blk) {
    const BlockPhase& p = row[blk];
    const __mmask64 ua = _cvtu64_mask64(p.u_axis), wa = _cvtu64_mask64(p.w_axis);
    const __m512i tu = _mm512_mask_blend_epi8(_cvtu64_mask64(p.u_sign), two, zero);
    const __m512i tw = _mm512_mask_blend_epi8(_cvtu64_mask64(p.w_sign), two, zero);
    const __m512i tru = _mm512_mask_blend_epi8(ua, tu, one), tiu = _mm512_mask_blend_epi8(ua, one, tu);
    const __m512i trw = _mm512_mask_blend_epi8(wa, tw, one), tiw = _mm512_mask_blend_epi8(wa, one, tw);
    for (int v = 0; v < V; ++v) {
      const __m512i a = _mm512_loadu_si512(q + v * stride + blk * kPhaseBlock);
      const __m512i b = _mm512_loadu_si512(q + v * stride + K + blk * kPhaseBlock);
      phase_products(acc[v], tru, tiu, trw, tiw, a, b,
                     [](__m512i s, __m512i u, __m512i x) { return _mm512_dpbusd_epi32(s, u, x); });
      // Without this, GCC 12 copies each accumulator before its vpdpbusd
      // and back after (16 moves per block, 1.5x the loop's time); the
      // empty asm pins every sum to one register.
      for (auto& s : acc[v]) __asm__("" : "+v"(s));
    }
  }
  for (int v = 0; v < V; ++v) {
    __m256i h[8];
    for (int j = 0; j < 8; ++j)
      h[j] = _mm256_add_epi32(_mm512_castsi512_si256(acc[v][j]), _mm512_extracti64x4_epi64(acc[v][j], 1));
    phase_store_sums(phase_reduce8_epi32(h), qsum[2 * v], qsum[2 * v + 1], S[v]);
  }
}

// 256-bit vpdpbusd (AVX512-VNNI with VL) for the input totals.
struct Dpbusd256 {
  static inline __m256i dot(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
};

void phase_gemm_i8_avx512(const PhaseMatrix& w, const int8_t* xq, int64_t n, const int* digits,
                          const float* xscale, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  const int32_t* qsum = nullptr;
  // Two vectors per pass, for the two digits of an int16 input (GCC 12
  // spills some of their sixteen accumulators: git show d2934d8:docs/PERFORMANCE.md,
  // "Int8 and int16 inputs").
  phase_gemm_i8_driver<2>(
      w, xq, n, digits, xscale, y, ldy, r0, r1,
      [&](const BlockPhase* row, int64_t nb, const int8_t* q, int64_t stride, int count, int32_t(*S)[8]) {
        const int32_t* qs = qsum + 2 * ((q - xq) / stride);
        if (count == 2) phase_sums_i8_avx512<2>(row, nb, q, stride, qs, S);
        else phase_sums_i8_avx512<1>(row, nb, q, stride, qs, S);
      },
      [&](int64_t nq) { qsum = phase_input_totals<Dpbusd256>(xq, nq, w.cols); });
}

}  // namespace
}  // namespace tern::kernels_detail
