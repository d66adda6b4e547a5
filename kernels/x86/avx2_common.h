// What the AVX2 int8 kernel sets (avx2, avx2-vnni) share: decoding one
// 256-weight block of TQ2_0 or TQ1_0, read in place from the GGUF layout
// (or TQ1_0 converted at load to TQ2_0's codes, avx2_layout.h), into
// eight vectors of byte codes (t + 1 in 0..2) lined up with 32 consecutive
// activation bytes each, and the row/vector loops around it.
//
// Everything here is in an anonymous namespace: each includer is compiled
// with its own -m flags, and internal linkage keeps the linker from merging
// one file's AVX-VNNI build of a helper into a file that must run without it.
// For the same reason these files instantiate no std:: templates (weak
// symbols the portable code may share); what needs them (tl1_layout.cpp)
// is compiled without -m flags. The isa_units_define_no_weak_code test
// (tests/tools/check_isa_symbols.sh) fails the build's tests otherwise.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "../kernel_sets.h"
#include "../layout.h"
#include "prefetch.h"
#include "tern/quant.h"

namespace tern::kernels_detail {
namespace {

constexpr int64_t kTq2Block = sizeof(BlockTQ2);  // 66: blocks are unaligned
constexpr int64_t kTq1Block = sizeof(BlockTQ1);  // 54


inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// TQ2_0: byte m of 32-byte half h holds elements 128h + 32n + m in bits 2n,
// so one load and (v >> 2n) & 3 give the codes of elements [128h + 32n, +32).
// The 16-bit shift drags bits of the neighbouring byte into bits 6..7 only,
// which the mask drops. Code 3 (never written by tern) comes out as 3, i.e.
// t = +2, as in scalar's unpack.
inline void decode_tq2(const uint8_t* qs, __m256i c[8]) {
  const __m256i m3 = _mm256_set1_epi8(3);
  for (int h = 0; h < 2; ++h) {
    const __m256i v = load32(qs + 32 * h);
    c[4 * h + 0] = _mm256_and_si256(v, m3);
    c[4 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 2), m3);
    c[4 * h + 2] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m3);
    c[4 * h + 3] = _mm256_and_si256(_mm256_srli_epi16(v, 6), m3);
  }
}

// TQ1_0 trit n of byte b is (3 * B_n) >> 8 with B_n = (uint8_t)(b * 3^n),
// i.e. 0, 1 or 2 as B_n is below 86, below 171, or above. Per byte, B_n+1 =
// 3 B_n mod 256 is two wrapping byte adds, and the trit two compares, so the
// decode needs no multiplier (vpmullw/vpmulhuw share one or two ports and
// made the multiply-based decode half as fast as DRAM). AVX2 compares are
// signed, so bytes are kept as X = B ^ 0x80 = B + 128: then 3X = 3B + 384 =
// (3B ^ 0x80) mod 256, the same recurrence, and B > 85, B > 170 become
// X > -43, X > 42. Per 32 codes: 2 adds, 2 compares, 2 subtracts.
inline __m256i times3(__m256i x) { return _mm256_add_epi8(_mm256_add_epi8(x, x), x); }
inline __m256i tq1_code(__m256i x) {
  const __m256i m1 = _mm256_cmpgt_epi8(x, _mm256_set1_epi8(-43));
  const __m256i m2 = _mm256_cmpgt_epi8(x, _mm256_set1_epi8(42));
  return _mm256_sub_epi8(_mm256_sub_epi8(_mm256_setzero_si256(), m1), m2);
}
inline __m256i flip(__m256i v) { return _mm256_xor_si256(v, _mm256_set1_epi8(int8_t(0x80))); }

// The three parts of a TQ1_0 block (quant.h): qs[0..32) -> elements 32n + m
// (five vectors); qs[32..48) -> 160 + 16n + m, so with that 16-byte part in
// both lanes, powers (1 | 3) and (9 | 27) give elements 160..191 and
// 192..223; the last vector takes power 81 of it in the low lane for
// 224..239 and qh in the high lane, where byte i (element 240 + i) is
// qh[i % 4] times 3^(i / 4).
inline void decode_tq1(const uint8_t* blk, __m256i c[8]) {
  __m256i x = flip(load32(blk));
  c[0] = tq1_code(x);
  for (int n = 1; n < 5; ++n) {
    x = times3(x);
    c[n] = tq1_code(x);
  }
  const __m256i m0 =
      flip(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 32))));
  const __m256i m1 = times3(m0), m2 = times3(m1), m3 = times3(m2), m4 = times3(m3);
  c[5] = tq1_code(_mm256_blend_epi32(m0, m1, 0xF0));
  c[6] = tq1_code(_mm256_blend_epi32(m2, m3, 0xF0));
  uint32_t qh;
  std::memcpy(&qh, blk + 48, 4);
  const __m128i h0 = _mm_xor_si128(_mm_set1_epi32(int32_t(qh)), _mm_set1_epi8(int8_t(0x80)));
  const __m128i h1 = _mm_add_epi8(_mm_add_epi8(h0, h0), h0);
  const __m128i h2 = _mm_add_epi8(_mm_add_epi8(h1, h1), h1);
  const __m128i h3 = _mm_add_epi8(_mm_add_epi8(h2, h2), h2);
  const __m128i h = _mm_blend_epi32(_mm_blend_epi32(h0, h1, 0x2), _mm_blend_epi32(h2, h3, 0x8), 0xC);
  c[7] = tq1_code(_mm256_inserti128_si256(m4, h, 1));
}

// Where a kernel reads w's codes: the Tq2Blocks layout prepare() made of
// TQ1_0 rows (avx2_layout.h), else the GGUF blocks in place. Rows are
// nb * block_bytes apart.
struct Source {
  const uint8_t* base;
  int64_t block_bytes;
  bool tq1;  // base-3 blocks, decoded with decode_tq1
};
inline Source source_of(const TernaryMatrix& w) {
  if (const uint8_t* body = layout_body(w, LayoutKind::Tq2Blocks)) return {body, QK / 4, false};
  switch (ternary_format(w.type)) {
    case Ternary::TQ1: return {w.data, kTq1Block, true};
    case Ternary::TQ2: return {w.data, kTq2Block, false};
  }
  __builtin_unreachable();
}

inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// sum_k q[k], for the correction sum(t * q) = sum((t + 1) * q) - sum(q).
inline int32_t sum_q(const int8_t* q, int64_t K) {
  const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  __m256i acc = _mm256_setzero_si256();
  for (int64_t k = 0; k < K; k += 32)
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, load32(q + k)), ones16));
  return hsum_epi32(acc);
}

// Rows [r0, r1) against NV activation vectors q[0..NV). Dot supplies the
// accumulator type (which may depend on the format: TQ1_0's decode needs
// more registers) and how eight code vectors meet 256 activations.
// All int32 arithmetic wraps, so sum((t+1)q) - sum(q) is exact whenever the
// true sum fits int32 (|sum| <= 128 K), even if the first term alone would not.
template <class Dot, int NV, bool kTq1>
void rows_i8(const TernaryMatrix& w, const Source& src, const int8_t* const* q, const int32_t* qsum,
             int32_t* const* out, int64_t r0, int64_t r1) {
  const int64_t nb = w.cols / QK, bb = src.block_bytes, rb = nb * bb;
  int64_t r = r0;
  if constexpr (NV == 1 && !kTq1) {
    // One vector: two TQ2_0 rows at a time share each activation load
    // (measured ~5% in L2; TQ1_0 is bound by its decode and gains nothing).
    // Pairs in two streams (two_stream_item).
    const int64_t pairs = (r1 - r0) / 2;
    for (int64_t i = 0; i < pairs; ++i) {
      const int64_t p = r0 + 2 * two_stream_item(i, pairs);
      const uint8_t* ra = src.base + p * rb;
      typename Dot::template Acc<2, kTq1> acc;
      for (int64_t b = 0; b < nb; ++b) {
        __m256i c[8];
        // The pair is one stream of 2 rb bytes, consumed 2 bb per step.
        prefetch(ra + 2 * b * bb);
        prefetch(ra + 2 * b * bb + 64);
        decode_tq2(ra + b * bb, c);
        Dot::block(c, q[0] + b * QK, acc, 0);
        decode_tq2(ra + rb + b * bb, c);
        Dot::block(c, q[0] + b * QK, acc, 1);
      }
      out[0][p] = int32_t(uint32_t(Dot::total(acc, 0)) - uint32_t(qsum[0]));
      out[0][p + 1] = int32_t(uint32_t(Dot::total(acc, 1)) - uint32_t(qsum[0]));
    }
    r = r0 + 2 * pairs;
  }
  for (; r < r1; ++r) {
    const uint8_t* row = src.base + r * rb;
    typename Dot::template Acc<NV, kTq1> acc;
    for (int64_t b = 0; b < nb; ++b) {
      __m256i c[8];
      prefetch(row + b * bb);
      if constexpr (kTq1)
        decode_tq1(row + b * bb, c);
      else
        decode_tq2(row + b * bb, c);
      for (int v = 0; v < NV; ++v) Dot::block(c, q[v] + b * QK, acc, v);
    }
    for (int v = 0; v < NV; ++v) out[v][r] = int32_t(uint32_t(Dot::total(acc, v)) - uint32_t(qsum[v]));
  }
}

template <class Dot, int NV>
void rows_i8_any(const TernaryMatrix& w, const Source& src, const int8_t* const* q, const int32_t* qsum,
                 int32_t* const* out, int64_t r0, int64_t r1) {
  if (src.tq1)
    rows_i8<Dot, NV, true>(w, src, q, qsum, out, r0, r1);
  else
    rows_i8<Dot, NV, false>(w, src, q, qsum, out, r0, r1);
}

// Vectors go four at a time, so each decoded block serves up to four.
// Batches of kByteMinVecs or more take avx2_bytes.h's path instead.
template <class Dot>
void gemm_i8_driver(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
                    int64_t r1) {
  check_call(w, ActMode::Int8, n, r0, r1);
  const Source src = source_of(w);
  const int64_t K = w.cols, M = w.rows;
  for (int64_t i0 = 0; i0 < n; i0 += 4) {
    const int nv = n - i0 < 4 ? int(n - i0) : 4;
    const int8_t* qv[4];
    int32_t qsum[4];
    int32_t* out[4];
    for (int v = 0; v < nv; ++v) {
      qv[v] = q + (i0 + v) * K;
      qsum[v] = sum_q(qv[v], K);
      out[v] = sums + (i0 + v) * M;
    }
    switch (nv) {
      case 1: rows_i8_any<Dot, 1>(w, src, qv, qsum, out, r0, r1); break;
      case 2: rows_i8_any<Dot, 2>(w, src, qv, qsum, out, r0, r1); break;
      case 3: rows_i8_any<Dot, 3>(w, src, qv, qsum, out, r0, r1); break;
      default: rows_i8_any<Dot, 4>(w, src, qv, qsum, out, r0, r1); break;
    }
  }
}

}  // namespace
}  // namespace tern::kernels_detail
