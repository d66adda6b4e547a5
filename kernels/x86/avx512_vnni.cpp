// avx512-vnni: int8 activations, 512-bit vpdpbusd over weight codes t + 1.
//
// TQ2_0 weights are repacked at load into CodeLayout::Chunk64
// (code_layout.h): one aligned 64-byte load holds 256 weights, and
// (v >> 2j) & 3 for j = 0..3 gives the byte codes of 64 consecutive
// columns each, lined up with the activations as they lie in memory. Per
// 256 weights and row: 1 load, 3 vpsrlw, 4 vpandd, 4 vpdpbusd, plus 4
// activation loads shared by the 4 rows of a group: ~3.25 instructions per
// 64 weights. The 4 rows of a group are interleaved by 64-byte unit, so
// the group streams its weights as one sequential run (code_layout.h).
//
// TQ1_0 weights stay base 3 (CodeLayout::Base3x64, 1.6 bits per weight, a
// little less than TQ1_0 itself) and are decoded in registers, so the
// kernel streams 20% fewer bytes than for TQ2_0. One 64-byte load holds 320
// weights; per 64 of them: two vpmaddubsw by 3 (even and odd bytes) leave
// 3 * b in 16-bit lanes, whose high byte is the top code (3 * b) >> 8 and
// whose low byte is b * 3 mod 256, the byte with that code shifted out
// (appendix F.2 of Spectra-1.1); a vpsrlw and a vpternlogd gather the 64
// codes, one vpdpbusd takes them, and two vpaddb make b * 3 for the next
// code: ~7 instructions per 64 weights (6 for the last of the 5 codes).
// That is compute-bound near 13 GB/s of weights per Zen 5 core (2560x6912:
// 0.28 ms against 0.17 ms for TQ2_0 with warm caches), so it beats the
// 2-bit layout only where a core's share of DRAM bandwidth is lower than
// that; default_layout() is the one place to change the choice.
//
// vpdpbusd multiplies unsigned by signed bytes, hence codes (0..2) times
// activations; sum((t + 1) q) - sum(q) = sum(t q) exactly: an int32 lane
// gathers 4 products of magnitude <= 3 * 128 per 64 columns, so it stays
// far below 2^31 for any K under 2^24 (the scalar oracle's bound).

// GCC 12's AVX-512 intrinsics read a deliberately undefined vector
// (_mm512_undefined_*) as a pass-through operand and then warn about it.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "../code_layout.h"
#include "../kernel_sets.h"
#include "tern/error.h"

namespace tern::kernels_detail {
namespace {

constexpr int kMaxRows = 4;  // rows per group: shares each activation load 4 ways

// sums[r * V + i] = sum over the row's codes of code * q[i][k], for R rows
// and V vectors; row pointers are 64-byte aligned, and a row's 64-byte
// units lie `stride` bytes apart (code_layout.h); nchunks = K / 256.
template <int R, int V>
void code_dot(const uint8_t* const* rows, int64_t stride, const int8_t* const* q, int64_t nchunks,
              int32_t* sums) {
  constexpr int A = R * V >= 8 ? 1 : 2;  // accumulators per (row, vector): hide vpdpbusd latency
  __m512i acc[R][V][A];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < V; ++i)
      for (int a = 0; a < A; ++a) acc[r][i][a] = _mm512_setzero_si512();
  const __m512i three = _mm512_set1_epi8(3);
  for (int64_t c = 0; c < nchunks; ++c) {
    __m512i v[R];
    for (int r = 0; r < R; ++r) v[r] = _mm512_load_si512(rows[r] + stride * c);
    for (int j = 0; j < 4; ++j) {
      __m512i x[V];
      for (int i = 0; i < V; ++i) x[i] = _mm512_loadu_si512(q[i] + 256 * c + 64 * j);
      for (int r = 0; r < R; ++r) {
        const __m512i codes = _mm512_and_si512(j == 0 ? v[r] : _mm512_srli_epi16(v[r], 2 * j), three);
        for (int i = 0; i < V; ++i)
          acc[r][i][j % A] = _mm512_dpbusd_epi32(acc[r][i][j % A], codes, x[i]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < V; ++i) {
      __m512i s = acc[r][i][0];
      if constexpr (A == 2) s = _mm512_add_epi32(s, acc[r][i][1]);
      sums[r * V + i] = _mm512_reduce_add_epi32(s);
    }
}

// The same for CodeLayout::Base3x64 rows (K columns, not a multiple of 320
// in general: the last group carries only (K % 320) / 64 codes per byte).
template <int R, int V>
void base3_dot(const uint8_t* const* rows, int64_t stride, const int8_t* const* q, int64_t K,
               int32_t* sums) {
  constexpr int A = R * V >= 8 ? 1 : 2;
  __m512i acc[R][V][A];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < V; ++i)
      for (int a = 0; a < A; ++a) acc[r][i][a] = _mm512_setzero_si512();
  const __m512i even3 = _mm512_set1_epi16(0x0003), odd3 = _mm512_set1_epi16(0x0300);
  const __m512i high_bytes = _mm512_set1_epi16(int16_t(0xff00));
  // Codes 0..m-1 of group g (m = 5 except in the tail group).
  auto group = [&](int64_t g, int m) {
    __m512i v[R];
    for (int r = 0; r < R; ++r) v[r] = _mm512_load_si512(rows[r] + stride * g);
    for (int n = 0; n < m; ++n) {
      __m512i x[V];
      for (int i = 0; i < V; ++i) x[i] = _mm512_loadu_si512(q[i] + 320 * g + 64 * n);
      for (int r = 0; r < R; ++r) {
        const __m512i e = _mm512_maddubs_epi16(v[r], even3);  // 3 * b of even bytes
        const __m512i o = _mm512_maddubs_epi16(v[r], odd3);   // 3 * b of odd bytes
        // High bytes of e and o, i.e. the codes, back into byte order: e >> 8 | (o & 0xff00).
        const __m512i codes = _mm512_ternarylogic_epi32(_mm512_srli_epi16(e, 8), o, high_bytes, 0xf8);
        for (int i = 0; i < V; ++i)
          acc[r][i][n % A] = _mm512_dpbusd_epi32(acc[r][i][n % A], codes, x[i]);
        if (n + 1 < m) v[r] = _mm512_add_epi8(_mm512_add_epi8(v[r], v[r]), v[r]);
      }
    }
  };
  const int64_t full = K / 320;
  for (int64_t g = 0; g < full; ++g) group(g, 5);
  if (K % 320) group(full, int(K % 320 / 64));
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < V; ++i) {
      __m512i s = acc[r][i][0];
      if constexpr (A == 2) s = _mm512_add_epi32(s, acc[r][i][1]);
      sums[r * V + i] = _mm512_reduce_add_epi32(s);
    }
}

template <int R, int V>
void chunk64_dot(const uint8_t* const* rows, int64_t stride, const int8_t* const* q, int64_t K,
                 int32_t* sums) {
  code_dot<R, V>(rows, stride, q, K / 256, sums);
}

using CodeDot = void (*)(const uint8_t* const*, int64_t, const int8_t* const*, int64_t K, int32_t*);
constexpr int kMaxVecs = 2;  // 4 rows x 2 vectors = 8 accumulators
constexpr CodeDot kChunk64[kMaxRows][kMaxVecs] = {
    {&chunk64_dot<1, 1>, &chunk64_dot<1, 2>},
    {&chunk64_dot<2, 1>, &chunk64_dot<2, 2>},
    {&chunk64_dot<3, 1>, &chunk64_dot<3, 2>},
    {&chunk64_dot<4, 1>, &chunk64_dot<4, 2>},
};
constexpr CodeDot kBase3[kMaxRows][kMaxVecs] = {
    {&base3_dot<1, 1>, &base3_dot<1, 2>},
    {&base3_dot<2, 1>, &base3_dot<2, 2>},
    {&base3_dot<3, 1>, &base3_dot<3, 2>},
    {&base3_dot<4, 1>, &base3_dot<4, 2>},
};

// TQ1_0 stays base 3 (fewer bytes to stream); TQ2_0 is already 2 bits.
CodeLayout default_layout(const TernaryMatrix& w) {
  return w.type == gguf::TensorType::TQ1_0 ? CodeLayout::Base3x64 : CodeLayout::Chunk64;
}

int32_t activation_sum(const int8_t* q, int64_t K) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i acc = _mm512_setzero_si512();
  for (int64_t k = 0; k < K; k += 64)
    acc = _mm512_dpbusd_epi32(acc, ones, _mm512_loadu_si512(q + k));
  return _mm512_reduce_add_epi32(acc);
}

void gemm_i8(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
             int64_t r1) {
  check_call(w, ActMode::Int8, n, r0, r1);
  if (n == 0 || r0 == r1) return;
  const int64_t K = w.cols, M = w.rows;
  CodeLayout layout = default_layout(w);
  const uint8_t* packed = packed_codes(w, &layout);
  if (layout != CodeLayout::Chunk64 && layout != CodeLayout::Base3x64)
    throw Error("ternary kernel call: avx512-vnni needs weights prepared by avx512-vnni");
  const auto& dot = layout == CodeLayout::Base3x64 ? kBase3 : kChunk64;
  const int64_t row_bytes = code_row_bytes(layout, K);
  // Decode (n = 1) and short batches need no heap allocation per call.
  int32_t qsum_small[16];
  std::vector<int32_t> qsum_big(n > 16 ? static_cast<size_t>(n) : 0);
  int32_t* qsum = n > 16 ? qsum_big.data() : qsum_small;
  for (int64_t i = 0; i < n; ++i) qsum[i] = activation_sum(q + i * K, K);

  uint8_t* scratch = packed ? nullptr : thread_scratch(0, size_t(kMaxRows * row_bytes));
  const int64_t stride = packed ? kPackedUnitStride : kUnitBytes;
  static_assert(kMaxRows == kRowGroup, "a row group is one interleaved group of the layout");
  // Groups follow the layout's: a range starting mid-group begins with a short one.
  for (int64_t r = r0, next; r < r1; r = next) {
    next = std::min(r1, (r / kRowGroup + 1) * kRowGroup);
    const int R = int(next - r);
    const uint8_t* rows[kMaxRows];
    if (packed == nullptr) pack_code_rows(w, layout, r, next, scratch);
    for (int g = 0; g < R; ++g)
      rows[g] = packed ? packed_row(packed, layout, K, r + g) : scratch + g * row_bytes;
    for (int64_t i = 0; i < n; i += kMaxVecs) {
      const int V = int(std::min<int64_t>(kMaxVecs, n - i));
      const int8_t* qs[kMaxVecs];
      for (int v = 0; v < V; ++v) qs[v] = q + (i + v) * K;
      int32_t out[kMaxRows * kMaxVecs];
      dot[R - 1][V - 1](rows, stride, qs, K, out);
      for (int g = 0; g < R; ++g)
        for (int v = 0; v < V; ++v) sums[(i + v) * M + r + g] = out[g * V + v] - qsum[i + v];
    }
  }
}

void gemv_i8(const TernaryMatrix& w, const int8_t* q, int32_t* sums, int64_t r0, int64_t r1) {
  gemm_i8(w, q, 1, sums, r0, r1);
}

std::shared_ptr<const void> prepare(const TernaryMatrix& w) {
  return pack_codes(w, default_layout(w));
}

bool available(const CpuFeatures& c) {
  return c.avx512f && c.avx512bw && c.avx512vl && c.avx512vnni && c.os_avx512;
}

}  // namespace

const KernelSet& avx512_vnni_kernels() {
  static const KernelSet set{"avx512-vnni", &available, nullptr, &gemv_i8, nullptr, &gemm_i8, &prepare};
  return set;
}

}  // namespace tern::kernels_detail
