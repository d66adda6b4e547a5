// avx512-vnni: int8 activations, 512-bit vpdpbusd over weight codes t + 1.
// Internal to the two sets built on it: avx512_vnni.cpp, and avx512_amx.cpp
// (prompt batches through AMX tiles). Everything is in an anonymous
// namespace, so each includer gets its own copy, compiled with its flags.
//
// TQ2_0 weights are repacked at load into CodeLayout::Chunk64
// (code_layout.h): one aligned 64-byte load v holds 256 weights; v and
// v >> 4 masked with 0x03 and 0x0c give the byte codes of 64 consecutive
// columns each (times 1 or 4), lined up with the activations as they lie in
// memory. The factor 4 stays in the products: codes 1 and 3 go to their own
// accumulator, shifted right by 2 once per row at the end (exact: every
// product in it is a multiple of 4). Per 64 weights and row: one vpandd and
// one vpdpbusd, plus one shift per 256. A shift per code (the first
// version) was 1.3x slower from cache and further from the memory roof;
// masking all four codes in place (4 accumulators per row) left GCC 12
// shuffling 16 accumulators through the stack, 5% further from the roof.
// Short batches shift each code (code_lanes says why); prompt batches
// decode the codes to bytes once per row group (avx512_bytes.h). The 4
// rows of a group are interleaved by 64-byte unit, so the group streams
// its weights as one sequential run (code_layout.h), which the loop
// prefetches kPrefetch bytes ahead.
//
// TQ1_0 weights stay base 3 (CodeLayout::Base3x64, 1.6 bits per weight, a
// little less than TQ1_0 itself). Byte b_0 = ceil(v * 256 / 243) holds five
// codes; with b_{n+1} = 3 b_n mod 256, code n is t_n = (3 b_n) >> 8
// (appendix F.2 of Spectra-1.1), that is 256 t_n = 3 b_n - b_{n+1} exactly.
// So the kernel never extracts a code: per 64 weights it feeds b_n and
// b_{n+1} to two vpdpbusd against the same activations (accumulators A and
// B) and makes b_{n+1} with two vpaddb; the row's code sum is (3A - B) / 256.
// Four instructions per 64 weights, against seven when the codes were
// decoded; with 20% fewer bytes than TQ2_0 this layout is the faster of the
// two from DRAM (docs/PERFORMANCE.md, "Kernels").
//
// vpdpbusd multiplies unsigned by signed bytes, hence codes (or scaled
// codes, or base-3 bytes) times activations; sum((t + 1) q) - sum(q) =
// sum(t q). int32 lanes wrap, so rows are summed in segments short enough
// that every lane's true value fits (kChunkSegment, kGroupSegment) and the
// segments are added in 64 bits: exact for any K the scalar oracle takes.
//
// Fairy2i linears on int8 activations: avx512_phase_i8.h.

// GCC 12's AVX-512 intrinsics read a deliberately undefined vector
// (_mm512_undefined_*) as a pass-through operand and then warn about it.
#pragma once
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "../code_layout.h"
#include "../kernel_sets.h"
#include "avx2_group.h"
#include "avx512_group.h"
#include "avx512_bytes.h"
#include "avx512_dense.h"
#include "avx2_quant.h"
#include "avx512_phase_i8.h"
#include "prefetch.h"

namespace tern::kernels_detail {
namespace {

constexpr int kMaxRows = 4;  // rows per group: shares each activation load 4 ways
// Prompt vectors per pass over a row group: each chunk's codes serve four
// (16 accumulators, 8 code vectors and 4 inputs fill the 32 registers;
// 1.06-1.25x the prompt speed of two at L's shapes on a Xeon). Base 3 keeps
// two accumulators per (row, vector) and spills at four (0.5x), so it
// stays at two.
constexpr int kChunkVecs = 4;
constexpr int kBase3Vecs = 2;
constexpr int kMaxVecs = std::max(kChunkVecs, kBase3Vecs);
// Bytes ahead of the current load that the loop asks for. A group's four
// rows are one stream, so this is all a thread has in flight: bandwidth
// times latency wants about 3-4 KiB on a Xeon core reading 14-19 GB/s.
// On that Xeon (DRAM-cold, tern_bench_kernels, S and L shapes) 1 KiB gave
// 0.63-0.77 of the roof, 2 KiB 0.70-0.85, 4 KiB 0.83-0.95, 8 KiB
// 0.80-0.95 (more reads past the end of small matrices).
constexpr int64_t kPrefetch = 4096;
// Chunks (256 columns) per int32 segment in code_segment: the scaled
// accumulator gathers 2 * 4 * (4 * 2) * 128 per chunk and lane in
// magnitude, < 2^31 over 8192 chunks.
constexpr int64_t kChunkSegment = 8192;
// Groups (320 columns) per segment in base3_dot: 3A - B gathers 256 * 2 *
// 128 * 20 per group and lane, < 2^31 over 1024 groups.
constexpr int64_t kGroupSegment = 1024;

// The 4 lines of the group stream kPrefetch bytes ahead of `at`
// (__builtin_prefetch for the reason prefetch.h gives).
inline void prefetch_ahead(const uint8_t* at) {
  for (int l = 0; l < 4; ++l)
    __builtin_prefetch(at + kPrefetch + 64 * l, 0, 3);
}

// out[r][i] = lane sums (16 int32) of row r against vector i over chunks
// [c0, c1), for R rows whose 64-byte units lie `stride` bytes apart
// (code_layout.h). With one vector (decode) codes 1 and 3 stay times 4 in a
// second accumulator per row (kScaled); with more (prompt batches) every
// code is shifted down into one accumulator per (row, vector), so 4 rows x
// 4 vectors fit the registers and each chunk serves all of them (more
// accumulators per pair at 2 rows per call made prompts 1.4x slower).
template <int R, int V>
inline __attribute__((always_inline)) void code_lanes(const uint8_t* const* rows, int64_t stride,
                                                      const int8_t* const* q, int64_t c0, int64_t c1,
                                                      __m512i (&out)[R][V]) {
  constexpr bool kScaled = V == 1;
  constexpr int A = kScaled ? 2 : 1;
  __m512i acc[R][V][A];
  for (auto& a : acc)
    for (auto& b : a)
      for (auto& c : b) c = _mm512_setzero_si512();
  const __m512i low = _mm512_set1_epi8(0x03), high = _mm512_set1_epi8(0x0c);
  for (int64_t c = c0; c < c1; ++c) {
    prefetch_ahead(rows[0] + stride * c);
    __m512i v[R][2];  // codes 0, 1 in bits 0..3; codes 2, 3 shifted there
    for (int r = 0; r < R; ++r) {
      v[r][0] = _mm512_load_si512(rows[r] + stride * c);
      v[r][1] = _mm512_srli_epi16(v[r][0], 4);
    }
    for (int j = 0; j < 4; ++j) {
      __m512i x[V];
      for (int i = 0; i < V; ++i) x[i] = _mm512_loadu_si512(q[i] + 256 * c + 64 * j);
      for (int r = 0; r < R; ++r) {
        const __m512i b = v[r][j / 2];
        const __m512i codes = kScaled ? _mm512_and_si512(b, j % 2 ? high : low)  // 4^(j%2) * code
                                      : _mm512_and_si512(j % 2 ? _mm512_srli_epi16(b, 2) : b, low);
        for (int i = 0; i < V; ++i)
          acc[r][i][kScaled ? j % 2 : 0] = _mm512_dpbusd_epi32(acc[r][i][kScaled ? j % 2 : 0], codes, x[i]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < V; ++i) {
      out[r][i] = acc[r][i][0];
      if constexpr (kScaled) out[r][i] = _mm512_add_epi32(out[r][i], _mm512_srai_epi32(acc[r][i][1], 2));
    }
}

// sums[k] += v's lane k, k < N <= 8. Masked only when N < 8: the callers
// read sums back at once, and a masked store forwards to no load.
template <int N>
inline __attribute__((always_inline)) void add_sums8(int64_t* sums, __m512i v) {
  if constexpr (N == 8) {
    _mm512_storeu_si512(sums, _mm512_add_epi64(_mm512_loadu_si512(sums), v));
  } else {
    const __mmask8 m = __mmask8((1u << N) - 1);
    _mm512_mask_storeu_epi64(sums, m, _mm512_add_epi64(_mm512_maskz_loadu_epi64(m, sums), v));
  }
}

// sums[k] += the lane sum of s[k] (lane_sums16), k < N <= 16.
template <int N>
inline __attribute__((always_inline)) void add_lane_sums(const __m512i* s, int64_t* sums) {
  const __m512i e = lane_sums16<N>(s);
  add_sums8<std::min(N, 8)>(sums, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(e)));
  if constexpr (N > 8) add_sums8<N - 8>(sums + 8, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(e, 1)));
}

// sums[r * V + i] += code sum of row r against vector i over chunks [c0, c1).
template <int R, int V>
void code_segment(const uint8_t* const* rows, int64_t stride, const int8_t* const* q, int64_t c0,
                  int64_t c1, int64_t* sums) {
  __m512i s[R][V];
  code_lanes<R, V>(rows, stride, q, c0, c1, s);
  add_lane_sums<R * V>(&s[0][0], sums);
}

template <int R, int V>
inline void base3_group(const uint8_t* const* rows, int64_t stride, const int8_t* const* q, int64_t g,
                        int m, __m512i (&a)[R][V], __m512i (&b)[R][V]) {
  prefetch_ahead(rows[0] + stride * g);
  __m512i v[R];
  for (int r = 0; r < R; ++r) v[r] = _mm512_load_si512(rows[r] + stride * g);
  for (int n = 0; n < m; ++n) {
    __m512i x[V];
    for (int i = 0; i < V; ++i) x[i] = _mm512_loadu_si512(q[i] + 320 * g + 64 * n);
    for (int r = 0; r < R; ++r) {
      for (int i = 0; i < V; ++i) a[r][i] = _mm512_dpbusd_epi32(a[r][i], v[r], x[i]);  // b_n
      v[r] = _mm512_add_epi8(_mm512_add_epi8(v[r], v[r]), v[r]);
      for (int i = 0; i < V; ++i) b[r][i] = _mm512_dpbusd_epi32(b[r][i], v[r], x[i]);  // b_{n+1}
    }
  }
}

// The same as code_lanes for CodeLayout::Base3x64 groups [g0, g1) of a
// row of K columns (the last group of a row may hold fewer than 5 planes).
template <int R, int V>
inline __attribute__((always_inline)) void base3_lanes(const uint8_t* const* rows, int64_t stride,
                                                       const int8_t* const* q, int64_t g0, int64_t g1,
                                                       int64_t K, __m512i (&out)[R][V]) {
  __m512i a[R][V], b[R][V];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < V; ++i) a[r][i] = b[r][i] = _mm512_setzero_si512();
  const int64_t full = std::min(g1, K / 320);
  for (int64_t g = g0; g < full; ++g) base3_group<R, V>(rows, stride, q, g, 5, a, b);
  if (full < g1) base3_group<R, V>(rows, stride, q, full, int(K % 320 / 64), a, b);
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < V; ++i) {
      const __m512i three_a = _mm512_add_epi32(_mm512_add_epi32(a[r][i], a[r][i]), a[r][i]);
      out[r][i] = _mm512_srai_epi32(_mm512_sub_epi32(three_a, b[r][i]), 8);
    }
}

template <int R, int V>
void base3_segment(const uint8_t* const* rows, int64_t stride, const int8_t* const* q, int64_t g0,
                   int64_t g1, int64_t K, int64_t* sums) {
  __m512i s[R][V];
  base3_lanes<R, V>(rows, stride, q, g0, g1, K, s);
  add_lane_sums<R * V>(&s[0][0], sums);
}

// The lane sums of 4 rows as 4 int32: one transpose-and-add tree in place
// of four horizontal reductions. int32 adds wrap, so the result is exact
// whenever the true sums fit, as the callers' sums do.
inline __m128i reduce4(const __m512i (&s)[4][1]) {
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(s[0][0], s[1][0]),
                                       _mm512_unpackhi_epi32(s[0][0], s[1][0]));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(s[2][0], s[3][0]),
                                       _mm512_unpackhi_epi32(s[2][0], s[3][0]));
  const __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(u), _mm512_extracti64x4_epi64(u, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// Decode (one vector) over whole row groups [G0, G1) of a prepared matrix
// whose rows fit one segment: one loop, so a group costs its chunks and one
// 4-row reduction. The general path's per-group call, row pointers and
// four horizontal sums made a 1536-column group cost 1.6x its chunks.
// sums[4G + r] = code sum of row 4G + r minus qsum.
template <bool Base3>
void decode_groups(const uint8_t* packed, int64_t group_bytes, int64_t K, const int8_t* q, int32_t qsum,
                   int32_t* sums, int64_t G0, int64_t G1) {
  const __m128i bias = _mm_set1_epi32(qsum);
  // Groups in two streams (two_stream_item).
  for (int64_t i = 0; i < G1 - G0; ++i) {
    const int64_t G = G0 + two_stream_item(i, G1 - G0);
    const uint8_t* base = packed + G * group_bytes;
    const uint8_t* rows[kRowGroup] = {base, base + kUnitBytes, base + 2 * kUnitBytes, base + 3 * kUnitBytes};
    __m512i s[kRowGroup][1];
    if constexpr (Base3) base3_lanes<kRowGroup, 1>(rows, kPackedUnitStride, &q, 0, (K + 319) / 320, K, s);
    else code_lanes<kRowGroup, 1>(rows, kPackedUnitStride, &q, 0, K / 256, s);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(sums + kRowGroup * G), _mm_sub_epi32(reduce4(s), bias));
  }
}

// Code sums of R rows against V vectors over all K columns, in segments.
template <int R, int V>
void chunk64_dot(const uint8_t* const* rows, int64_t stride, const int8_t* const* q, int64_t K,
                 int64_t* sums) {
  for (int64_t c = 0; c < K / 256; c += kChunkSegment)
    code_segment<R, V>(rows, stride, q, c, std::min(K / 256, c + kChunkSegment), sums);
}

template <int R, int V>
void base3_dot(const uint8_t* const* rows, int64_t stride, const int8_t* const* q, int64_t K,
               int64_t* sums) {
  const int64_t groups = (K + 319) / 320;
  for (int64_t g = 0; g < groups; g += kGroupSegment)
    base3_segment<R, V>(rows, stride, q, g, std::min(groups, g + kGroupSegment), K, sums);
}

using CodeDot = void (*)(const uint8_t* const*, int64_t, const int8_t* const*, int64_t K, int64_t*);
constexpr CodeDot kChunk64[kMaxRows][kChunkVecs] = {
    {&chunk64_dot<1, 1>, &chunk64_dot<1, 2>, &chunk64_dot<1, 3>, &chunk64_dot<1, 4>},
    {&chunk64_dot<2, 1>, &chunk64_dot<2, 2>, &chunk64_dot<2, 3>, &chunk64_dot<2, 4>},
    {&chunk64_dot<3, 1>, &chunk64_dot<3, 2>, &chunk64_dot<3, 3>, &chunk64_dot<3, 4>},
    {&chunk64_dot<4, 1>, &chunk64_dot<4, 2>, &chunk64_dot<4, 3>, &chunk64_dot<4, 4>},
};
constexpr CodeDot kBase3[kMaxRows][kBase3Vecs] = {
    {&base3_dot<1, 1>, &base3_dot<1, 2>},
    {&base3_dot<2, 1>, &base3_dot<2, 2>},
    {&base3_dot<3, 1>, &base3_dot<3, 2>},
    {&base3_dot<4, 1>, &base3_dot<4, 2>},
};

// TQ1_0 stays base 3 (fewer bytes to stream); TQ2_0 is already 2 bits.
CodeLayout default_layout(const TernaryMatrix& w) {
  switch (ternary_format(w.type)) {
    case Ternary::TQ1: return CodeLayout::Base3x64;
    case Ternary::TQ2: return CodeLayout::Chunk64;
  }
  __builtin_unreachable();
}

int32_t activation_sum(const int8_t* q, int64_t K) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i acc = _mm512_setzero_si512();
  for (int64_t k = 0; k < K; k += 64)
    acc = _mm512_dpbusd_epi32(acc, ones, _mm512_loadu_si512(q + k));
  return _mm512_reduce_add_epi32(acc);
}

// Rows [r0, r1) of a checked call, its codes in `layout` (packed: the
// prepared body, or null to repack rows on the fly), qsum[i] = sum q of
// vector i.
void vnni_rows(const TernaryMatrix& w, CodeLayout layout, const uint8_t* packed, const int8_t* q,
               int64_t n, const int32_t* qsum, int32_t* sums, int64_t r0, int64_t r1) {
  const int64_t K = w.cols, M = w.rows;
  const bool base3 = layout == CodeLayout::Base3x64;
  const int vecs = base3 ? kBase3Vecs : kChunkVecs;
  const int64_t row_bytes = code_row_bytes(layout, K);
  uint8_t* scratch = packed ? nullptr : thread_scratch(0, size_t(kMaxRows * row_bytes));
  const int64_t stride = packed ? kPackedUnitStride : kUnitBytes;
  static_assert(kMaxRows == kRowGroup, "a row group is one interleaved group of the layout");
  // Groups follow the layout's: a range starting mid-group begins with a short one.
  const auto each_group = [&](int64_t a, int64_t b) {
    for (int64_t r = a, next; r < b; r = next) {
      next = std::min(b, (r / kRowGroup + 1) * kRowGroup);
      const int R = int(next - r);
      const uint8_t* rows[kMaxRows];
      if (packed == nullptr) pack_code_rows(w, layout, r, next, scratch);
      for (int g = 0; g < R; ++g)
        rows[g] = packed ? packed_row(packed, layout, K, r + g) : scratch + g * row_bytes;
      for (int64_t i = 0; i < n; i += vecs) {
        const int V = int(std::min<int64_t>(vecs, n - i));
        const int8_t* qs[kMaxVecs];
        for (int v = 0; v < V; ++v) qs[v] = q + (i + v) * K;
        int64_t out[kMaxRows * kMaxVecs] = {};
        (base3 ? kBase3[R - 1][V - 1] : kChunk64[R - 1][V - 1])(rows, stride, qs, K, out);
        for (int g = 0; g < R; ++g)
          for (int v = 0; v < V; ++v) sums[(i + v) * M + r + g] = int32_t(out[g * V + v] - qsum[i + v]);
      }
    }
  };
  if (n >= (base3 ? kDecodeVecsBase3 : kDecodeVecsChunk64))
    return byte_rows(w, layout, packed, scratch, q, n, qsum, sums, r0, r1);
  // Decode on a prepared matrix: whole groups in one loop (decode_groups),
  // when a row is one segment (every real shape).
  const bool one_segment = base3 ? (K + 319) / 320 <= kGroupSegment : K / 256 <= kChunkSegment;
  const int64_t G0 = (r0 + kRowGroup - 1) / kRowGroup, G1 = r1 / kRowGroup;
  if (packed == nullptr || n != 1 || !one_segment || G0 >= G1) return each_group(r0, r1);
  each_group(r0, G0 * kRowGroup);
  (base3 ? decode_groups<true> : decode_groups<false>)(packed, kRowGroup * row_bytes, K, q, qsum[0], sums,
                                                       G0, G1);
  each_group(G1 * kRowGroup, r1);
}

// gemm_i8 once its arguments are checked.
void gemm_i8_checked(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
                     int64_t r1) {
  if (n == 0 || r0 == r1) return;
  const int64_t K = w.cols;
  const CodeLayout layout = default_layout(w);
  const uint8_t* packed = layout_body(w, layout);
  // Decode (n = 1) and short batches need no heap allocation per call.
  int32_t qsum_small[16];
  std::vector<int32_t> qsum_big(n > 16 ? static_cast<size_t>(n) : 0);
  int32_t* qsum = n > 16 ? qsum_big.data() : qsum_small;
  for (int64_t i = 0; i < n; ++i) qsum[i] = activation_sum(q + i * K, K);
  vnni_rows(w, layout, packed, q, n, qsum, sums, r0, r1);
}

// avx512-amx checks once itself and calls the parts above.
[[maybe_unused]] void gemm_i8(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums,
                              int64_t r0, int64_t r1) {
  check_call(w, ActMode::Int8, n, r0, r1);
  gemm_i8_checked(w, q, n, sums, r0, r1);
}

std::shared_ptr<const void> prepare(const TernaryMatrix& w) {
  return pack_codes(w, default_layout(w));
}

int64_t prepared_bytes(const TernaryMatrix& w) { return packed_codes_bytes(w, default_layout(w)); }

bool available(const CpuFeatures& c) {
  return c.avx512f && c.avx512bw && c.avx512vl && c.avx512vnni && c.os_avx512 && c.fma &&
         c.f16c;
}

}  // namespace
}  // namespace tern::kernels_detail
