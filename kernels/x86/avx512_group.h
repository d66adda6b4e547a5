// Group-scaled rows (kernels.h GroupGemmI8) at 512 bits in the AVX-512
// sets: one token (the decode step) eight rows at a time, short batches
// four rows at a time sharing each row's codes; prompts of 16+ tokens in
// avx512_group_tile.h.
//
// A step here is 64 code bytes, 256 weights: two PQ2_0 blocks, or four
// Q2_0 blocks, one per 128-bit lane. The activations are laid out as
// avx2_group.h's planes, two of its steps side by side, so plane k of a
// step is one 64-byte load against the codes' bits 2k. In the decode
// kernel eight rows go through a step together, each plane load serving
// all of them; their lane sums are reduced to one int32 per (group, row)
// and each group's digits are combined and scaled straight away, eight
// rows in one register of doubles, in increasing group order, so the bits
// are the scalar set's (kernels.h) and no sums go to memory. Eight rows
// rather than four halve the reduction and scaling per row, which cost as
// much as the products; the scales are read with scalar loads, which beat
// a gather (docs/PERFORMANCE.md, "Kernels").
//
// Exactness: an int32 lane sums 16 products of a code (at most 3) and a
// byte, a group's sum of one digit is at most 2 * 127 * 128 in magnitude,
// and the digits' number stays below 2^31 (exact in double).
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../code_layout.h"
#include "../kernel_sets.h"
#include "avx2_group.h"
#include "avx512_group_tile.h"
#include "prefetch.h"
#include "tern/quant_group.h"

namespace tern::kernels_detail {
namespace {

constexpr int64_t kGroupStep512 = 2 * kGroupStep;  // weights per 64 code bytes

// vpdpbusd at 512 bits.
struct GroupDpbusd512 {
  static inline __m512i dot(__m512i acc, __m512i u, __m512i s) { return _mm512_dpbusd_epi32(acc, u, s); }
  using Tile = TileDpbusd;
};
// vpmaddubsw + vpmaddwd (AVX512BW without VNNI): a pair sum is at most
// 2 * 3 * 128 in magnitude, far inside int16.
struct GroupMaddubs512 {
  static inline __m512i dot(__m512i acc, __m512i u, __m512i s) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
  }
  using Tile = TileMaddubs;
};

// Row `row`'s 64 code bytes of step s: blocks 2s, 2s + 1 (PQ2_0) or 4s ..
// 4s + 3 (Q2_0); a block past the row reads as code 1, weight 0.
inline __m512i group_step_codes512(const uint8_t* row, int64_t s, int64_t G, bool q2_0) {
  const __m128i zero_weights = _mm_set1_epi8(0x55);
  if (!q2_0) {
    const __m256i lo = _mm256_loadu_si256((const __m256i*)(row + 2 * s * 34 + 2));
    const __m256i hi = 2 * s + 1 < G ? _mm256_loadu_si256((const __m256i*)(row + (2 * s + 1) * 34 + 2))
                                     : _mm256_set_m128i(zero_weights, zero_weights);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  __m128i b[4];
  for (int j = 0; j < 4; ++j)
    b[j] = 4 * s + j < G ? _mm_loadu_si128((const __m128i*)(row + (4 * s + j) * 18 + 2)) : zero_weights;
  const __m256i lo = _mm256_set_m128i(b[1], b[0]), hi = _mm256_set_m128i(b[3], b[2]);
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// Four rows' lane sums -> per 128-bit lane [row 0, 1, 2, 3] (each the sum
// of that lane's four int32 of the row).
inline __m512i reduce_rows4(const __m512i a[4]) {
  const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]), _mm512_unpackhi_epi32(a[0], a[1]));
  const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]), _mm512_unpackhi_epi32(a[2], a[3]));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
}

// Lays out one token's ND digit vectors: [ND][steps][4][64] planes, and
// each group's sum of x per digit.
template <int ND>
void group_planes512(const int8_t* xq, int64_t K, int group, int64_t steps, int8_t* planes, int32_t* xsum) {
  const int64_t G = K / group, vstride = steps * kGroupStep512;
  alignas(32) int8_t tail[kGroupStep];
  for (int v = 0; v < ND; ++v) {
    const int8_t* x = xq + v * K;
    for (int64_t s = 0; s < 2 * steps; ++s) {  // the 256-bit kernel's steps, two per 512-bit step
      int8_t* dst = planes + v * vstride + (s / 2) * kGroupStep512 + (s % 2) * 32;
      if (s * kGroupStep >= K) {
        for (int k = 0; k < 4; ++k) std::memset(dst + 64 * k, 0, 32);
        continue;
      }
      const int8_t* src = x + s * kGroupStep;
      if ((s + 1) * kGroupStep > K) {
        std::memset(tail, 0, sizeof tail);
        std::memcpy(tail, src, size_t(K - s * kGroupStep));
        src = tail;
      }
      group_step_planes(src, dst, 64);
    }
    group_x_sums(x, G, group, xsum + v * G);
  }
}

constexpr int kGroupGemvRows = 8;

// Eight rows' lane sums (a[rr]: 16 int32 of row rr, 128-bit lane j the
// sums of group j of a Q2_0 step or half of group j / 2 of a PQ2_0 one)
// -> out[j] = group j's eight row sums in row order, j < 4 (Q2_0) or 2.
template <bool Q2>
inline void reduce_rows8(const __m512i a[8], __m256i out[4]) {
  const __m512i X = reduce_rows4(a), Y = reduce_rows4(a + 4);  // lane j: [row 0..3], [row 4..7]
  // [X.lane j, Y.lane j] for j = 0, 1 and for j = 2, 3.
  const __m512i j01 = _mm512_permutex2var_epi32(X, _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23), Y);
  const __m512i j23 =
      _mm512_permutex2var_epi32(X, _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31), Y);
  if constexpr (Q2) {
    out[0] = _mm512_castsi512_si256(j01);
    out[1] = _mm512_extracti64x4_epi64(j01, 1);
    out[2] = _mm512_castsi512_si256(j23);
    out[3] = _mm512_extracti64x4_epi64(j23, 1);
  } else {  // PQ2_0: group 0 is lanes 0 and 1, group 1 lanes 2 and 3
    out[0] = _mm256_add_epi32(_mm512_castsi512_si256(j01), _mm512_extracti64x4_epi64(j01, 1));
    out[1] = _mm256_add_epi32(_mm512_castsi512_si256(j23), _mm512_extracti64x4_epi64(j23, 1));
  }
}

// Group g's fp16 scales of eight rows as doubles.
inline __m512d group_scales_rows8(const uint8_t* const rows[8], int64_t at) {
  return _mm512_cvtps_pd(_mm256_cvtph_ps(group_scales8_fp16(rows, at)));
}

// One token of ND digit vectors: y[r] for r in [r0, r1), eight rows at a
// time (a last block short of eight repeats its last row and stores only
// its own). The digits are combined per int32 lane before the lanes are
// summed (255 a + b: at most 255 * 16 * 3 * 128 < 2^21 per lane for ND <=
// 2, so a group's eight lanes stay exact in int32); a third digit is
// reduced apart and combined in double.
template <class Dot, int ND, bool Q2>
void group_gemv_i8_avx512(const GroupMatrix& w, const int8_t* xq, float xscale, float* y, int64_t r0, int64_t r1) {
  constexpr int per_step = Q2 ? 4 : 2;  // groups in a step
  constexpr int NL = ND == 3 ? 2 : 1;   // lane sums kept apart until double
  constexpr int R = kGroupGemvRows;
  const int64_t K = w.cols, G = w.groups(), steps = (K + kGroupStep512 - 1) / kGroupStep512;
  const int64_t bb = group_block_bytes(w.group), rb = G * bb, vstride = steps * kGroupStep512;
  const GroupToken tok = group_token_scratch(ND, vstride, G);
  group_planes512<ND>(xq, K, w.group, steps, tok.planes, tok.xsum);
  group_token_sums(tok, ND, G);
  const int8_t* planes = tok.planes;
  const double* xnum = tok.xnum;
  const __m512i m3 = _mm512_set1_epi8(3);
  const float inv = 1.0f / xscale;
  for (int64_t rb0 = r0; rb0 < r1; rb0 += R) {
    const int nrows = int(std::min<int64_t>(R, r1 - rb0));
    const uint8_t* rows[R];
    for (int rr = 0; rr < R; ++rr) rows[rr] = w.data + (rb0 + std::min(rr, nrows - 1)) * rb;
    __m512d acc = _mm512_setzero_pd();  // [row 0..7]
    for (int64_t s = 0; s < steps; ++s) {
      __m512i p[ND][4];
      for (int v = 0; v < ND; ++v)
        for (int k = 0; k < 4; ++k)
          p[v][k] = _mm512_loadu_si512((const void*)(planes + v * vstride + s * kGroupStep512 + 64 * k));
      __m512i a[NL][R];
      for (int rr = 0; rr < R; ++rr) {
        // The block's rows lie back to back: one prefetch stream ahead of them.
        prefetch_tile_linear(w.data + rb0 * rb, rb, R, rr, s * per_step * bb);
        const __m512i codes = group_step_codes512(rows[rr], s, G, Q2);
        const __m512i c[4] = {_mm512_and_si512(codes, m3), _mm512_and_si512(_mm512_srli_epi16(codes, 2), m3),
                              _mm512_and_si512(_mm512_srli_epi16(codes, 4), m3),
                              _mm512_and_si512(_mm512_srli_epi16(codes, 6), m3)};
        __m512i t[ND];
        for (int v = 0; v < ND; ++v) {
          t[v] = Dot::dot(_mm512_setzero_si512(), c[0], p[v][0]);
          for (int k = 1; k < 4; ++k) t[v] = Dot::dot(t[v], c[k], p[v][k]);
        }
        if constexpr (ND == 1) {
          a[0][rr] = t[0];
        } else {  // 255 t0 + t1 (and t2 apart)
          a[0][rr] = _mm512_add_epi32(_mm512_sub_epi32(_mm512_slli_epi32(t[0], 8), t[0]), t[1]);
          if constexpr (NL == 2) a[1][rr] = t[2];
        }
      }
      __m256i g[NL][4];
      for (int l = 0; l < NL; ++l) reduce_rows8<Q2>(a[l], g[l]);
      const int64_t g0 = s * per_step;
      for (int j = 0; j < per_step; ++j) {
        if (g0 + j >= G) break;
        __m512d num = _mm512_cvtepi32_pd(g[0][j]);
        if constexpr (NL == 2) num = _mm512_fmadd_pd(num, _mm512_set1_pd(255.0), _mm512_cvtepi32_pd(g[1][j]));
        // The exact integer group sum: less the codes' +1 times the group's x.
        num = _mm512_sub_pd(num, _mm512_set1_pd(xnum[g0 + j]));
        acc = _mm512_fmadd_pd(num, group_scales_rows8(rows, (g0 + j) * bb), acc);
      }
    }
    alignas(32) float out[R];
    _mm256_store_ps(out, _mm256_mul_ps(_mm512_cvtpd_ps(acc), _mm256_set1_ps(inv)));
    for (int rr = 0; rr < nrows; ++rr) y[rb0 + rr] = out[rr];
  }
}

// A batch of tokens (prompts): per block of four rows and step, the rows'
// codes are split once into sixteen registers and every vector of every
// token meets them; S [vector][Gp][row] gets each group's exact sum less
// its sum of x, and group_block_tokens scales them per token in order.
template <class Dot, bool Q2>
void group_batch_i8_avx512(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                           float* y, int64_t ldy, int64_t r0, int64_t r1) {
  constexpr int per_step = Q2 ? 4 : 2;
  const int64_t K = w.cols, G = w.groups(), steps = (K + kGroupStep512 - 1) / kGroupStep512;
  const int64_t bb = group_block_bytes(w.group), rb = G * bb, vstride = steps * kGroupStep512;
  const int64_t Gp = steps * per_step;  // S rows of whole steps
  int64_t nq = 0;
  for (int64_t i = 0; i < n; ++i) nq += digits[i];
  // Slot 1: [nq][steps][4][64] planes, [nq][G] group sums of x; slot 0:
  // [G][4] a block's scales, [nq][Gp][4] its sums.
  uint8_t* buf = thread_scratch(1, size_t(nq * vstride) + size_t(nq * G) * 4);
  int8_t* planes = reinterpret_cast<int8_t*>(buf);
  int32_t* xsum = reinterpret_cast<int32_t*>(buf + nq * vstride);
  for (int64_t v = 0; v < nq; ++v)
    group_planes512<1>(xq + v * K, K, w.group, steps, planes + v * vstride, xsum + v * G);
  uint8_t* scratch = thread_scratch(0, size_t(G * kGroupRows) * 8 + size_t(nq * Gp * kGroupRows) * 4);
  double* D = reinterpret_cast<double*>(scratch);
  int32_t* S = reinterpret_cast<int32_t*>(scratch + G * kGroupRows * 8);
  const __m512i m3 = _mm512_set1_epi8(3);
  for (int64_t rb0 = r0; rb0 < r1; rb0 += kGroupRows) {
    const int nrows = int(std::min<int64_t>(kGroupRows, r1 - rb0));
    const uint8_t* rows[4];
    for (int rr = 0; rr < 4; ++rr) rows[rr] = w.data + (rb0 + std::min(rr, nrows - 1)) * rb;
    group_block_scales(rows, G, bb, D);
    for (int64_t s = 0; s < steps; ++s) {
      __m512i c[4][4];
      for (int rr = 0; rr < 4; ++rr) {
        const __m512i codes = group_step_codes512(rows[rr], s, G, Q2);
        c[rr][0] = _mm512_and_si512(codes, m3);
        c[rr][1] = _mm512_and_si512(_mm512_srli_epi16(codes, 2), m3);
        c[rr][2] = _mm512_and_si512(_mm512_srli_epi16(codes, 4), m3);
        c[rr][3] = _mm512_and_si512(_mm512_srli_epi16(codes, 6), m3);
      }
      const int64_t g0 = s * per_step;
      for (int64_t v = 0; v < nq; ++v) {
        const int8_t* pv = planes + v * vstride + s * kGroupStep512;
        __m512i p[4];
        for (int k = 0; k < 4; ++k) p[k] = _mm512_loadu_si512((const void*)(pv + 64 * k));
        __m512i a[4];
        for (int rr = 0; rr < 4; ++rr) {
          a[rr] = Dot::dot(_mm512_setzero_si512(), c[rr][0], p[0]);
          for (int k = 1; k < 4; ++k) a[rr] = Dot::dot(a[rr], c[rr][k], p[k]);
        }
        __m512i r = reduce_rows4(a);
        if constexpr (!Q2) r = _mm512_add_epi32(r, _mm512_shuffle_i32x4(r, r, _MM_SHUFFLE(2, 3, 0, 1)));
        int32_t* out = S + (v * Gp + g0) * kGroupRows;
        const int32_t* xs = xsum + v * G;
        const auto put = [&](int j, __m128i lane) {  // group g0 + j, if the row has it
          if (g0 + j < G) _mm_storeu_si128((__m128i*)(out + j * kGroupRows), _mm_sub_epi32(lane, _mm_set1_epi32(xs[g0 + j])));
        };
        if constexpr (Q2) {
          put(0, _mm512_castsi512_si128(r));
          put(1, _mm512_extracti32x4_epi32(r, 1));
          put(2, _mm512_extracti32x4_epi32(r, 2));
          put(3, _mm512_extracti32x4_epi32(r, 3));
        } else {
          put(0, _mm512_castsi512_si128(r));
          put(1, _mm512_extracti32x4_epi32(r, 2));
        }
      }
    }
    group_block_tokens(S, Gp, G, D, n, digits, xscale, y, ldy, rb0, nrows);
  }
}

// The set's entry: one token through the GEMV, prompts of 16+ tokens
// through the tile (avx512_group_tile.h), the batches between through the
// four-row batch kernel; all at 512 bits.
template <class Dot>
void group_gemm_i8_avx512(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                          float* y, int64_t ldy, int64_t r0, int64_t r1) {
  check_group_call(w, n, ldy, r0, r1);
  if (group_decode(w, n, digits, [&](auto nd, auto q2) {
        group_gemv_i8_avx512<Dot, decltype(nd)::value, decltype(q2)::value>(w, xq, xscale[0], y, r0, r1);
      }))
    return;
  if (n >= kGroupTileMinTokens) group_tile_i8<typename Dot::Tile>(w, xq, n, digits, xscale, y, ldy, r0, r1);
  else if (w.group == 64) group_batch_i8_avx512<Dot, true>(w, xq, n, digits, xscale, y, ldy, r0, r1);
  else group_batch_i8_avx512<Dot, false>(w, xq, n, digits, xscale, y, ldy, r0, r1);
}

}  // namespace
}  // namespace tern::kernels_detail
