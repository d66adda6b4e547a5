// AVX2 int8 kernels: TQ2_0 weights are read in place, TQ1_0 weights as the
// TQ2_0 codes prepare() converted them to at load (avx2_layout.h), both
// decoded to byte codes t + 1 in 0..2 (avx2_common.h), and multiplied with
// vpmaddubsw (unsigned codes x signed activations -> int16 pair sums),
// widened per block with vpmaddwd against ones. Float activations take the
// AVX2 + FMA path of avx2_float.h.
//
// Exactness: a vpmaddubsw lane is c0*q0 + c1*q1 with c <= 3 (code 3 only in
// files tern rejects) and q in [-128, 127]: |lane| <= 768. One block adds 8
// such lanes per int16, |sum| <= 6144 < 32767, so neither the saturating
// pair add nor the int16 adds can clip; vpmaddwd then widens to int32.
#include "avx2_bytes.h"
#include "avx2_common.h"
#include "avx2_dense.h"
#include "avx2_float.h"
#include "avx2_group.h"
#include "avx2_group_gemv.h"
#include "avx2_layout.h"
#include "avx2_phase.h"
#include "avx2_phase_i8.h"
#include "avx2_quant.h"

namespace tern::kernels_detail {
namespace {

// Fairy2i's int8 products (avx2_phase_i8.h): vpmaddubsw, then pairs to int32.
struct PhaseMaddubs {
  static inline __m256i dot(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
};

struct MaddubsDot {
  template <int NV, bool kTq1>
  struct Acc {
    __m256i a[NV];
    Acc() {
      for (auto& x : a) x = _mm256_setzero_si256();
    }
  };
  template <class A>
  static inline void block(const __m256i c[8], const int8_t* q, A& acc, int v) {
    __m256i p[8];
    for (int i = 0; i < 8; ++i) p[i] = _mm256_maddubs_epi16(c[i], load32(q + 32 * i));
    const __m256i s = _mm256_add_epi16(
        _mm256_add_epi16(_mm256_add_epi16(p[0], p[1]), _mm256_add_epi16(p[2], p[3])),
        _mm256_add_epi16(_mm256_add_epi16(p[4], p[5]), _mm256_add_epi16(p[6], p[7])));
    acc.a[v] = _mm256_add_epi32(acc.a[v], _mm256_madd_epi16(s, _mm256_set1_epi16(1)));
  }
  template <class A>
  static inline int32_t total(const A& acc, int v) {
    return hsum_epi32(acc.a[v]);
  }
};

// The prompt tile's product (avx2_bytes.h): pair sums added as int16 over
// a span of kSpan 32-column steps, widened to int32 once per span. A span
// adds at most 32 * 768 < 32767 per lane (the bound above), so nothing
// saturates. In the loop: 8 partial sums, 2 vectors, a code and a product,
// 12 of the 16 registers.
struct MaddubsMul {
  static constexpr int kRows = 4;
  static constexpr int kMaxVecs = 2;
  static constexpr int64_t kSpan = 32;
  struct Consts {
    __m256i ones = _mm256_set1_epi16(1);
  };
  // In place, for the reason avx2-vnni's DpbusdMul gives: through the
  // intrinsics GCC 12 moved each sum around its add and kept one on the
  // stack.
  static inline __attribute__((always_inline)) void dot(__m256i& part, __m256i c, __m256i x, const Consts&) {
    __m256i t;
    asm("vpmaddubsw %3, %2, %1\n\tvpaddw %1, %0, %0" : "+x"(part), "=&x"(t) : "x"(c), "x"(x));
  }
  static inline __attribute__((always_inline)) void fold(__m256i& acc, __m256i part, const Consts& k) {
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(part, k.ones));
  }
};

void gemm_i8(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
             int64_t r1) {
  gemm_i8_avx2<MaddubsDot, MaddubsMul>(w, q, n, sums, r0, r1);
}

bool available(const CpuFeatures& f) { return f.avx2 && f.fma && f.f16c && f.os_avx; }

}  // namespace

// Element 32i + m of a block is byte m of code vector i, and TQ2_0 keeps
// element 128h + 32n + m in bits 2n of byte m of half h, so half h is
// vectors 4h .. 4h + 3 shifted into place (codes are at most 2, so the
// 16-bit shifts move no bit across a byte).
void tq1_blocks_to_tq2_codes(const uint8_t* blocks, int64_t n, uint8_t* out) {
  for (int64_t b = 0; b < n; ++b) {
    __m256i c[8];
    decode_tq1(blocks + b * kTq1Block, c);
    for (int h = 0; h < 2; ++h) {
      const __m256i lo = _mm256_or_si256(c[4 * h], _mm256_slli_epi16(c[4 * h + 1], 2));
      const __m256i hi = _mm256_or_si256(_mm256_slli_epi16(c[4 * h + 2], 4), _mm256_slli_epi16(c[4 * h + 3], 6));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * (QK / 4) + 32 * h), _mm256_or_si256(lo, hi));
    }
  }
}

const KernelSet& avx2_kernels() {
  static const KernelSet set{"avx2", &available, &gemm_f32_avx2, &gemm_i8,
                             &dense_gemm_x86, &avx2_prepare, &avx2_prepared_bytes, &phase_gemm_avx2,
                             &quantize_i8_avx2, &phase_gemm_i8_avx2<PhaseMaddubs>, nullptr,
                             &silu_glu_avx2, &relu2_glu_avx2, &group_gemm_i8_avx2_sets<GroupMaddubs>};
  return set;
}

}  // namespace tern::kernels_detail
