// Fairy2i's fused phase kernel for AVX2 (kernels.h PhaseGemm), shared by the
// avx2 and avx2-vnni sets: one pass per complex row and stage computes all
// eight sub-products from the FAIRY2I bit planes as they are stored, which
// the unfused scalar kernel reads eight times.
//
// A plane's 32-bit word is broadcast and shifted left per lane (vpsllvd) so
// that column j's bit lands in bit 31 of its lane: the sign plane's bit is
// then the float sign bit to flip (FairyFuse's pre-negation, as one xor:
// the minus signs become adds), and the axis plane's, spread over the lane
// by an arithmetic shift, keeps or zeroes the signed input for the
// real-axis and the imaginary-axis sums. Only logic ops and adds, no
// blends (one port on many cores). Adding +0 leaves a lane unchanged (a
// lane that starts at +0 can never become -0), so the sums are the scalar
// kernel's masked sums exactly.
//
// Sixteen accumulators (eight sums of 16 lanes) would take every ymm
// register and spill, so a row runs four passes per stage, one per matrix
// (U, W) and lane half (columns 16g .. 16g + 7, then 16g + 8 .. 16g + 15),
// each with four accumulators; the later passes find the row's planes and
// the input in cache. The reduction then adds lane j and j + 8 (the two
// passes' vectors), j + 4, j + 2, j + 1, as kernels.h orders it.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "../kernel_sets.h"
#include "tern/phase.h"

namespace tern::kernels_detail {
namespace {

// Lanes `half` * 8 .. + 7 of one matrix's four sums (matrix 0: U, 1: W),
// in the order T_r a, T_i b, T_r b, T_i a; x = a, then b.
struct MatrixSums {
  __m256 ra, ib, rb, ia;
};

inline MatrixSums phase_pass(const BlockPhase* row, int64_t nb, const float* a, const float* b, int half,
                             int matrix) {
  const __m256 zero = _mm256_setzero_ps(), neg = _mm256_set1_ps(-0.0f);
  // Bit 8 * half + lane, or that plus 16, moved to bit 31.
  const __m256i lo = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
  const __m256i sh0 = _mm256_sub_epi32(lo, _mm256_set1_epi32(8 * half));
  const __m256i sh1 = _mm256_sub_epi32(sh0, _mm256_set1_epi32(16));
  MatrixSums acc{zero, zero, zero, zero};
  for (int64_t blk = 0; blk < nb; ++blk) {
    // The block's 32-bit words: u_axis, u_sign, w_axis, w_sign, two each.
    const auto* words = reinterpret_cast<const uint32_t*>(row + blk) + 4 * matrix;
    for (int word = 0; word < 2; ++word) {  // 32 columns per word
      const __m256i axis = _mm256_set1_epi32(int(words[word])), sign = _mm256_set1_epi32(int(words[2 + word]));
      for (int g = 0; g < 2; ++g) {  // its 16-column groups
        const __m256i sh = g ? sh1 : sh0;
        const int64_t col = blk * kPhaseBlock + word * 32 + g * 16 + half * 8;
        const __m256 xa = _mm256_loadu_ps(a + col), xb = _mm256_loadu_ps(b + col);
        // Full-lane axis mask; the sign plane's bit is already the sign bit.
        const __m256 ma = _mm256_castsi256_ps(_mm256_srai_epi32(_mm256_sllv_epi32(axis, sh), 31));
        const __m256 ms = _mm256_and_ps(_mm256_castsi256_ps(_mm256_sllv_epi32(sign, sh)), neg);
        const __m256 sa = _mm256_xor_ps(xa, ms), sb = _mm256_xor_ps(xb, ms);
        acc.ra = _mm256_add_ps(acc.ra, _mm256_andnot_ps(ma, sa));
        acc.ib = _mm256_add_ps(acc.ib, _mm256_and_ps(ma, sb));
        acc.rb = _mm256_add_ps(acc.rb, _mm256_andnot_ps(ma, sb));
        acc.ia = _mm256_add_ps(acc.ia, _mm256_and_ps(ma, sa));
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
        const MatrixSums u0 = phase_pass(row, nb, a, a + K, 0, 0), u1 = phase_pass(row, nb, a, a + K, 1, 0);
        const MatrixSums w0 = phase_pass(row, nb, a, a + K, 0, 1), w1 = phase_pass(row, nb, a, a + K, 1, 1);
        // TrUa, TiUb, TrWa, TiWb, TrUb, TiUa, TrWb, TiWa
        const float S[8] = {phase_reduce(u0.ra, u1.ra), phase_reduce(u0.ib, u1.ib), phase_reduce(w0.ra, w1.ra),
                            phase_reduce(w0.ib, w1.ib), phase_reduce(u0.rb, u1.rb), phase_reduce(u0.ia, u1.ia),
                            phase_reduce(w0.rb, w1.rb), phase_reduce(w0.ia, w1.ia)};
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
