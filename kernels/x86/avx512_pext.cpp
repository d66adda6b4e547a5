// avx512-pext: FairyFuse's multiplication-free ternary kernel on float
// activations (and on int8 activations converted to float once per call).
//
// Weights are repacked at load into CodeLayout::Linear (code_layout.h): the
// 2-bit codes of 32 consecutive columns fill one 64-bit word, code in bits
// 2i..2i+1, and the 4 rows of a group are interleaved by 8-word unit, so a
// group streams as one sequential run. Codes are 0 (t = -1), 1 (t = 0), 2 (t = +1), so
//   plus  = pext(word, 0xAAAA...)            high bits: t = +1
//   minus = ~(pext(word, 0x5555...) | plus)  neither bit: t = -1
// and each 16-bit half of those masks drives a masked vaddps / vsubps of 16
// activations into a per-row accumulator (plus and minus apart: 16
// independent accumulators for a group of 4 rows). Per 64 weights and row:
// 2 word loads, 4 pext, 2 or, 2 not, 4 shifts, 8 kmov, 4 masked vaddps and
// 4 masked vsubps, plus 4 activation loads shared by the 4 rows: the 8
// vector adds (16 lanes each) bound it. No multiply anywhere in the loop
// (tests/kernels/test_avx512_pext_asm.cpp checks the object code); the
// single row scale is applied after the reduction, outside it.
//
// Int8 mode: every partial sum is an integer of magnitude at most 128 * K,
// exact in float while below 2^24, i.e. for up to 131072 columns; longer
// rows are summed in 131072-column segments whose exact results are added
// as integers, so the int32 sums equal scalar's for every K.
//
// TQ2_0's non-trit code 3 (0b11) counts as +1 here where scalar reads +2;
// loaders reject such rows (find_invalid_tq2_code), so no model has them.

// GCC 12's AVX-512 intrinsics read a deliberately undefined vector
// (_mm512_undefined_*) as a pass-through operand and then warn about it.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../code_layout.h"
#include "../kernel_sets.h"
#include "avx2_group.h"
#include "avx512_group.h"
#include "avx512_dense.h"
#include "avx2_quant.h"
#include "avx512_phase.h"

// The hot loop, kept out of line under a fixed unmangled name so the
// object-code test can find it: raw sums T[r] . x over nunits * 256 columns
// for 4 rows (a short group repeats a row pointer and ignores the extra),
// each row's 64-byte units `stride` bytes apart (code_layout.h).
extern "C" __attribute__((noinline, noclone)) void tern_pext_row_block(
    const uint8_t* const* rows, int64_t stride, const float* x, int64_t nunits, float* out) {
  const uint8_t* row[4] = {rows[0], rows[1], rows[2], rows[3]};
  __m512 plus[4][2], minus[4][2];
  for (int r = 0; r < 4; ++r)
    for (int h = 0; h < 2; ++h) plus[r][h] = minus[r][h] = _mm512_setzero_ps();
  for (int64_t u = 0; u < nunits; ++u) {
    for (int j = 0; j < 8; ++j, x += 32) {  // 8 words of 32 codes per unit
      const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
      for (int r = 0; r < 4; ++r) {
        uint64_t word;
        std::memcpy(&word, row[r] + 8 * j, sizeof word);
        const uint32_t hi = uint32_t(_pext_u64(word, 0xAAAAAAAAAAAAAAAAull));
        const uint32_t lo = uint32_t(_pext_u64(word, 0x5555555555555555ull));
        const uint32_t neg = ~(hi | lo);
        plus[r][0] = _mm512_mask_add_ps(plus[r][0], __mmask16(hi), plus[r][0], x0);
        plus[r][1] = _mm512_mask_add_ps(plus[r][1], __mmask16(hi >> 16), plus[r][1], x1);
        minus[r][0] = _mm512_mask_sub_ps(minus[r][0], __mmask16(neg), minus[r][0], x0);
        minus[r][1] = _mm512_mask_sub_ps(minus[r][1], __mmask16(neg >> 16), minus[r][1], x1);
      }
    }
    for (int r = 0; r < 4; ++r) row[r] += stride;
  }
  for (int r = 0; r < 4; ++r) {
    const __m512 p = _mm512_add_ps(plus[r][0], plus[r][1]);
    const __m512 m = _mm512_add_ps(minus[r][0], minus[r][1]);
    out[r] = _mm512_reduce_add_ps(_mm512_add_ps(p, m));
  }
}

namespace tern::kernels_detail {
namespace {

constexpr int64_t kExactCols = 131072;  // 128 * kExactCols = 2^24

// Rows [r0, r1) of w, in the layout's groups of 4 (a range starting or
// ending mid-group gets a short group there), through
// `each(rows, stride, r, R)`: the group's 4 row pointers (a short group
// repeats its last row), the unit stride, the first row and the real size.
template <class Each>
void for_row_groups(const TernaryMatrix& w, int64_t r0, int64_t r1, Each&& each) {
  const int64_t row_bytes = code_row_bytes(CodeLayout::Linear, w.cols);
  const CodeLayout layout = CodeLayout::Linear;
  const uint8_t* packed = layout_body(w, layout);
  uint8_t* scratch = packed ? nullptr : thread_scratch(0, size_t(kRowGroup * row_bytes));
  const int64_t stride = packed ? kPackedUnitStride : kUnitBytes;
  for (int64_t r = r0, next; r < r1; r = next) {
    next = std::min(r1, (r / kRowGroup + 1) * kRowGroup);
    const int R = int(next - r);
    if (packed == nullptr) pack_code_rows(w, CodeLayout::Linear, r, next, scratch);
    const uint8_t* rows[kRowGroup];
    for (int g = 0; g < kRowGroup; ++g) {
      const int64_t at = r + std::min(g, R - 1);
      rows[g] = packed ? packed_row(packed, layout, w.cols, at) : scratch + (at - r) * row_bytes;
    }
    each(rows, stride, r, R);
  }
}

void gemm_f32(const TernaryMatrix& w, const float* x, int64_t n, float* y, int64_t r0,
              int64_t r1) {
  check_call(w, ActMode::Float, n, r0, r1);
  if (n == 0 || r0 == r1) return;
  const int64_t K = w.cols, M = w.rows;
  for_row_groups(w, r0, r1, [&](const uint8_t* const* rows, int64_t stride, int64_t r, int R) {
    for (int64_t i = 0; i < n; ++i) {
      float out[kRowGroup];
      tern_pext_row_block(rows, stride, x + i * K, K / 256, out);
      for (int g = 0; g < R; ++g) y[i * M + r + g] = w.row_scale[r + g] * out[g];
    }
  });
}

void gemm_i8(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
             int64_t r1) {
  check_call(w, ActMode::Int8, n, r0, r1);
  if (n == 0 || r0 == r1) return;
  const int64_t K = w.cols, M = w.rows;
  float* xf = reinterpret_cast<float*>(thread_scratch(1, size_t(n * K) * sizeof(float)));
  for (int64_t k = 0; k < n * K; k += 16)
    _mm512_store_ps(xf + k, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k)))));
  for_row_groups(w, r0, r1, [&](const uint8_t* const* rows, int64_t stride, int64_t r, int R) {
    for (int64_t i = 0; i < n; ++i) {
      int32_t total[kRowGroup] = {};
      for (int64_t k0 = 0; k0 < K; k0 += kExactCols) {
        const int64_t len = std::min(kExactCols, K - k0);
        const uint8_t* seg[kRowGroup];
        for (int g = 0; g < kRowGroup; ++g) seg[g] = rows[g] + k0 / 256 * stride;
        float out[kRowGroup];
        tern_pext_row_block(seg, stride, xf + i * K + k0, len / 256, out);
        for (int g = 0; g < kRowGroup; ++g) total[g] += int32_t(out[g]);
      }
      for (int g = 0; g < R; ++g) sums[i * M + r + g] = total[g];
    }
  });
}

std::shared_ptr<const void> prepare(const TernaryMatrix& w) {
  return pack_codes(w, CodeLayout::Linear);
}

int64_t prepared_bytes(const TernaryMatrix& w) { return packed_codes_bytes(w, CodeLayout::Linear); }

bool available(const CpuFeatures& c) {
  return c.avx512f && c.avx512bw && c.avx512vl && c.os_avx512 && c.bmi2 && c.fast_pext &&
         c.fma && c.f16c;
}

}  // namespace

const KernelSet& avx512_pext_kernels() {
  static const KernelSet set{"avx512-pext", &available, &gemm_f32, &gemm_i8, &dense_gemm_avx512, &prepare,
                             &prepared_bytes, &phase_gemm_avx512<true>, &quantize_i8_avx2, nullptr,
                             nullptr, &silu_glu_avx512, &relu2_glu_avx512, &group_gemm_i8_avx512<GroupMaddubs512>};
  return set;
}

PhaseGemm avx512_unfused_phase_gemm() { return &phase_gemm_avx512<false>; }

}  // namespace tern::kernels_detail
