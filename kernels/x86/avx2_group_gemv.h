// Group-scaled rows (kernels.h GroupGemmI8) for one token at 256 bits, the
// decode step of the AVX2 sets; the AVX-512 sets have avx512_group.h. The
// planes and codes are avx2_group.h's (a step is one PQ2_0 block, or two
// Q2_0 blocks); as in avx512_group.h a token's digits are combined per
// int32 lane, four rows are summed with unpacks, and each group's scale is
// applied in double at once, in increasing group order: the scalar set's
// bits, and no sums through memory.
//
// Exactness: a lane of Dot::dot4 sums 16 products of a code (at most 3)
// and a byte, so 255 a + b stays below 2^21 and a group's lanes sum
// exactly in int32.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../code_layout.h"
#include "../kernel_sets.h"
#include "avx2_group.h"
#include "avx2_group_tile.h"
#include "prefetch.h"

namespace tern::kernels_detail {
namespace {

// Four rows' lane sums -> per 128-bit lane [row 0, 1, 2, 3].
inline __m256i reduce_rows4_256(const __m256i a[4]) {
  const __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(a[0], a[1]), _mm256_unpackhi_epi32(a[0], a[1]));
  const __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(a[2], a[3]), _mm256_unpackhi_epi32(a[2], a[3]));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
}

// One token of ND digit vectors: y[r] for r in [r0, r1).
template <class Dot, int ND, bool Q2>
void group_gemv_i8_avx2(const GroupMatrix& w, const int8_t* xq, float xscale, float* y, int64_t r0, int64_t r1) {
  constexpr int NL = ND == 3 ? 2 : 1;  // lane sums kept apart until double
  const int64_t K = w.cols, G = w.groups(), steps = (K + kGroupStep - 1) / kGroupStep;
  const int64_t bb = group_block_bytes(w.group), rb = G * bb, vstride = steps * kGroupStep;
  const GroupToken tok = group_token_scratch(ND, vstride, G);
  group_planes(xq, ND, K, w.group, steps, tok.planes, tok.xsum);
  group_token_sums(tok, ND, G);
  const int8_t* planes = tok.planes;
  const double* xnum = tok.xnum;
  const float inv = 1.0f / xscale;
  for (int64_t rb0 = r0; rb0 < r1; rb0 += kGroupRows) {
    const int nrows = int(std::min<int64_t>(kGroupRows, r1 - rb0));
    const uint8_t* rows[4];
    for (int rr = 0; rr < 4; ++rr) rows[rr] = w.data + (rb0 + std::min(rr, nrows - 1)) * rb;
    __m256d acc = _mm256_setzero_pd();
    for (int64_t s = 0; s < steps; ++s) {
      __m256i a[NL][4];
      for (int rr = 0; rr < 4; ++rr) {
        // The block's rows lie back to back: one prefetch stream ahead of them.
        if (s % 2 == 0) prefetch_tile_linear(w.data + rb0 * rb, rb, kGroupRows, rr, s * (Q2 ? 2 : 1) * bb);
        __m256i c[4];
        group_codes(rows[rr], s, G, Q2, c);
        __m256i t[ND];
        for (int v = 0; v < ND; ++v) t[v] = Dot::dot4(c, planes + v * vstride + s * kGroupStep);
        if constexpr (ND == 1) {
          a[0][rr] = t[0];
        } else {  // 255 t0 + t1 (and t2 apart)
          a[0][rr] = _mm256_add_epi32(_mm256_sub_epi32(_mm256_slli_epi32(t[0], 8), t[0]), t[1]);
          if constexpr (NL == 2) a[1][rr] = t[2];
        }
      }
      __m128i lanes[NL][2];
      for (int l = 0; l < NL; ++l) {
        const __m256i r = reduce_rows4_256(a[l]);
        lanes[l][0] = _mm256_castsi256_si128(r);
        lanes[l][1] = _mm256_extracti128_si256(r, 1);
        if constexpr (!Q2) lanes[l][0] = _mm_add_epi32(lanes[l][0], lanes[l][1]);  // a PQ2_0 group is both lanes
      }
      const int64_t g0 = Q2 ? 2 * s : s;
      const int n_here = Q2 ? int(std::min<int64_t>(2, G - g0)) : 1;
      for (int j = 0; j < n_here; ++j) {
        __m256d num = _mm256_cvtepi32_pd(lanes[0][j]);
        if constexpr (NL == 2) num = _mm256_fmadd_pd(num, _mm256_set1_pd(255.0), _mm256_cvtepi32_pd(lanes[1][j]));
        // The exact integer group sum: less the codes' +1 times the group's x.
        num = _mm256_sub_pd(num, _mm256_set1_pd(xnum[g0 + j]));
        acc = _mm256_fmadd_pd(num, group_scales4(rows, (g0 + j) * bb), acc);
      }
    }
    alignas(16) float out[4];
    _mm_store_ps(out, _mm_mul_ps(_mm256_cvtpd_ps(acc), _mm_set1_ps(inv)));
    for (int rr = 0; rr < nrows; ++rr) y[rb0 + rr] = out[rr];
  }
}

// The AVX2 sets' entry: one token through the GEMV, prompts of 16+
// tokens through the tile (avx2_group_tile.h), the batches between
// through the four-row batch kernel.
template <class Dot, int NV = 1>
void group_gemm_i8_avx2_sets(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits,
                             const float* xscale, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  check_group_call(w, n, ldy, r0, r1);
  if (group_decode(w, n, digits, [&](auto nd, auto q2) {
        group_gemv_i8_avx2<Dot, decltype(nd)::value, decltype(q2)::value>(w, xq, xscale[0], y, r0, r1);
      }))
    return;
  if (n >= kGroupTile2MinTokens) group_tile2_i8<typename Tile2Of<Dot>::type>(w, xq, n, digits, xscale, y, ldy, r0, r1);
  else group_gemm_i8_avx2<Dot, NV>(w, xq, n, digits, xscale, y, ldy, r0, r1);
}

}  // namespace
}  // namespace tern::kernels_detail
