// What the AVX2 int8 kernel sets (avx2, avx2-vnni) share: decoding one
// 256-weight block of TQ2_0 or TQ1_0, read in place from the GGUF layout,
// into eight vectors of byte codes (t + 1 in 0..2) lined up with 32
// consecutive activation bytes each, and the row/vector loops around it.
//
// Everything here is in an anonymous namespace: each includer is compiled
// with its own -m flags, and internal linkage keeps the linker from merging
// one file's AVX-VNNI build of a helper into a file that must run without it.
// For the same reason these files instantiate no std:: templates (weak
// symbols the portable code may share); what needs them (tl1_layout.cpp)
// is compiled without -m flags.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "../kernel_sets.h"
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

// TQ1_0 trit n of byte b is ((uint8_t)(b * 3^n) * 3) >> 8. With b in the
// high byte of a 16-bit lane (low byte zero), mullo by 3^n leaves exactly
// (uint8_t)(b * 3^n) in the high byte, and mulhi_epu16 by 3 returns
// (B * 256 * 3) >> 16 = (3B) >> 8, the trit, in the low byte. Even bytes are
// moved up by a shift, odd bytes are already there (masked); the odd trits
// are wanted back in the high byte, so they are taken as the high byte of
// mulhi by 3 * 256 (= 3B), and a byte blend joins the two. `p` holds the
// 16-bit multipliers 3^n. Per 32 codes: 2 vpmullw, 2 vpmulhuw, 1 vpblendvb.
struct Tq1Lanes {
  __m256i even, odd;
};
// Hides a constant from the optimizer: GCC otherwise turns vpmullw by 9 or
// 27 into two or three shift/add instructions, more work than one multiply.
inline __m256i opaque(__m256i v) {
  __asm__("" : "+x"(v));
  return v;
}
inline Tq1Lanes tq1_lanes(__m256i v) {
  return {_mm256_slli_epi16(v, 8), _mm256_and_si256(v, _mm256_set1_epi16(int16_t(0xFF00)))};
}
inline __m256i tq1_join(__m256i even, __m256i odd) {
  const __m256i e = _mm256_mulhi_epu16(even, _mm256_set1_epi16(3));
  const __m256i o = _mm256_mulhi_epu16(odd, _mm256_set1_epi16(3 * 256));
  return _mm256_blendv_epi8(e, o, _mm256_set1_epi16(int16_t(0xFF00)));
}
inline __m256i tq1_trits(const Tq1Lanes& x, __m256i p) {
  return tq1_join(_mm256_mullo_epi16(x.even, p), _mm256_mullo_epi16(x.odd, p));
}
inline __m256i tq1_trits0(const Tq1Lanes& x) { return tq1_join(x.even, x.odd); }  // 3^0: no multiply

// The three parts of a TQ1_0 block (quant.h): qs[0..32) -> elements 32n + m
// (five vectors); qs[32..48) -> 160 + 16n + m, so that 16-byte part placed
// in both lanes with multipliers (1 | 3) and (9 | 27) gives elements 160..191
// and 192..223; the last vector takes (81) on qs[32..48) in the low lane for
// 224..239 and qh in the high lane, where byte i (element 240 + i) is
// qh[i % 4] times 3^(i / 4).
// The multipliers, made once per call (see opaque()).
struct Tq1Powers {
  __m256i p3, p9, p27, p81, mid01, mid23, last;
  Tq1Powers()
      : p3(opaque(_mm256_set1_epi16(3))),
        p9(opaque(_mm256_set1_epi16(9))),
        p27(opaque(_mm256_set1_epi16(27))),
        p81(opaque(_mm256_set1_epi16(81))),
        mid01(opaque(_mm256_setr_epi16(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3))),
        mid23(opaque(_mm256_setr_epi16(9, 9, 9, 9, 9, 9, 9, 9, 27, 27, 27, 27, 27, 27, 27, 27))),
        last(opaque(_mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27))) {}
};

inline void decode_tq1(const uint8_t* blk, const Tq1Powers& pw, __m256i c[8]) {
  const Tq1Lanes a = tq1_lanes(load32(blk));
  c[0] = tq1_trits0(a);
  c[1] = tq1_trits(a, pw.p3);
  c[2] = tq1_trits(a, pw.p9);
  c[3] = tq1_trits(a, pw.p27);
  c[4] = tq1_trits(a, pw.p81);
  const __m128i mid = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 32));
  const Tq1Lanes b = tq1_lanes(_mm256_broadcastsi128_si256(mid));
  c[5] = tq1_trits(b, pw.mid01);
  c[6] = tq1_trits(b, pw.mid23);
  uint32_t qh;
  std::memcpy(&qh, blk + 48, 4);
  const Tq1Lanes t = tq1_lanes(
      _mm256_inserti128_si256(_mm256_castsi128_si256(mid), _mm_set1_epi32(int32_t(qh)), 1));
  c[7] = tq1_trits(t, pw.last);
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
void rows_i8(const TernaryMatrix& w, const int8_t* const* q, const int32_t* qsum, int32_t* const* out,
             int64_t r0, int64_t r1) {
  const int64_t nb = w.cols / QK, bb = kTq1 ? kTq1Block : kTq2Block, rb = nb * bb;
  const Tq1Powers pw;
  int64_t r = r0;
  if constexpr (NV == 1 && !kTq1) {
    // One vector: two TQ2_0 rows at a time share each activation load
    // (measured ~5% in L2; TQ1_0 is bound by its decode and gains nothing).
    for (; r + 1 < r1; r += 2) {
      const uint8_t* ra = w.data + r * rb;
      typename Dot::template Acc<2, kTq1> acc;
      for (int64_t b = 0; b < nb; ++b) {
        __m256i c[8];
        decode_tq2(ra + b * bb, c);
        Dot::block(c, q[0] + b * QK, acc, 0);
        decode_tq2(ra + rb + b * bb, c);
        Dot::block(c, q[0] + b * QK, acc, 1);
      }
      out[0][r] = int32_t(uint32_t(Dot::total(acc, 0)) - uint32_t(qsum[0]));
      out[0][r + 1] = int32_t(uint32_t(Dot::total(acc, 1)) - uint32_t(qsum[0]));
    }
  }
  for (; r < r1; ++r) {
    const uint8_t* row = w.data + r * rb;
    typename Dot::template Acc<NV, kTq1> acc;
    for (int64_t b = 0; b < nb; ++b) {
      __m256i c[8];
      if constexpr (kTq1)
        decode_tq1(row + b * bb, pw, c);
      else
        decode_tq2(row + b * bb, c);
      for (int v = 0; v < NV; ++v) Dot::block(c, q[v] + b * QK, acc, v);
    }
    for (int v = 0; v < NV; ++v) out[v][r] = int32_t(uint32_t(Dot::total(acc, v)) - uint32_t(qsum[v]));
  }
}

template <class Dot, int NV>
void rows_i8_any(const TernaryMatrix& w, const int8_t* const* q, const int32_t* qsum, int32_t* const* out,
                 int64_t r0, int64_t r1) {
  if (w.type == gguf::TensorType::TQ1_0)
    rows_i8<Dot, NV, true>(w, q, qsum, out, r0, r1);
  else
    rows_i8<Dot, NV, false>(w, q, qsum, out, r0, r1);
}

// Vectors go four at a time, so each decoded block serves up to four.
template <class Dot>
void gemm_i8_driver(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
                    int64_t r1) {
  check_call(w, ActMode::Int8, n, r0, r1);
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
      case 1: rows_i8_any<Dot, 1>(w, qv, qsum, out, r0, r1); break;
      case 2: rows_i8_any<Dot, 2>(w, qv, qsum, out, r0, r1); break;
      case 3: rows_i8_any<Dot, 3>(w, qv, qsum, out, r0, r1); break;
      default: rows_i8_any<Dot, 4>(w, qv, qsum, out, r0, r1); break;
    }
  }
}

}  // namespace
}  // namespace tern::kernels_detail
