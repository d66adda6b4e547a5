// neon-sdot: int8 activations times ternary weights with the ARMv8.2 dot
// product (sdot: four int8 products summed into each int32 lane), reading
// the GGUF blocks directly, no repacking.
//
// int8 GEMV: the codes c = t + 1 are multiplied as they are and
// sum_k t*q = sum_k c*q - sum_k q, so TQ2_0 costs a shift and a mask per 16
// weights before the sdot. TQ1_0 is decoded at run time with Spectra-1.1's
// multiply-by-3 (tq1_neg_codes): a multiply by 3^n and two compares give -c
// per 16 weights, so there sum_k t*q = -sum_k (-c)*q - sum_k q. Four rows
// share each activation load. Nothing is repacked: TQ1_0 stays 1.6875 bits.
//
// int8 GEMM: each row is decoded once to signed trits in a scratch row that
// stays in L1, then dotted with four activation vectors per trit load.
//
// Float activations: trits widened to floats, then FMAs (neon_gemm_f32).
#include <arm_neon.h>

#include <cstring>
#include <vector>

#include "../kernel_sets.h"
#include "neon_dense.h"
#include "neon_group.h"
#include "neon_phase.h"
#include "neon_phase_i8.h"
#include "neon_quant.h"
#include "tern/quant.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "neon_sdot.cpp needs -march=armv8.2-a+dotprod (see CMakeLists.txt)"
#endif

namespace tern::kernels_detail {
namespace {

// Blocks are decoded in halves of 128 columns (8 vectors): with the 8
// activation vectors of a half and four rows' accumulators, everything stays
// in the 32 NEON registers.

// The codes (trit + 1) of columns 128h..128h+127 of a TQ2_0 block, in column
// order. Byte m of half h holds columns 128h + 32n + m in bits 2n..2n+1, so
// a shift and a mask of the half's two 16-byte vectors give 16 consecutive
// codes. Code 3 (not a trit) stays 3: like scalar, it counts as +2.
[[gnu::always_inline]] inline void tq2_codes(const BlockTQ2* blk, int h, int8x16_t c[8]) {
  const uint8x16_t three = vdupq_n_u8(3);
  const uint8x16_t a = vld1q_u8(blk->qs + 32 * h), b = vld1q_u8(blk->qs + 32 * h + 16);
  c[0] = vreinterpretq_s8_u8(vandq_u8(a, three));
  c[1] = vreinterpretq_s8_u8(vandq_u8(b, three));
  c[2] = vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(a, 2), three));
  c[3] = vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(b, 2), three));
  c[4] = vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(a, 4), three));
  c[5] = vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(b, 4), three));
  c[6] = vreinterpretq_s8_u8(vshrq_n_u8(a, 6));
  c[7] = vreinterpretq_s8_u8(vshrq_n_u8(b, 6));
}

// Minus the code of each byte v of (uint8_t)(byte * 3^n): the multiply-by-3
// decode of Spectra-1.1 (seed 001, appendix F.2) takes the code as the top
// byte of 3v, i.e. floor(3v / 256) = [v >= 86] + [v >= 171]. The compares
// give 0 or -1 each, so their sum is -code without a widening multiply.
[[gnu::always_inline]] inline int8x16_t tq1_neg_code(uint8x16_t v) {
  return vreinterpretq_s8_u8(vaddq_u8(vcgeq_u8(v, vdupq_n_u8(86)), vcgeq_u8(v, vdupq_n_u8(171))));
}

// Minus the codes of columns 128h..128h+127 of a TQ1_0 block, in column
// order. qs[0..31] holds columns 32n + m (n = 0..4), qs[32..47] columns
// 160 + 16n + m, qh[j] columns 240 + 4n + j, so half 0 is trits 0..3 of
// qs[0..31] and half 1 is trit 4 of qs[0..31], all of qs[32..47] and qh
// (lane 4n + j). The multiplies by 3^n are independent: nothing serializes.
[[gnu::always_inline]] inline void tq1_neg_codes(const BlockTQ1* blk, int h, int8x16_t c[8]) {
  const uint8x16_t a = vld1q_u8(blk->qs), b = vld1q_u8(blk->qs + 16);
  if (h == 0) {
    static constexpr uint8_t kPow3[4] = {1, 3, 9, 27};
#pragma GCC unroll 4
    for (int n = 0; n < 4; ++n) {
      c[2 * n] = tq1_neg_code(vmulq_u8(a, vdupq_n_u8(kPow3[n])));
      c[2 * n + 1] = tq1_neg_code(vmulq_u8(b, vdupq_n_u8(kPow3[n])));
    }
    return;
  }
  c[0] = tq1_neg_code(vmulq_u8(a, vdupq_n_u8(81)));
  c[1] = tq1_neg_code(vmulq_u8(b, vdupq_n_u8(81)));
  const uint8x16_t e = vld1q_u8(blk->qs + 32);
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
#pragma GCC unroll 5
  for (int n = 0; n < 5; ++n) c[2 + n] = tq1_neg_code(vmulq_u8(e, vdupq_n_u8(kPow3[n])));
  uint32_t qh;
  std::memcpy(&qh, blk->qh, 4);
  static constexpr uint8_t kLanePow3[16] = {1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27};
  c[7] = tq1_neg_code(vmulq_u8(vreinterpretq_u8_u32(vdupq_n_u32(qh)), vld1q_u8(kLanePow3)));
}

// The trits (-1, 0, +1; +2 for a TQ2_0 code 3) of half h of block b of a row.
[[gnu::always_inline]] inline void half_trits(Ternary format, const uint8_t* row, int64_t b, int h,
                                              int8x16_t t[8]) {
  switch (format) {
    case Ternary::TQ2:
      tq2_codes(reinterpret_cast<const BlockTQ2*>(row) + b, h, t);
      for (int i = 0; i < 8; ++i) t[i] = vsubq_s8(t[i], vdupq_n_s8(1));
      return;
    case Ternary::TQ1:
      tq1_neg_codes(reinterpret_cast<const BlockTQ1*>(row) + b, h, t);
      for (int i = 0; i < 8; ++i) t[i] = vmvnq_s8(t[i]);  // ~(-c) = c - 1
      return;
  }
  __builtin_unreachable();  // format comes from ternary_format
}

// Trits as four float vectors.
[[gnu::always_inline]] inline void widen(int8x16_t t, float32x4_t f[4]) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(t)), hi = vmovl_high_s8(t);
  f[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
  f[1] = vcvtq_f32_s32(vmovl_high_s16(lo));
  f[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
  f[3] = vcvtq_f32_s32(vmovl_high_s16(hi));
}

// Sum of K int8 activations (K a multiple of 16).
inline int32_t sum_int8(const int8_t* q, int64_t K) {
  int32x4_t acc = vdupq_n_s32(0);
  for (int64_t k = 0; k < K; k += 16) acc = vpadalq_s16(acc, vpaddlq_s8(vld1q_s8(q + k)));
  return vaddvq_s32(acc);
}

// Float activations. Per 256-column block, four 4-lane accumulators take
// columns k..k+3, k+4..k+7, k+8.. and k+12.. of every 16; their sum is the
// block's partial, partials are added in block order and the total is
// scaled, so the result differs from scalar only by reassociation. One
// vector takes the trits straight from the decoder; several share a row
// decoded once to floats. Both paths do the same FMAs in the same order, so
// a vector gets the same bits alone as in a batch.
float row_dot_f32(Ternary format, const uint8_t* row, const float* x, int64_t K) {
  float total = 0.0f;
  for (int64_t b = 0; b < K / QK; ++b) {
    float32x4_t a[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
    for (int h = 0; h < 2; ++h) {
      int8x16_t t[8];
      half_trits(format, row, b, h, t);
      for (int i = 0; i < 8; ++i) {
        float32x4_t f[4];
        widen(t[i], f);
        const float* xk = x + b * QK + 128 * h + 16 * i;
        for (int j = 0; j < 4; ++j) a[j] = vfmaq_f32(a[j], f[j], vld1q_f32(xk + 4 * j));
      }
    }
    total += vaddvq_f32(vaddq_f32(vaddq_f32(a[0], a[1]), vaddq_f32(a[2], a[3])));
  }
  return total;
}

void neon_gemm_f32(const TernaryMatrix& w, const float* x, int64_t n, float* y, int64_t r0,
                   int64_t r1) {
  const int64_t K = w.cols, M = w.rows, rb = ternary_row_bytes(w.type, K);
  const Ternary format = ternary_format(w.type);
  if (n == 1) {
    for (int64_t r = r0; r < r1; ++r)
      y[r] = w.row_scale[r] * row_dot_f32(format, w.data + r * rb, x, K);
    return;
  }
  if (n == 0) return;
  std::vector<float> t(static_cast<size_t>(K));
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.data + r * rb;
    for (int64_t b = 0; b < K / QK; ++b)
      for (int h = 0; h < 2; ++h) {
        int8x16_t v[8];
        half_trits(format, row, b, h, v);
        for (int i = 0; i < 8; ++i) {
          float32x4_t f[4];
          widen(v[i], f);
          float* out = t.data() + b * QK + 128 * h + 16 * i;
          for (int j = 0; j < 4; ++j) vst1q_f32(out + 4 * j, f[j]);
        }
      }
    for (int64_t i = 0; i < n; ++i) {
      const float* xi = x + i * K;
      float total = 0.0f;
      for (int64_t b = 0; b < K; b += QK) {
        float32x4_t a[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
        for (int64_t k = b; k < b + QK; k += 16)
          for (int j = 0; j < 4; ++j)
            a[j] = vfmaq_f32(a[j], vld1q_f32(t.data() + k + 4 * j), vld1q_f32(xi + k + 4 * j));
        total += vaddvq_f32(vaddq_f32(vaddq_f32(a[0], a[1]), vaddq_f32(a[2], a[3])));
      }
      y[i * M + r] = w.row_scale[r] * total;
    }
  }
}

// Sums of R consecutive rows starting at `row0` (row stride rb bytes)
// against q, before the -sum(q) correction (TQ2_0: sum c*q; TQ1_0: sum -c*q).
template <int R, bool kTQ1>
void rows_dot(const uint8_t* row0, int64_t rb, const int8_t* q, int64_t K, int32_t out[R]) {
  int32x4_t acc[R];
#pragma GCC unroll 4
  for (int j = 0; j < R; ++j) acc[j] = vdupq_n_s32(0);
  for (int64_t b = 0; b < K / QK; ++b) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      int8x16_t x[8];
      for (int i = 0; i < 8; ++i) x[i] = vld1q_s8(q + b * QK + 128 * h + 16 * i);
#pragma GCC unroll 4
      for (int j = 0; j < R; ++j) {
        int8x16_t c[8];
        if constexpr (kTQ1)
          tq1_neg_codes(reinterpret_cast<const BlockTQ1*>(row0 + j * rb) + b, h, c);
        else
          tq2_codes(reinterpret_cast<const BlockTQ2*>(row0 + j * rb) + b, h, c);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) acc[j] = vdotq_s32(acc[j], c[i], x[i]);
      }
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < R; ++j) out[j] = vaddvq_s32(acc[j]);
}

template <bool kTQ1>
void gemv_rows(const TernaryMatrix& w, const int8_t* q, int32_t* sums, int64_t r0, int64_t r1) {
  const int64_t K = w.cols, rb = ternary_row_bytes(w.type, K);
  const int32_t sq = sum_int8(q, K);
  auto finish = [&](int32_t v) { return kTQ1 ? -v - sq : v - sq; };
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    int32_t s[4];
    rows_dot<4, kTQ1>(w.data + r * rb, rb, q, K, s);
    for (int j = 0; j < 4; ++j) sums[r + j] = finish(s[j]);
  }
  for (; r < r1; ++r) {
    int32_t s[1];
    rows_dot<1, kTQ1>(w.data + r * rb, rb, q, K, s);
    sums[r] = finish(s[0]);
  }
}

void gemv_any(const TernaryMatrix& w, const int8_t* q, int32_t* sums, int64_t r0, int64_t r1) {
  switch (ternary_format(w.type)) {
    case Ternary::TQ1: return gemv_rows<true>(w, q, sums, r0, r1);
    case Ternary::TQ2: return gemv_rows<false>(w, q, sums, r0, r1);
  }
}

// Dot products of one decoded trit row with V activation vectors.
template <int V>
void trits_dot(const int8_t* t, const int8_t* q, int64_t K, int32_t out[V]) {
  int32x4_t acc[V];
  for (int v = 0; v < V; ++v) acc[v] = vdupq_n_s32(0);
  for (int64_t k = 0; k < K; k += 16) {
    const int8x16_t tv = vld1q_s8(t + k);
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[v] = vdotq_s32(acc[v], tv, vld1q_s8(q + v * K + k));
  }
  for (int v = 0; v < V; ++v) out[v] = vaddvq_s32(acc[v]);
}

void gemm_i8(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
             int64_t r1) {
  check_call(w, ActMode::Int8, n, r0, r1);
  if (n == 0) return;
  if (n == 1) return gemv_any(w, q, sums, r0, r1);
  const int64_t K = w.cols, M = w.rows, rb = ternary_row_bytes(w.type, K);
  const Ternary format = ternary_format(w.type);
  std::vector<int8_t> t(static_cast<size_t>(K));
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t b = 0; b < K / QK; ++b)
      for (int h = 0; h < 2; ++h) {
        int8x16_t v[8];
        half_trits(format, w.data + r * rb, b, h, v);
        for (int i = 0; i < 8; ++i) vst1q_s8(t.data() + b * QK + 128 * h + 16 * i, v[i]);
      }
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      int32_t s[4];
      trits_dot<4>(t.data(), q + i * K, K, s);
      for (int v = 0; v < 4; ++v) sums[(i + v) * M + r] = s[v];
    }
    for (; i < n; ++i) {
      int32_t s[1];
      trits_dot<1>(t.data(), q + i * K, K, s);
      sums[i * M + r] = s[0];
    }
  }
}

void gemm_f32(const TernaryMatrix& w, const float* x, int64_t n, float* y, int64_t r0, int64_t r1) {
  check_call(w, ActMode::Float, n, r0, r1);
  neon_gemm_f32(w, x, n, y, r0, r1);
}

// Fairy2i's int8 products (neon_phase_i8.h).
struct PhaseSdot {
  static inline int32x4_t dot(int32x4_t acc, int8x16_t w, int8x16_t x) { return vdotq_s32(acc, w, x); }
};

bool available(const CpuFeatures& cpu) { return cpu.neon && cpu.dotprod; }

}  // namespace

const KernelSet& neon_sdot_kernels() {
  static const KernelSet set = [] {
    KernelSet s{"neon-sdot", &available, &gemm_f32,        &gemm_i8,        &dense_gemm_neon,
                             nullptr,      nullptr,    &phase_gemm_neon, &quantize_i8_neon,
                             &phase_gemm_i8_neon<PhaseSdot>};
    s.group_gemm_i8 = &group_gemm_i8_neon<PhaseSdot>;
    return s;
  }();
  return set;
}

}  // namespace tern::kernels_detail
