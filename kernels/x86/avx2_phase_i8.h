// Fairy2i's phase kernel on int8 activations for AVX2 (kernels.h
// PhaseGemmI8), the 256-bit form of avx512_phase_i8.h: weights go in as
// t + 1 in {0, 1, 2} against the signed activations, and the sums of the
// activations come off at the end. AVX2 has no byte masks, so each 32 bits
// of a plane become 32 bytes first (broadcast, vpshufb to bring bit j's
// byte to byte j, and with bit j, compare): four such per 32 complex
// columns, then two blends per matrix and eight products. `Dot` is the
// set's unsigned-by-signed byte product into int32 lanes (vpdpbusd with
// AVX-VNNI, else vpmaddubsw and vpmaddwd: a pair is at most 2 * 2 * 127, so
// the int16 step cannot saturate).
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "../code_layout.h"
#include "../phase_driver.h"
#include "tern/phase.h"

namespace tern::kernels_detail {
namespace {

// 0xff in byte j where bit j of `bits` is set, else 0.
inline __m256i phase_bit_bytes(uint32_t bits) {
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                          3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(int32_t(bits)), spread);
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

// Eight 8-lane int32 sums to their eight totals, in order.
inline __m256i phase_reduce8_epi32(const __m256i h[8]) {
  // Lane 0 of q0123 holds the low-half totals of sums 0..3, lane 1 the high.
  const __m256i q0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(h[0], h[1]), _mm256_hadd_epi32(h[2], h[3]));
  const __m256i q4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(h[4], h[5]), _mm256_hadd_epi32(h[6], h[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(q0123, q4567, 0x20),
                          _mm256_permute2x128_si256(q0123, q4567, 0x31));
}

// The sums as integers: S = the products with t + 1, less each sum's input
// total; sums 0, 2, 5 and 7 multiply a (total sa), 1, 3, 4 and 6 b.
inline void phase_store_sums(__m256i totals, int32_t sa, int32_t sb, int32_t S[8]) {
  const __m256i offset = _mm256_setr_epi32(sa, sb, sa, sb, sb, sa, sb, sa);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(S), _mm256_sub_epi32(totals, offset));
}

// One row and stage against one vector q (a, then b at nb * 64).
template <class Dot>
inline void phase_sums_i8_avx2(const BlockPhase* row, int64_t nb, const int8_t* q, int32_t sa, int32_t sb,
                               int32_t S[8]) {
  const int64_t K = nb * kPhaseBlock;
  const __m256i one = _mm256_set1_epi8(1), two = _mm256_set1_epi8(2);
  __m256i acc[8];
  for (auto& s : acc) s = _mm256_setzero_si256();
  for (int64_t blk = 0; blk < nb; ++blk) {
    const BlockPhase& p = row[blk];
    for (int g = 0; g < 2; ++g) {
      const int shift = 32 * g;
      const __m256i ua = phase_bit_bytes(uint32_t(p.u_axis >> shift));
      const __m256i wa = phase_bit_bytes(uint32_t(p.w_axis >> shift));
      const __m256i tu = _mm256_andnot_si256(phase_bit_bytes(uint32_t(p.u_sign >> shift)), two);
      const __m256i tw = _mm256_andnot_si256(phase_bit_bytes(uint32_t(p.w_sign >> shift)), two);
      const __m256i tru = _mm256_blendv_epi8(tu, one, ua), tiu = _mm256_blendv_epi8(one, tu, ua);
      const __m256i trw = _mm256_blendv_epi8(tw, one, wa), tiw = _mm256_blendv_epi8(one, tw, wa);
      const int64_t at = blk * kPhaseBlock + shift;
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + at));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + K + at));
      phase_products(acc, tru, tiu, trw, tiw, a, b, &Dot::dot);
    }
  }
  phase_store_sums(phase_reduce8_epi32(acc), sa, sb, S);
}

// The totals of the halves of nq input vectors of 2 * K values (K a
// multiple of 32), qsum[2 v] and qsum[2 v + 1]: what the t + 1 weights add
// to each sum. Once per call, in the per-thread scratch slot 1; the AVX-512
// kernel uses it too. `Dot` multiplies unsigned by signed bytes.
template <class Dot>
int32_t* phase_input_totals(const int8_t* xq, int64_t nq, int64_t K) {
  auto* qsum = reinterpret_cast<int32_t*>(thread_scratch(1, size_t(2 * nq) * sizeof(int32_t)));
  const __m256i one = _mm256_set1_epi8(1);
  for (int64_t h = 0; h < 2 * nq; ++h) {
    __m256i s = _mm256_setzero_si256();
    for (int64_t k = 0; k < K; k += 32)
      s = Dot::dot(s, one, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + h * K + k)));
    const __m128i f = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    const __m128i g = _mm_add_epi32(f, _mm_shuffle_epi32(f, 0x4e));
    qsum[h] = _mm_cvtsi128_si32(_mm_add_epi32(g, _mm_shuffle_epi32(g, 0xb1)));
  }
  return qsum;
}

template <class Dot>
void phase_gemm_i8_avx2(const PhaseMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                        float* y, int64_t ldy, int64_t r0, int64_t r1) {
  const int32_t* qsum = nullptr;
  // One vector per pass: eight accumulators and the four weight vectors
  // already fill most of the sixteen registers.
  phase_gemm_i8_driver<1>(
      w, xq, n, digits, xscale, y, ldy, r0, r1,
      [&](const BlockPhase* row, int64_t nb, const int8_t* q, int64_t stride, int, int32_t(*S)[8]) {
        const int32_t* qs = qsum + 2 * ((q - xq) / stride);
        phase_sums_i8_avx2<Dot>(row, nb, q, qs[0], qs[1], S[0]);
      },
      [&](int64_t nq) { qsum = phase_input_totals<Dot>(xq, nq, w.cols); });
}

}  // namespace
}  // namespace tern::kernels_detail
