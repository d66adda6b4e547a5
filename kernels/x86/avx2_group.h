// Group-scaled rows (kernels.h GroupGemmI8) at 256 bits, for every x86 set
// (the AVX-512 ones compile it with their flags). A step is 32 code bytes,
// 128 weights: one PQ2_0 block's codes, or two Q2_0 blocks' side by side.
// Code byte b of a step holds weights 4b + k in bits 2k (both types), so
// the activations are laid out once per call as planes: plane k of a step
// holds x[128 s + 4 b + k] at byte b, and a group's sum is
//   sum_k dot(codes >> 2k & 3, plane k) - the group's sum of x
// (the codes are c = w + 1 in 0..3, unsigned, as vpmaddubsw and vpdpbusd
// take them). Four rows go through each step together, so one hadd tree
// gives two groups of all four rows, and the scales are applied four rows
// at a time in double lanes, each row in kernels.h's order: the scalar
// set's bits.
//
// Exactness: with Maddubs a lane of one plane is c0 q0 + c1 q1, |.| <= 6 *
// 128 = 768; four planes add to 3072 < 32767 in int16 before vpmaddwd. A
// group's sum is at most 2 * 127 * 128 in magnitude, so a token's three
// digits combine below 2^31, exactly in double.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../code_layout.h"
#include "../kernel_sets.h"
#include "tern/quant_group.h"

namespace tern::kernels_detail {
namespace {

constexpr int64_t kGroupStep = 128;  // weights per 32 code bytes

// vpmaddubsw: int16 pair sums, added, widened by vpmaddwd.
struct GroupMaddubs {
  static inline __m256i dot4(const __m256i c[4], const int8_t* p) {
    const __m256i a = _mm256_add_epi16(_mm256_maddubs_epi16(c[0], _mm256_loadu_si256((const __m256i*)p)),
                                       _mm256_maddubs_epi16(c[1], _mm256_loadu_si256((const __m256i*)(p + 32))));
    const __m256i b = _mm256_add_epi16(_mm256_maddubs_epi16(c[2], _mm256_loadu_si256((const __m256i*)(p + 64))),
                                       _mm256_maddubs_epi16(c[3], _mm256_loadu_si256((const __m256i*)(p + 96))));
    return _mm256_madd_epi16(_mm256_add_epi16(a, b), _mm256_set1_epi16(1));
  }
};

// vpdpbusd (AVX-VNNI or AVX512-VNNI at 256 bits): Op::dot(acc, u8, s8).
template <class Op>
struct GroupDpbusd {
  static inline __m256i dot4(const __m256i c[4], const int8_t* p) {
    __m256i acc = Op::dot(_mm256_setzero_si256(), c[0], _mm256_loadu_si256((const __m256i*)p));
    acc = Op::dot(acc, c[1], _mm256_loadu_si256((const __m256i*)(p + 32)));
    acc = Op::dot(acc, c[2], _mm256_loadu_si256((const __m256i*)(p + 64)));
    return Op::dot(acc, c[3], _mm256_loadu_si256((const __m256i*)(p + 96)));
  }
};

// The step's 32 code bytes of row `row` (PQ2_0 34-byte blocks, or Q2_0
// 18-byte blocks two at a time; a missing second block reads as code 1,
// weight 0, against zero activations).
inline __m256i group_step_codes(const uint8_t* row, int64_t s, int64_t G, bool q2_0) {
  if (!q2_0) return _mm256_loadu_si256((const __m256i*)(row + s * 34 + 2));
  const __m128i lo = _mm_loadu_si128((const __m128i*)(row + 2 * s * 18 + 2));
  const __m128i hi = 2 * s + 1 < G ? _mm_loadu_si128((const __m128i*)(row + (2 * s + 1) * 18 + 2)) : _mm_set1_epi8(0x55);
  return _mm256_set_m128i(hi, lo);
}

constexpr int kGroupRows = 4;

// Plane k of one step from its 128 activations x: byte b = x[4b + k],
// stored at p + k * kstride.
// Bytes are gathered by k within each 4-byte group of a 16-byte lane
// (vpshufb), dwords by k across the lane pair (vpermd), then the four
// registers' k-th quadwords transposed into plane k.
inline void group_step_planes(const int8_t* x, int8_t* p, int64_t kstride = 32) {
  const __m256i by_k = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,  //
                                        0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m256i pairs = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256i r[4];
  for (int i = 0; i < 4; ++i)
    r[i] = _mm256_permutevar8x32_epi32(
        _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i*)(x + 32 * i)), by_k), pairs);
  const __m256i t0 = _mm256_unpacklo_epi64(r[0], r[1]), t1 = _mm256_unpackhi_epi64(r[0], r[1]);
  const __m256i t2 = _mm256_unpacklo_epi64(r[2], r[3]), t3 = _mm256_unpackhi_epi64(r[2], r[3]);
  _mm256_storeu_si256((__m256i*)p, _mm256_permute2x128_si256(t0, t2, 0x20));
  _mm256_storeu_si256((__m256i*)(p + kstride), _mm256_permute2x128_si256(t1, t3, 0x20));
  _mm256_storeu_si256((__m256i*)(p + 2 * kstride), _mm256_permute2x128_si256(t0, t2, 0x31));
  _mm256_storeu_si256((__m256i*)(p + 3 * kstride), _mm256_permute2x128_si256(t1, t3, 0x31));
}

// The sum of n (a multiple of 32) signed bytes: vpsadbw of x + 128.
inline int32_t group_byte_sum(const int8_t* x, int n) {
  const __m256i bias = _mm256_set1_epi8(char(0x80));
  __m256i acc = _mm256_setzero_si256();
  for (int j = 0; j < n; j += 32)
    acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(x + j)), bias),
                                                _mm256_setzero_si256()));
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  return int32_t(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1)) - 128 * n;
}

// Each of one vector's G groups' sum of x: xsum[g].
inline void group_x_sums(const int8_t* x, int64_t G, int group, int32_t* xsum) {
  for (int64_t g = 0; g < G; ++g) xsum[g] = group_byte_sum(x + g * group, group);
}

// Lays out the planes and each group's sum of x (slot 1) for nq vectors; a
// last step past K (Q2_0 with an odd number of groups) reads zeros.
inline void group_planes(const int8_t* xq, int64_t nq, int64_t K, int group, int64_t steps, int8_t* planes,
                         int32_t* xsum) {
  const int64_t G = K / group;
  alignas(32) int8_t tail[kGroupStep];
  for (int64_t v = 0; v < nq; ++v) {
    const int8_t* x = xq + v * K;
    for (int64_t s = 0; s < steps; ++s) {
      const int8_t* src = x + s * kGroupStep;
      if ((s + 1) * kGroupStep > K) {
        std::memset(tail, 0, sizeof tail);
        std::memcpy(tail, src, size_t(K - s * kGroupStep));
        src = tail;
      }
      group_step_planes(src, planes + (v * steps + s) * kGroupStep);
    }
    group_x_sums(x, G, group, xsum + v * G);
  }
}

inline void group_codes(const uint8_t* row, int64_t s, int64_t G, bool q2_0, __m256i c[4]) {
  const __m256i m = _mm256_set1_epi8(3), codes = group_step_codes(row, s, G, q2_0);
  c[0] = _mm256_and_si256(codes, m);
  c[1] = _mm256_and_si256(_mm256_srli_epi16(codes, 2), m);
  c[2] = _mm256_and_si256(_mm256_srli_epi16(codes, 4), m);
  c[3] = _mm256_and_si256(_mm256_srli_epi16(codes, 6), m);
}

// Four rows' lane sums of one step -> [row 0..3 of the step's low half |
// the same of its high half] (each lane the sum of its half's 4 lanes).
inline __m256i hadd_rows4(const __m256i a[4]) {
  return _mm256_hadd_epi32(_mm256_hadd_epi32(a[0], a[1]), _mm256_hadd_epi32(a[2], a[3]));
}

// Groups g and g + 1 of four rows against NV vectors (at planes + v *
// vstride): out[v] = [row 0..3 of g | row 0..3 of g + 1], the exact sums
// less each group's sum of x. One PQ2_0 step is one group (two steps per
// call; `two` false: g + 1 is past the row and its half is left zero), one
// Q2_0 step is two.
template <class Dot, int NV>
inline void group_pair(const uint8_t* const rows[4], int64_t g, bool two, int64_t G, bool q2_0,
                       const int8_t* planes, int64_t vstride, __m256i out[NV]) {
  const int nsteps = q2_0 ? 1 : 2;
  __m256i t[NV][2];
  for (int e = 0; e < nsteps; ++e) {
    const int64_t step = q2_0 ? g / 2 : g + e;
    __m256i a[NV][4];
    if (e == 1 && !two) {
      for (int v = 0; v < NV; ++v) t[v][1] = _mm256_setzero_si256();
      break;
    }
    for (int rr = 0; rr < 4; ++rr) {
      __m256i c[4];
      group_codes(rows[rr], step, G, q2_0, c);
      for (int v = 0; v < NV; ++v) a[v][rr] = Dot::dot4(c, planes + v * vstride + step * kGroupStep);
    }
    for (int v = 0; v < NV; ++v) t[v][e] = hadd_rows4(a[v]);
  }
  for (int v = 0; v < NV; ++v)
    out[v] = q2_0 ? t[v][0]
                  : _mm256_add_epi32(_mm256_permute2x128_si256(t[v][0], t[v][1], 0x20),
                                     _mm256_permute2x128_si256(t[v][0], t[v][1], 0x31));
}

// One token's scratch for the decode kernels (slot 1): [nd][vstride]
// planes, [nd][G] each group's sum of x per digit, [G] the digits' number
// of those sums (xnum, filled by group_token_sums).
struct GroupToken {
  int8_t* planes;
  int32_t* xsum;
  double* xnum;
};
inline GroupToken group_token_scratch(int nd, int64_t vstride, int64_t G) {
  uint8_t* buf = thread_scratch(1, size_t(nd * vstride) + size_t(nd * G) * 4 + size_t(G) * 8 + 64);
  const int64_t at = (nd * vstride + nd * G * 4 + 7) & ~int64_t(7);
  return {reinterpret_cast<int8_t*>(buf), reinterpret_cast<int32_t*>(buf + nd * vstride),
          reinterpret_cast<double*>(buf + at)};
}
inline void group_token_sums(const GroupToken& t, int nd, int64_t G) {
  for (int64_t g = 0; g < G; ++g) {
    double num = t.xsum[g];
    for (int v = 1; v < nd; ++v) num = num * 255.0 + t.xsum[v * G + g];
    t.xnum[g] = num;
  }
}

// The decode kernels' dispatch: for one token of one to three digits,
// calls gemv(integral_constant ND, bool_constant Q2_0) and returns true.
template <class F>
inline bool group_decode(const GroupMatrix& w, int64_t n, const int* digits, F&& gemv) {
  if (n != 1 || digits[0] < 1 || digits[0] > 3) return false;
  const auto by_type = [&](auto nd) {
    if (w.group == 64) gemv(nd, std::true_type{});
    else gemv(nd, std::false_type{});
  };
  if (digits[0] == 1) by_type(std::integral_constant<int, 1>{});
  else if (digits[0] == 2) by_type(std::integral_constant<int, 2>{});
  else by_type(std::integral_constant<int, 3>{});
  return true;
}

// The fp16 scales at rows[0..7] + at as one vector. Scalar loads: a gather
// of them was slower (avx512_group.h); the lanes are set with constant
// indices, as clang requires of vpinsrw.
inline __m128i group_scales8_fp16(const uint8_t* const* rows, int64_t at) {
  uint16_t h[8];
  for (int rr = 0; rr < 8; ++rr) std::memcpy(&h[rr], rows[rr] + at, 2);
  return _mm_setr_epi16(short(h[0]), short(h[1]), short(h[2]), short(h[3]), short(h[4]), short(h[5]), short(h[6]),
                        short(h[7]));
}

// The same of rows[0..3], as doubles.
inline __m256d group_scales4(const uint8_t* const* rows, int64_t at) {
  uint16_t h[4];
  for (int rr = 0; rr < 4; ++rr) std::memcpy(&h[rr], rows[rr] + at, 2);
  return _mm256_cvtps_pd(_mm_cvtph_ps(_mm_setr_epi16(short(h[0]), short(h[1]), short(h[2]), short(h[3]), 0, 0, 0, 0)));
}

// A block of four rows' scales: D[g][row] as doubles.
inline void group_block_scales(const uint8_t* const rows[4], int64_t G, int64_t bb, double* D) {
  for (int64_t g = 0; g < G; ++g) _mm256_storeu_pd(D + g * kGroupRows, group_scales4(rows, g * bb));
}

// A block of four rows (from rb0, nrows of them real) for every token: S
// [vector][Gp][row] holds each group's exact sum less its sum of x, a
// token's vectors one after another; per token the digits' number per
// group, exact in double (below 2^31), goes through the groups' fma chain
// in kernels.h's order, one double lane per row.
inline void group_block_tokens(const int32_t* S, int64_t Gp, int64_t G, const double* D, int64_t n,
                               const int* digits, const float* xscale, float* y, int64_t ldy, int64_t rb0,
                               int nrows) {
  const int32_t* s = S;  // token i's first vector
  for (int64_t i = 0; i < n; ++i) {
    const int nd = digits[i];
    __m256d acc = _mm256_setzero_pd();
    for (int64_t g = 0; g < G; ++g) {
      __m256d v = _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i*)(s + g * kGroupRows)));
      for (int j = 1; j < nd; ++j)
        v = _mm256_fmadd_pd(v, _mm256_set1_pd(255.0),
                            _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i*)(s + (j * Gp + g) * kGroupRows))));
      acc = _mm256_fmadd_pd(v, _mm256_loadu_pd(D + g * kGroupRows), acc);
    }
    alignas(16) float out[4];
    _mm_store_ps(out, _mm_mul_ps(_mm256_cvtpd_ps(acc), _mm_set1_ps(1.0f / xscale[i])));
    for (int rr = 0; rr < nrows; ++rr) y[i * ldy + rb0 + rr] = out[rr];
    s += nd * Gp * kGroupRows;
  }
}

// Rows in blocks of four: S [vector][group][row] from group_pair, the four
// rows' scales widened to double, then per token the groups' fma chain on
// four rows at once, one double lane per row: the order within each row is
// kernels.h's, so the bits are the scalar set's. A tail block repeats its
// last row and stores only its own. NV: vectors per pass over a row's
// codes (2 where 32 vector registers hold their sums).
template <class Dot, int NV = 1>
void group_gemm_i8_avx2(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                        float* y, int64_t ldy, int64_t r0, int64_t r1) {
  check_group_call(w, n, ldy, r0, r1);
  const int64_t K = w.cols, G = w.groups(), steps = (K + kGroupStep - 1) / kGroupStep;
  const int64_t bb = group_block_bytes(w.group), rb = G * bb, vstride = steps * kGroupStep;
  const bool q2_0 = w.group == 64;
  int64_t nq = 0;
  for (int64_t i = 0; i < n; ++i) nq += digits[i];
  // Slot 1: [nq][steps][4][32] planes, [nq][G] group sums of x; slot 0:
  // [nq][G + 1][4] sums of a block of rows, [G][4] their scales.
  uint8_t* buf = thread_scratch(1, size_t(nq * vstride) + size_t(nq * G) * 4);
  int8_t* planes = reinterpret_cast<int8_t*>(buf);
  int32_t* xsum = reinterpret_cast<int32_t*>(buf + nq * vstride);
  group_planes(xq, nq, K, w.group, steps, planes, xsum);
  const int64_t Gp = G + 1;  // S rows of whole pairs
  uint8_t* scratch = thread_scratch(0, size_t(G * kGroupRows) * 8 + size_t(nq * Gp * kGroupRows) * 4);
  double* D = reinterpret_cast<double*>(scratch);
  int32_t* S = reinterpret_cast<int32_t*>(scratch + G * kGroupRows * 8);
  for (int64_t rb0 = r0; rb0 < r1; rb0 += kGroupRows) {
    const int nrows = int(std::min<int64_t>(kGroupRows, r1 - rb0));
    const uint8_t* rows[4];
    for (int rr = 0; rr < 4; ++rr) rows[rr] = w.data + (rb0 + std::min(rr, nrows - 1)) * rb;
    group_block_scales(rows, G, bb, D);
    for (int64_t v0 = 0; v0 < nq; v0 += NV) {
      const int nv = int(std::min<int64_t>(NV, nq - v0));
      for (int64_t g = 0; g < G; g += 2) {
        __m256i o[NV];
        const int8_t* p = planes + v0 * vstride;
        if (nv == NV) group_pair<Dot, NV>(rows, g, g + 1 < G, G, q2_0, p, vstride, o);
        else group_pair<Dot, 1>(rows, g, g + 1 < G, G, q2_0, p, vstride, o);
        for (int v = 0; v < nv; ++v) {
          const int32_t* xs = xsum + (v0 + v) * G;
          const __m256i sub = _mm256_set_m128i(_mm_set1_epi32(g + 1 < G ? xs[g + 1] : 0), _mm_set1_epi32(xs[g]));
          _mm256_storeu_si256((__m256i*)(S + ((v0 + v) * Gp + g) * kGroupRows), _mm256_sub_epi32(o[v], sub));
        }
      }
    }
    group_block_tokens(S, Gp, G, D, n, digits, xscale, y, ldy, rb0, nrows);
  }
}

}  // namespace
}  // namespace tern::kernels_detail
