// neon-tbl: table-lookup kernels in the style of bitnet.cpp's TL1 (seed
// 002), for int8 activations; plain ARMv8-A NEON (no dotprod), for cores
// without sdot.
//
// TQ2_0 (this file): each pair of weights (w0, w1) is a 4-bit index
// c0 * 4 + c1 of their codes c = t + 1. Per call, every activation pair
// (x0, x1) gets a 16-entry table of the int16 sums (c0 - 1) * x0 +
// (c1 - 1) * x1, split into a table of low bytes and one of high bytes
// (TL1_1's pack-and-unpack: exact, where an int8 table would have to round).
// The weights are repacked at load so that the 16 bytes at one step hold,
// for 16 consecutive rows, the indices of two adjacent pairs (low nibble:
// pair 2j, high nibble: pair 2j + 1). One vqtbl1q_u8 then looks up 16 rows
// at once; zipping the low and high lookups gives the 16-bit sums, added in
// int16 for 64 pairs (|sum| <= 64 * 512 fits) and then widened into int32.
// The 4x4 index space covers TQ2_0's code 3 (+2 to scalar) too. The
// repacked form is 2 bits per weight, TQ2_0 without its block scales.
//
// TQ1_0 (neon_tbl_triples.h): three weights per 5-bit index and 27-entry
// two-register tables (vqtbl2q_u8), 1.67 bits per weight, below TQ1_0's.
//
// Float activations read the same layouts (an outer product per column), so
// a model prepared for this set keeps no other copy of its weights.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../code_layout.h"
#include "../kernel_sets.h"
#include "neon_dense.h"
#include "neon_group.h"
#include "neon_phase.h"
#include "neon_phase_i8.h"
#include "neon_quant.h"
#include "neon_tbl_triples.h"
#include "tern/error.h"
#include "tern/quant.h"

namespace tern::kernels_detail {
namespace {

constexpr int64_t kGroup = 16;  // rows per lookup

int64_t groups_of(int64_t rows) { return (rows + kGroup - 1) / kGroup; }
bool is_tq1(const TernaryMatrix& w) {
  switch (ternary_format(w.type)) {
    case Ternary::TQ1: return true;
    case Ternary::TQ2: return false;
  }
  return false;
}
// Bytes of one 16-row group: 16 rows x K/2 pairs x 4 bits, or the triple sets.
int64_t group_bytes(const TernaryMatrix& w) {
  return is_tq1(w) ? triple_sets(w.cols) * kSetBytes : w.cols * kGroup / 4;
}

// Indices of row groups [g0, g1) of w into out (group stride group_bytes).
// Rows past the last one are zero weights (code 1); their sums are dropped.
void pack_groups(const TernaryMatrix& w, int64_t g0, int64_t g1, uint8_t* out) {
  const int64_t K = w.cols, rb = ternary_row_bytes(w.type, K), gb = group_bytes(w);
  std::vector<int8_t> c(static_cast<size_t>(K));
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* dst = out + (g - g0) * gb;
    for (int64_t l = 0; l < kGroup; ++l) {
      const int64_t r = g * kGroup + l;
      if (r < w.rows)
        unpack_ternary_row(w.type, w.data + r * rb, K, c.data());
      else
        std::memset(c.data(), 0, c.size());
      for (auto& v : c) v = int8_t(v + 1);  // trits to codes 0..3
      if (is_tq1(w)) {
        pack_triples_row(c.data(), K, l, dst);
        continue;
      }
      for (int64_t j = 0; j < K / 4; ++j) {
        const int8_t* q = c.data() + 4 * j;
        const unsigned lo = unsigned(q[0]) << 2 | unsigned(q[1]);
        const unsigned hi = unsigned(q[2]) << 2 | unsigned(q[3]);
        dst[j * kGroup + l] = uint8_t(lo | hi << 4);
      }
    }
  }
}

std::shared_ptr<const void> prepare(const TernaryMatrix& w) {
  uint8_t* body = nullptr;
  std::shared_ptr<const void> owner =
      new_layout(w, LayoutKind::NeonTbl, groups_of(w.rows) * group_bytes(w), &body);
  pack_groups(w, 0, groups_of(w.rows), body);
  return owner;
}

int64_t prepared_bytes(const TernaryMatrix& w) { return groups_of(w.rows) * group_bytes(w); }

// Vectors per pass over the weights: a GEMM reads each 16-row group once
// per kChunk vectors, whose tables (16 or 21.3 bytes per column each, e.g.
// 4 x 110 KB at K = 6912) stay in L2.
constexpr int64_t kChunk = 4;

// Runs `sums(group indices, vector i, out[16])` over the row groups that
// cover [r0, r1) for n vectors and stores rows r0..r1 of each result with
// `store(i, r, value)`; `chunk(i0, i1)` runs before vectors i0..i1 are
// used. Unprepared matrices (direct callers) get just these groups repacked
// here.
template <typename Value, typename Chunk, typename Sums, typename Store>
void for_groups(const TernaryMatrix& w, int64_t n, int64_t r0, int64_t r1, Chunk chunk, Sums sums,
                Store store) {
  if (n == 0 || r0 == r1) return;
  const int64_t gb = group_bytes(w);
  const int64_t g0 = r0 / kGroup, g1 = groups_of(r1);
  const uint8_t* idx = layout_body(w, LayoutKind::NeonTbl);
  int64_t first = 0;  // idx holds groups [first, ...)
  std::vector<uint8_t> own;
  if (idx == nullptr) {
    own.resize(size_t((g1 - g0) * gb));
    pack_groups(w, g0, g1, own.data());
    idx = own.data();
    first = g0;
  }
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t i1 = std::min(n, i0 + kChunk);
    chunk(i0, i1);
    for (int64_t g = g0; g < g1; ++g)
      for (int64_t i = i0; i < i1; ++i) {
        Value s[kGroup];
        sums(idx + (g - first) * gb, i, s);
        const int64_t lo = std::max(r0, g * kGroup), hi = std::min(r1, (g + 1) * kGroup);
        for (int64_t r = lo; r < hi; ++r) store(i, r, s[r - g * kGroup]);
      }
  }
}

// Pair tables of q (K/2 pairs x 32 bytes: 16 low bytes, then 16 high bytes).
void build_pair_tables(const int8_t* q, int64_t K, uint8_t* tab) {
  // Entry i = (i / 4 - 1) * x0 + (i % 4 - 1) * x1; entries 0..7 and 8..15.
  static constexpr int16_t kC0Lo[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
  static constexpr int16_t kC0Hi[8] = {1, 1, 1, 1, 2, 2, 2, 2};
  static constexpr int16_t kC1[8] = {-1, 0, 1, 2, -1, 0, 1, 2};
  const int16x8_t c0lo = vld1q_s16(kC0Lo), c0hi = vld1q_s16(kC0Hi), c1 = vld1q_s16(kC1);
  for (int64_t p = 0; p < K / 2; ++p) {
    const int16x8_t b = vmulq_n_s16(c1, q[2 * p + 1]);
    const uint8x16_t lo = vreinterpretq_u8_s16(vmlaq_n_s16(b, c0lo, q[2 * p]));
    const uint8x16_t hi = vreinterpretq_u8_s16(vmlaq_n_s16(b, c0hi, q[2 * p]));
    vst1q_u8(tab + 32 * p, vuzp1q_u8(lo, hi));       // little-endian low bytes
    vst1q_u8(tab + 32 * p + 16, vuzp2q_u8(lo, hi));  // and high bytes
  }
}

// Sums of the 16 rows of one group: idx is the group's indices.
void pair_sums(const uint8_t* idx, const uint8_t* tab, int64_t K, int32_t out[16]) {
  const uint8x16_t nib = vdupq_n_u8(0x0f);
  int32x4_t acc[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
  // 64 pairs = 32 steps of two pairs per int16 round.
  for (int64_t j0 = 0; j0 < K / 4; j0 += 32) {
    int16x8_t s0 = vdupq_n_s16(0), s1 = vdupq_n_s16(0);  // rows 0..7, 8..15
#pragma GCC unroll 4
    for (int64_t j = j0; j < j0 + 32; ++j) {
      const uint8x16_t w = vld1q_u8(idx + j * kGroup);
      const uint8x16x4_t t = vld1q_u8_x4(tab + 64 * j);  // lo, hi of pair 2j; then 2j+1
      const uint8x16_t i0 = vandq_u8(w, nib), i1 = vshrq_n_u8(w, 4);
      const uint8x16_t l0 = vqtbl1q_u8(t.val[0], i0), h0 = vqtbl1q_u8(t.val[1], i0);
      const uint8x16_t l1 = vqtbl1q_u8(t.val[2], i1), h1 = vqtbl1q_u8(t.val[3], i1);
      s0 = vaddq_s16(s0, vreinterpretq_s16_u8(vzip1q_u8(l0, h0)));
      s1 = vaddq_s16(s1, vreinterpretq_s16_u8(vzip2q_u8(l0, h0)));
      s0 = vaddq_s16(s0, vreinterpretq_s16_u8(vzip1q_u8(l1, h1)));
      s1 = vaddq_s16(s1, vreinterpretq_s16_u8(vzip2q_u8(l1, h1)));
    }
    acc[0] = vaddw_s16(acc[0], vget_low_s16(s0));
    acc[1] = vaddw_high_s16(acc[1], s0);
    acc[2] = vaddw_s16(acc[2], vget_low_s16(s1));
    acc[3] = vaddw_high_s16(acc[3], s1);
  }
  for (int i = 0; i < 4; ++i) vst1q_s32(out + 4 * i, acc[i]);
}

void gemm_i8(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
             int64_t r1) {
  check_call(w, ActMode::Int8, n, r0, r1);
  if (n == 0 || r0 == r1) return;
  const int64_t K = w.cols, M = w.rows;
  const bool tq1 = is_tq1(w);
  const size_t per_vector = size_t(tq1 ? triple_sets(K) * 512 : K * 16);
  // Reused across calls: a fresh 100+ KB buffer per call would cost more
  // than building the tables.
  thread_local std::vector<uint8_t> tab;
  if (tab.size() < per_vector * kChunk) tab.resize(per_vector * kChunk);
  uint8_t* const tabs = tab.data();
  int64_t base = 0;  // tabs holds the tables of vectors base..
  for_groups<int32_t>(
      w, n, r0, r1,
      [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          uint8_t* t = tabs + size_t(i - i0) * per_vector;
          if (tq1)
            build_triple_tables(q + i * K, K, t);
          else
            build_pair_tables(q + i * K, K, t);
        }
        base = i0;
      },
      [&](const uint8_t* idx, int64_t i, int32_t* s) {
        const uint8_t* t = tabs + size_t(i - base) * per_vector;
        if (tq1)
          triple_sums(idx, t, K, s);
        else
          pair_sums(idx, t, K, s);
      },
      [&](int64_t i, int64_t r, int32_t v) { sums[i * M + r] = v; });
}

// Float activations over the pair layout. The 16 row codes of each column
// are widened to floats and multiplied by that column's activation (an
// outer product), with per-block partial sums as in scalar.
void pair_sums_f32(const uint8_t* idx, const float* x, int64_t K, float out[16]) {
  const uint8x16_t three = vdupq_n_u8(3);
  float32x4_t tot[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
  for (int64_t b = 0; b < K; b += QK) {
    // Two accumulator sets (columns 4j, 4j+1 and 4j+2, 4j+3) halve the FMA chains.
    float32x4_t a[4], c[4];
    for (int i = 0; i < 4; ++i) a[i] = c[i] = vdupq_n_f32(0);
    for (int64_t j = b / 4; j < (b + QK) / 4; ++j) {
      const uint8x16_t w = vld1q_u8(idx + j * kGroup);
      const uint8x16_t codes[4] = {vandq_u8(vshrq_n_u8(w, 2), three), vandq_u8(w, three),
                                   vshrq_n_u8(w, 6), vandq_u8(vshrq_n_u8(w, 4), three)};
#pragma GCC unroll 4
      for (int col = 0; col < 4; ++col) {
        const int8x16_t t = vsubq_s8(vreinterpretq_s8_u8(codes[col]), vdupq_n_s8(1));
        const int16x8_t lo = vmovl_s8(vget_low_s8(t)), hi = vmovl_high_s8(t);
        const float32x4_t f[4] = {
            vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), vcvtq_f32_s32(vmovl_high_s16(lo)),
            vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), vcvtq_f32_s32(vmovl_high_s16(hi))};
        float32x4_t* acc = col < 2 ? a : c;
        for (int i = 0; i < 4; ++i) acc[i] = vfmaq_n_f32(acc[i], f[i], x[4 * j + col]);
      }
    }
    for (int i = 0; i < 4; ++i) tot[i] = vaddq_f32(tot[i], vaddq_f32(a[i], c[i]));
  }
  for (int i = 0; i < 4; ++i) vst1q_f32(out + 4 * i, tot[i]);
}

void gemm_f32(const TernaryMatrix& w, const float* x, int64_t n, float* y, int64_t r0, int64_t r1) {
  check_call(w, ActMode::Float, n, r0, r1);
  const int64_t K = w.cols, M = w.rows;
  for_groups<float>(
      w, n, r0, r1, [](int64_t, int64_t) {},
      [&](const uint8_t* idx, int64_t i, float* s) {
        if (is_tq1(w))
          triple_sums_f32(idx, x + i * K, K, s);
        else
          pair_sums_f32(idx, x + i * K, K, s);
      },
      [&](int64_t i, int64_t r, float v) { y[i * M + r] = w.row_scale[r] * v; });
}

// Fairy2i's int8 products (neon_phase_i8.h): without sdot, widening
// multiplies and pairwise adds into int32 (a product is at most 127).
struct PhaseMull {
  static inline int32x4_t dot(int32x4_t acc, int8x16_t w, int8x16_t x) {
    return vpadalq_s16(vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(x))), vmull_high_s8(w, x));
  }
};

bool available(const CpuFeatures& cpu) { return cpu.neon; }

}  // namespace

const KernelSet& neon_tbl_kernels() {
  static const KernelSet set = [] {
    KernelSet s{"neon-tbl", &available, &gemm_f32, &gemm_i8, &dense_gemm_neon, &prepare,
                             &prepared_bytes, &phase_gemm_neon, &quantize_i8_neon,
                             &phase_gemm_i8_neon<PhaseMull>};
    s.group_gemm_i8 = &group_gemm_i8_neon<PhaseMull>;
    return s;
  }();
  return set;
}

}  // namespace tern::kernels_detail
