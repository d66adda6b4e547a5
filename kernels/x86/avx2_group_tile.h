// Group-scaled rows (kernels.h GroupGemmI8) for prompt batches of 16+
// tokens at 256 bits, the AVX2 sets' form of avx512_group_tile.h (read it
// first): the lanes of a register are 8 rows, a quad of activations is
// broadcast, and a lane ends a group holding its row's exact group sum, so
// nothing is reduced across lanes.
//
// Per block of 16 rows and group the codes are spread to bytes and
// transposed once into C [quad][16 rows]; four digit vectors at a time
// meet them (8 accumulators, 2 code registers and a broadcast in 16
// registers). Without VNNI a quad's products are vpmaddubsw pair sums
// added in int16 for the whole group, then widened once: a pair sum is at
// most 2 * 3 * 128 = 768 in magnitude, and 32 quads of them (a 128-weight
// group) stay below 2^15. The scaling is kernels.h's order, so the bits
// are the scalar set's.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../kernel_sets.h"
#include "avx2_group.h"
#include "group_tile_driver.h"
#include "tern/quant_group.h"

namespace tern::kernels_detail {
namespace {

constexpr int kGroupTile2Rows = 16;        // rows per block: two registers of lanes
constexpr int64_t kGroupTile2MinTokens = 16;  // below, the four-row kernel is faster

// 8 x 8 int32 transpose in place: lane c of r[i] -> lane i of r[c].
inline void transpose8(__m256i r[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // u[4i + j], 128-bit lane L: column 4L + j of rows 4i .. 4i + 3.
  for (int i = 0; i < 2; ++i) {
    u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x20);
    r[4 + j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x31);
  }
}

// One group's codes of 16 rows (their code bytes at rows[rr] + at) into C
// [quads][16]: each code byte b spread to bytes (b & 3, b >> 2 & 3, ...).
inline void tile2_codes(const uint8_t* const* rows, int64_t at, int quads, int32_t* C) {
  const __m256i m = _mm256_set1_epi32(0x03030303);
  for (int h = 0; h < 2; ++h)
    for (int q0 = 0; q0 < quads; q0 += 8) {
      __m256i r[8];
      for (int i = 0; i < 8; ++i) {
        const __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(rows[8 * h + i] + at + q0)));
        r[i] = _mm256_and_si256(_mm256_or_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 6)),
                                                _mm256_or_si256(_mm256_slli_epi32(x, 12), _mm256_slli_epi32(x, 18))),
                                m);
      }
      transpose8(r);
      for (int c = 0; c < 8; ++c) _mm256_storeu_si256((__m256i*)(C + (q0 + c) * kGroupTile2Rows + 8 * h), r[c]);
    }
}

// How a quad's products add up over a group: zero(), acc(a, codes, x),
// and finish(a), the group's int32 sums.
struct Tile2Maddubs {  // int16 pair sums, added in int16, widened at the end
  static inline __m256i zero() { return _mm256_setzero_si256(); }
  static inline void acc(__m256i& a, __m256i c, __m256i x) {
    __m256i t;
    asm("vpmaddubsw %2, %1, %0" : "=x"(t) : "x"(c), "x"(x));
    asm("vpaddw %1, %0, %0" : "+x"(a) : "x"(t));
  }
  static inline __m256i finish(__m256i a) { return _mm256_madd_epi16(a, _mm256_set1_epi16(1)); }
};
template <class Op>  // vpdpbusd (AVX-VNNI): int32 directly
struct Tile2Dpbusd {
  static inline __m256i zero() { return _mm256_setzero_si256(); }
  static inline void acc(__m256i& a, __m256i c, __m256i x) { asm("%{vex%} vpdpbusd %1, %2, %0" : "+x"(a) : "x"(x), "x"(c)); }
  static inline __m256i finish(__m256i a) { return a; }
};

// The tile's way of adding for each of avx2_group.h's products.
template <class Dot>
struct Tile2Of;
template <>
struct Tile2Of<GroupMaddubs> {
  using type = Tile2Maddubs;
};
template <class Op>
struct Tile2Of<GroupDpbusd<Op>> {
  using type = Tile2Dpbusd<Op>;
};

inline __m256i broadcast4_256(const int8_t* x) {
  int32_t v;
  std::memcpy(&v, x, 4);
  return _mm256_set1_epi32(v);
}

// Four vectors (x, x + K, ...: one group's activations) against a group's
// C: S[t][16] = the exact sums less the group's sum of x (xs[t *
// xs_stride]). Named accumulators, as in avx512_group_tile.h.
template <class Acc>
inline void tile2_vectors4(const int32_t* C, int quads, const int8_t* x, int64_t K, const int32_t* xs,
                           int64_t xs_stride, int32_t* S) {
  __m256i a0 = Acc::zero(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  const int8_t *x1 = x + K, *x2 = x + 2 * K, *x3 = x + 3 * K;
  for (int q = 0; q < quads; ++q) {
    const __m256i c0 = _mm256_loadu_si256((const __m256i*)(C + q * kGroupTile2Rows));
    const __m256i c1 = _mm256_loadu_si256((const __m256i*)(C + q * kGroupTile2Rows + 8));
    const auto one = [&](__m256i& lo, __m256i& hi, const int8_t* v) {
      const __m256i xb = broadcast4_256(v + 4 * q);
      Acc::acc(lo, c0, xb);
      Acc::acc(hi, c1, xb);
    };
    one(a0, b0, x);
    one(a1, b1, x1);
    one(a2, b2, x2);
    one(a3, b3, x3);
  }
  const __m256i lo[4] = {a0, a1, a2, a3}, hi[4] = {b0, b1, b2, b3};
  for (int t = 0; t < 4; ++t) {
    const __m256i sub = _mm256_set1_epi32(xs[t * xs_stride]);
    _mm256_storeu_si256((__m256i*)(S + t * kGroupTile2Rows), _mm256_sub_epi32(Acc::finish(lo[t]), sub));
    _mm256_storeu_si256((__m256i*)(S + t * kGroupTile2Rows + 8), _mm256_sub_epi32(Acc::finish(hi[t]), sub));
  }
}

// One vector: the batch's last vectors short of four.
template <class Acc>
inline void tile2_vector1(const int32_t* C, int quads, const int8_t* x, int32_t xs, int32_t* S) {
  __m256i lo = Acc::zero(), hi = lo;
  for (int q = 0; q < quads; ++q) {
    const __m256i xb = broadcast4_256(x + 4 * q);
    Acc::acc(lo, _mm256_loadu_si256((const __m256i*)(C + q * kGroupTile2Rows)), xb);
    Acc::acc(hi, _mm256_loadu_si256((const __m256i*)(C + q * kGroupTile2Rows + 8)), xb);
  }
  const __m256i sub = _mm256_set1_epi32(xs);
  _mm256_storeu_si256((__m256i*)S, _mm256_sub_epi32(Acc::finish(lo), sub));
  _mm256_storeu_si256((__m256i*)(S + 8), _mm256_sub_epi32(Acc::finish(hi), sub));
}

// Group g's scales of the 16 rows as doubles, 4 rows a register.
inline void tile2_scales(const uint8_t* const* rows, int64_t at, __m256d D[4]) {
  for (int h = 0; h < 2; ++h) {
    const __m256 f = _mm256_cvtph_ps(group_scales8_fp16(rows + 8 * h, at));
    D[2 * h] = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
    D[2 * h + 1] = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
  }
}

// Per token (its digits' sums one after another in S): A[i][16] += the
// exact group sum times the group's scale.
inline void tile2_scale_tokens(const int32_t* S, const __m256d D[4], int64_t n, const int* digits, double* A) {
  for (int64_t i = 0; i < n; ++i) {
    const int nd = digits[i];
    for (int h = 0; h < 4; ++h) {
      __m256d num = _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i*)(S + 4 * h)));
      for (int j = 1; j < nd; ++j)
        num = _mm256_fmadd_pd(num, _mm256_set1_pd(255.0),
                              _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i*)(S + j * kGroupTile2Rows + 4 * h))));
      double* a = A + i * kGroupTile2Rows + 4 * h;
      _mm256_storeu_pd(a, _mm256_fmadd_pd(num, D[h], _mm256_loadu_pd(a)));
    }
    S += nd * kGroupTile2Rows;
  }
}

// The tile at 256 bits for group_tile_run.
template <class Acc>
struct GroupTile256 {
  static constexpr int kRows = kGroupTile2Rows, kVectors = 4;
  static void codes(const uint8_t* const* rows, int64_t at, int quads, int32_t* C) { tile2_codes(rows, at, quads, C); }
  static void vectors(const int32_t* C, int quads, const int8_t* x, int64_t K, const int32_t* xs, int64_t xs_stride,
                      int32_t* S) {
    tile2_vectors4<Acc>(C, quads, x, K, xs, xs_stride, S);
  }
  static void vector1(const int32_t* C, int quads, const int8_t* x, int32_t xs, int32_t* S) {
    tile2_vector1<Acc>(C, quads, x, xs, S);
  }
  static void scale_group(const uint8_t* const* rows, int64_t at, const int32_t* S, int64_t n, const int* digits,
                          double* A) {
    __m256d D[4];
    tile2_scales(rows, at, D);
    tile2_scale_tokens(S, D, n, digits, A);
  }
  static void store_token(const double* a, float inv, float* out) {
    for (int h = 0; h < 4; ++h)
      _mm_store_ps(out + 4 * h, _mm_mul_ps(_mm256_cvtpd_ps(_mm256_loadu_pd(a + 4 * h)), _mm_set1_ps(inv)));
  }
};

template <class Acc>
void group_tile2_i8(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                    float* y, int64_t ldy, int64_t r0, int64_t r1) {
  group_tile_run<GroupTile256<Acc>>(w, xq, n, digits, xscale, y, ldy, r0, r1);
}

}  // namespace
}  // namespace tern::kernels_detail
