// Group-scaled rows (kernels.h GroupGemmI8) for prompt batches of 16+
// tokens at 512 bits: the lanes of a register are 16 rows, not 16 column
// blocks, so a lane ends a group holding that row's exact group sum and
// nothing is reduced across lanes.
//
// Per block of 32 rows and group, the codes are decoded once into C
// [quad][row]: the four codes of columns 4q .. 4q + 3 as bytes of one
// dword (a code byte of either type holds exactly one quad, weights 4b + k
// in bits 2k), transposed so one 64-byte load holds a quad of 16 rows.
// Then six digit vectors at a time meet them: per quad, each vector's four
// activations are broadcast and one vpdpbusd per 16 rows adds code times
// activation into that (vector, rows) accumulator. The group's sums, less
// its sum of x (the codes are c = w + 1), are scaled per token as kernels.h
// orders it: digits combined exactly in double, one fma per group in
// increasing order, 32 rows in four registers of doubles; so the bits are
// the scalar set's.
//
// Exactness: a lane sums group / 4 quads of four products, each at most 3
// * 128 in magnitude: below 2^16 for 128-weight groups.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../kernel_sets.h"
#include "avx2_group.h"
#include "avx512_transpose.h"
#include "group_tile_driver.h"
#include "tern/quant_group.h"

namespace tern::kernels_detail {
namespace {

constexpr int kGroupTileRows = 32;     // rows per block: two registers of lanes
constexpr int kGroupTileVectors = 6;   // digit vectors per pass over a group's codes
constexpr int64_t kGroupTileMinTokens = 16;  // below, the four-row kernel is faster

// One group's codes of 32 rows (its code bytes at rows[rr] + at) into C
// [quads][32]: each code byte b spread to bytes (b & 3, b >> 2 & 3, ...).
inline void tile_codes(const uint8_t* const* rows, int64_t at, int quads, int32_t* C) {
  const __m512i m = _mm512_set1_epi32(0x03030303);
  for (int h = 0; h < 2; ++h)
    for (int q0 = 0; q0 < quads; q0 += 16) {
      __m512i r[16];
      for (int i = 0; i < 16; ++i) {
        const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(rows[16 * h + i] + at + q0)));
        r[i] = _mm512_and_si512(_mm512_or_si512(_mm512_or_si512(x, _mm512_slli_epi32(x, 6)),
                                                _mm512_or_si512(_mm512_slli_epi32(x, 12), _mm512_slli_epi32(x, 18))),
                                m);
      }
      transpose16(r);
      for (int c = 0; c < 16; ++c) _mm512_storeu_si512((void*)(C + (q0 + c) * kGroupTileRows + 16 * h), r[c]);
    }
}

// acc += codes times the broadcast activations, in place.
struct TileDpbusd {
  // The asm keeps the accumulator where it is: with the intrinsic GCC 12
  // copied the twelve accumulators around the loop, two moves per product,
  // and the kernel ran at half speed.
  static inline void acc(__m512i& a, __m512i c, __m512i x) { asm("vpdpbusd %1, %2, %0" : "+v"(a) : "v"(x), "v"(c)); }
};
struct TileMaddubs {  // AVX512BW without VNNI: pair sums at most 2 * 3 * 128
  static inline void acc(__m512i& a, __m512i c, __m512i x) {
    a = _mm512_add_epi32(a, _mm512_madd_epi16(_mm512_maddubs_epi16(c, x), _mm512_set1_epi16(1)));
  }
};

inline __m512i broadcast4(const int8_t* x) {
  int32_t v;
  std::memcpy(&v, x, 4);
  return _mm512_set1_epi32(v);
}

// Six vectors (x, x + K, ...: one group's activations) against a group's C:
// S[t][32] = the exact sums less the group's sum of x (xs[t * xs_stride]).
// Named accumulators: as an array GCC 12 kept them in memory.
template <class Acc>
inline void tile_vectors6(const int32_t* C, int quads, const int8_t* x, int64_t K, const int32_t* xs,
                          int64_t xs_stride, int32_t* S) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
  __m512i b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0;
  const int8_t *x1 = x + K, *x2 = x + 2 * K, *x3 = x + 3 * K, *x4 = x + 4 * K, *x5 = x + 5 * K;
  for (int q = 0; q < quads; ++q) {
    const __m512i c0 = _mm512_loadu_si512((const void*)(C + q * kGroupTileRows));
    const __m512i c1 = _mm512_loadu_si512((const void*)(C + q * kGroupTileRows + 16));
    const auto one = [&](__m512i& lo, __m512i& hi, const int8_t* v) {
      const __m512i xb = broadcast4(v + 4 * q);
      Acc::acc(lo, c0, xb);
      Acc::acc(hi, c1, xb);
    };
    one(a0, b0, x);
    one(a1, b1, x1);
    one(a2, b2, x2);
    one(a3, b3, x3);
    one(a4, b4, x4);
    one(a5, b5, x5);
  }
  const __m512i lo[6] = {a0, a1, a2, a3, a4, a5}, hi[6] = {b0, b1, b2, b3, b4, b5};
  for (int t = 0; t < 6; ++t) {
    const __m512i sub = _mm512_set1_epi32(xs[t * xs_stride]);
    _mm512_storeu_si512((void*)(S + t * kGroupTileRows), _mm512_sub_epi32(lo[t], sub));
    _mm512_storeu_si512((void*)(S + t * kGroupTileRows + 16), _mm512_sub_epi32(hi[t], sub));
  }
}

// One vector: the batch's last vectors short of six.
template <class Acc>
inline void tile_vector1(const int32_t* C, int quads, const int8_t* x, int32_t xs, int32_t* S) {
  __m512i lo = _mm512_setzero_si512(), hi = lo;
  for (int q = 0; q < quads; ++q) {
    const __m512i xb = broadcast4(x + 4 * q);
    Acc::acc(lo, _mm512_loadu_si512((const void*)(C + q * kGroupTileRows)), xb);
    Acc::acc(hi, _mm512_loadu_si512((const void*)(C + q * kGroupTileRows + 16)), xb);
  }
  const __m512i sub = _mm512_set1_epi32(xs);
  _mm512_storeu_si512((void*)S, _mm512_sub_epi32(lo, sub));
  _mm512_storeu_si512((void*)(S + 16), _mm512_sub_epi32(hi, sub));
}

// Group g's scales of the 32 rows as doubles, 8 rows a register.
inline void tile_scales(const uint8_t* const* rows, int64_t at, __m512d D[4]) {
  for (int h = 0; h < 4; ++h) D[h] = _mm512_cvtps_pd(_mm256_cvtph_ps(group_scales8_fp16(rows + 8 * h, at)));
}

// Per token (its digits' sums one after another in S): A[i][32] += the
// exact group sum times the group's scale.
inline void tile_scale_tokens(const int32_t* S, const __m512d D[4], int64_t n, const int* digits, double* A) {
  for (int64_t i = 0; i < n; ++i) {
    const int nd = digits[i];
    for (int h = 0; h < 4; ++h) {
      __m512d num = _mm512_cvtepi32_pd(_mm256_loadu_si256((const __m256i*)(S + 8 * h)));
      for (int j = 1; j < nd; ++j)
        num = _mm512_fmadd_pd(num, _mm512_set1_pd(255.0),
                              _mm512_cvtepi32_pd(_mm256_loadu_si256((const __m256i*)(S + j * kGroupTileRows + 8 * h))));
      double* a = A + i * kGroupTileRows + 8 * h;
      _mm512_storeu_pd(a, _mm512_fmadd_pd(num, D[h], _mm512_loadu_pd(a)));
    }
    S += nd * kGroupTileRows;
  }
}

// The tile at 512 bits for group_tile_run.
template <class Acc>
struct GroupTile512 {
  static constexpr int kRows = kGroupTileRows, kVectors = kGroupTileVectors;
  static void codes(const uint8_t* const* rows, int64_t at, int quads, int32_t* C) { tile_codes(rows, at, quads, C); }
  static void vectors(const int32_t* C, int quads, const int8_t* x, int64_t K, const int32_t* xs, int64_t xs_stride,
                      int32_t* S) {
    tile_vectors6<Acc>(C, quads, x, K, xs, xs_stride, S);
  }
  static void vector1(const int32_t* C, int quads, const int8_t* x, int32_t xs, int32_t* S) {
    tile_vector1<Acc>(C, quads, x, xs, S);
  }
  static void scale_group(const uint8_t* const* rows, int64_t at, const int32_t* S, int64_t n, const int* digits,
                          double* A) {
    __m512d D[4];
    tile_scales(rows, at, D);
    tile_scale_tokens(S, D, n, digits, A);
  }
  static void store_token(const double* a, float inv, float* out) {
    for (int h = 0; h < 4; ++h)
      _mm256_store_ps(out + 8 * h, _mm256_mul_ps(_mm512_cvtpd_ps(_mm512_loadu_pd(a + 8 * h)), _mm256_set1_ps(inv)));
  }
};

template <class Acc>
void group_tile_i8(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                   float* y, int64_t ldy, int64_t r0, int64_t r1) {
  group_tile_run<GroupTile512<Acc>>(w, xq, n, digits, xscale, y, ldy, r0, r1);
}

}  // namespace
}  // namespace tern::kernels_detail
