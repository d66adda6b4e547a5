// Internal to neon_tbl.cpp (built with its flags only): the TQ1_0 half of
// neon-tbl. TQ1_0 holds 1.6875 bits per weight, which TL1's 4 bits per pair
// would grow by 18.5%; three weights per 5-bit index stay below it.
//
// Weights 3u, 3u+1, 3u+2 of a row are one index 9*c0 + 3*c1 + c2 (0..26) of
// their codes c = t + 1; columns past K are zero weights (code 1). Per
// activation triple a 27-entry table of int16 sums, split into low and high
// bytes, fills two registers each, so vqtbl2q_u8 looks up 16 rows at once:
// no sign bit or mirror trick (TL2's) is needed. Per 16 rows, a set of 8
// triples is 80 bytes: four 16-byte vectors of nibbles (low nibble triple
// 2v, high nibble triple 2v + 1, byte l = row l), then a 16-byte vector
// whose bit u of byte l is bit 4 of row l's index of triple u. That is
// 80 * 8 / (16 * 24) = 1.667 bits per weight when 24 divides K; K = 256 and
// 512 pad to 1.72.
#pragma once
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

namespace tern::kernels_detail {
namespace {

constexpr int64_t kSetBytes = 80;  // 8 triples x 16 rows

int64_t triple_sets(int64_t K) { return (K + 23) / 24; }

// Row l's indices of one 16-row group into dst (triple_sets(K) sets);
// codes[k] is the code of column k (k < K).
void pack_triples_row(const int8_t* codes, int64_t K, int64_t l, uint8_t* dst) {
  auto code = [&](int64_t k) { return k < K ? unsigned(codes[k]) : 1u; };
  for (int64_t s = 0; s < triple_sets(K); ++s) {
    uint8_t* set = dst + s * kSetBytes;
    unsigned idx[8], high = 0;
    for (int u = 0; u < 8; ++u) {
      const int64_t k = 3 * (8 * s + u);
      idx[u] = 9 * code(k) + 3 * code(k + 1) + code(k + 2);
      high |= (idx[u] >> 4) << u;
    }
    for (int v = 0; v < 4; ++v)
      set[16 * v + l] = uint8_t((idx[2 * v] & 15) | (idx[2 * v + 1] & 15) << 4);
    set[64 + l] = uint8_t(high);
  }
}

// Tables of q for every triple (64 bytes each: 32 low bytes, 32 high bytes
// of the entries (c0-1)*x0 + (c1-1)*x1 + (c2-1)*x2; entries 27..31 unused).
void build_triple_tables(const int8_t* q, int64_t K, uint8_t* tab) {
  int16_t coef[3][32] = {};
  for (int e = 0; e < 27; ++e) {
    coef[0][e] = int16_t(e / 9 - 1);
    coef[1][e] = int16_t(e / 3 % 3 - 1);
    coef[2][e] = int16_t(e % 3 - 1);
  }
  int16x8_t c[3][4];
  for (int j = 0; j < 3; ++j)
    for (int v = 0; v < 4; ++v) c[j][v] = vld1q_s16(coef[j] + 8 * v);
  const int64_t n = 8 * triple_sets(K);
  for (int64_t u = 0; u < n; ++u) {
    int16_t x[3];
    for (int j = 0; j < 3; ++j) x[j] = 3 * u + j < K ? q[3 * u + j] : 0;
    uint8x16_t e[4];
    for (int v = 0; v < 4; ++v)
      e[v] = vreinterpretq_u8_s16(
          vmlaq_n_s16(vmlaq_n_s16(vmulq_n_s16(c[0][v], x[0]), c[1][v], x[1]), c[2][v], x[2]));
    uint8_t* t = tab + 64 * u;
    vst1q_u8(t, vuzp1q_u8(e[0], e[1]));  // little-endian low bytes
    vst1q_u8(t + 16, vuzp1q_u8(e[2], e[3]));
    vst1q_u8(t + 32, vuzp2q_u8(e[0], e[1]));  // high bytes
    vst1q_u8(t + 48, vuzp2q_u8(e[2], e[3]));
  }
}

// The 5-bit indices of triple U of a set for 16 rows: nibble | bit 4.
template <int U>
[[gnu::always_inline]] inline uint8x16_t triple_index(const uint8x16x4_t& nib, uint8x16_t high) {
  const uint8x16_t n =
      U % 2 ? vshrq_n_u8(nib.val[U / 2], 4) : vandq_u8(nib.val[U / 2], vdupq_n_u8(15));
  uint8x16_t h;
  if constexpr (U < 4)
    h = vshlq_n_u8(high, 4 - U);
  else if constexpr (U == 4)
    h = high;
  else
    h = vshrq_n_u8(high, U - 4);
  return vbslq_u8(vdupq_n_u8(16), h, n);
}

template <int U>
[[gnu::always_inline]] inline void triple_step(const uint8x16x4_t& nib, uint8x16_t high,
                                               const uint8_t* tab, int16x8_t& s0, int16x8_t& s1) {
  const uint8x16_t i = triple_index<U>(nib, high);
  // Two x2 loads, not one x4: the tables must land in register pairs.
  const uint8x16_t lo = vqtbl2q_u8(vld1q_u8_x2(tab + 64 * U), i);
  const uint8x16_t hi = vqtbl2q_u8(vld1q_u8_x2(tab + 64 * U + 32), i);
  s0 = vaddq_s16(s0, vreinterpretq_s16_u8(vzip1q_u8(lo, hi)));
  s1 = vaddq_s16(s1, vreinterpretq_s16_u8(vzip2q_u8(lo, hi)));
}

template <int... U>
[[gnu::always_inline]] inline void triple_set(const uint8_t* set, const uint8_t* tab, int16x8_t& s0,
                                              int16x8_t& s1, std::integer_sequence<int, U...>) {
  const uint8x16x4_t nib = vld1q_u8_x4(set);
  const uint8x16_t high = vld1q_u8(set + 64);
  (triple_step<U>(nib, high, tab, s0, s1), ...);
}

template <int... U>
[[gnu::always_inline]] inline void triple_indices(const uint8x16x4_t& nib, uint8x16_t high,
                                                  uint8x16_t ix[8],
                                                  std::integer_sequence<int, U...>) {
  ((ix[U] = triple_index<U>(nib, high)), ...);
}

// Sums of the 16 rows of one group. |entry| <= 384, so int16 holds 85
// triples: sums are widened after every 8 sets (64 triples).
void triple_sums(const uint8_t* idx, const uint8_t* tab, int64_t K, int32_t out[16]) {
  int32x4_t acc[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
  const int64_t sets = triple_sets(K);
  for (int64_t s0 = 0; s0 < sets; s0 += 8) {
    int16x8_t a = vdupq_n_s16(0), b = vdupq_n_s16(0);  // rows 0..7, 8..15
    for (int64_t s = s0; s < std::min(sets, s0 + 8); ++s)
      triple_set(idx + s * kSetBytes, tab + 512 * s, a, b, std::make_integer_sequence<int, 8>{});
    acc[0] = vaddw_s16(acc[0], vget_low_s16(a));
    acc[1] = vaddw_high_s16(acc[1], a);
    acc[2] = vaddw_s16(acc[2], vget_low_s16(b));
    acc[3] = vaddw_high_s16(acc[3], b);
  }
  for (int i = 0; i < 4; ++i) vst1q_s32(out + 4 * i, acc[i]);
}

// Float activations: three lookups turn an index into the trits of its
// columns, which are widened and multiplied by their activations (an outer
// product over 16 rows). Partial sums per 8 sets (192 columns) keep the
// rounding error near scalar's.
void triple_sums_f32(const uint8_t* idx, const float* x, int64_t K, float out[16]) {
  int8_t trit[3][32] = {};
  for (int e = 0; e < 27; ++e) {
    trit[0][e] = int8_t(e / 9 - 1);
    trit[1][e] = int8_t(e / 3 % 3 - 1);
    trit[2][e] = int8_t(e % 3 - 1);
  }
  int8x16x2_t tt[3];
  for (int j = 0; j < 3; ++j) tt[j] = vld1q_s8_x2(trit[j]);
  float32x4_t tot[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
  const int64_t sets = triple_sets(K);
  for (int64_t s0 = 0; s0 < sets; s0 += 8) {
    float32x4_t a[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
    for (int64_t s = s0; s < std::min(sets, s0 + 8); ++s) {
      float pad[24] = {};  // the last set's activations, zero past K
      const float* xs = x + 24 * s;
      if (24 * s + 24 > K) {
        std::memcpy(pad, xs, sizeof(float) * size_t(K - 24 * s));
        xs = pad;
      }
      const uint8_t* set = idx + s * kSetBytes;
      const uint8x16x4_t nib = vld1q_u8_x4(set);
      const uint8x16_t high = vld1q_u8(set + 64);
      uint8x16_t ix[8];
      triple_indices(nib, high, ix, std::make_integer_sequence<int, 8>{});
      for (int u = 0; u < 8; ++u)
        for (int j = 0; j < 3; ++j) {
          const int8x16_t t = vqtbl2q_s8(tt[j], ix[u]);
          const int16x8_t lo = vmovl_s8(vget_low_s8(t)), hi = vmovl_high_s8(t);
          const float xv = xs[3 * u + j];
          a[0] = vfmaq_n_f32(a[0], vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), xv);
          a[1] = vfmaq_n_f32(a[1], vcvtq_f32_s32(vmovl_high_s16(lo)), xv);
          a[2] = vfmaq_n_f32(a[2], vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), xv);
          a[3] = vfmaq_n_f32(a[3], vcvtq_f32_s32(vmovl_high_s16(hi)), xv);
        }
    }
    for (int i = 0; i < 4; ++i) tot[i] = vaddq_f32(tot[i], a[i]);
  }
  for (int i = 0; i < 4; ++i) vst1q_f32(out + 4 * i, tot[i]);
}

}  // namespace
}  // namespace tern::kernels_detail
