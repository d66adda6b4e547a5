// AVX-VNNI int8 kernels (256-bit vpdpbusd, the VEX encoding found on Alder
// Lake and Zen 5 without needing AVX-512): the same in-place TQ2_0/TQ1_0
// decode as the avx2 set (avx2_common.h, TQ1_0 converted at load as
// avx2_layout.h says), but each code vector meets its 32
// activations in one instruction that multiplies unsigned codes by signed
// activations and adds groups of four products straight into int32. Float
// activations take the same AVX2 + FMA path as the avx2 set (avx2_float.h).
//
// Exactness: a group of four products is at most 4 * 3 * 128 in magnitude,
// and the int32 accumulators wrap, so the result is exact (see rows_i8).
#include "avx2_bytes.h"
#include "avx2_common.h"
#include "avx2_group.h"
#include "avx2_group_gemv.h"
#include "avx2_dense.h"
#include "avx2_float.h"
#include "avx2_layout.h"
#include "avx2_phase.h"
#include "avx2_phase_i8.h"
#include "avx2_quant.h"

namespace tern::kernels_detail {
namespace {

// Fairy2i's int8 products (avx2_phase_i8.h).
struct PhaseDpbusd {
  static inline __m256i dot(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
};

struct DpbusdDot {
  // vpdpbusd has a latency of several cycles; a single vector would chain
  // all eight per block through one register, so it gets eight accumulators
  // and more vectors get fewer each (they are independent of one another).
  // TQ1_0's decode is long enough to hide the latency and needs the
  // registers (eight accumulators there spill to the stack).
  template <int NV, bool kTq1>
  struct Acc {
    static constexpr int kPer = NV == 1 ? (kTq1 ? 4 : 8) : NV == 2 ? (kTq1 ? 2 : 4) : 2;
    __m256i a[NV][kPer];
    Acc() {
      for (auto& row : a)
        for (auto& x : row) x = _mm256_setzero_si256();
    }
  };
  template <class A>
  static inline void block(const __m256i c[8], const int8_t* q, A& acc, int v) {
    constexpr int P = A::kPer;
    for (int i = 0; i < 8; ++i)
      acc.a[v][i % P] = _mm256_dpbusd_avx_epi32(acc.a[v][i % P], c[i], load32(q + 32 * i));
  }
  template <class A>
  static inline int32_t total(const A& acc, int v) {
    __m256i s = acc.a[v][0];
    for (int i = 1; i < A::kPer; ++i) s = _mm256_add_epi32(s, acc.a[v][i]);
    return hsum_epi32(s);
  }
};

// The prompt tile's product (avx2_bytes.h), in place: through the
// intrinsic GCC copies accumulators around each vpdpbusd. {vex}: the
// assembler's default for vpdpbusd is the AVX512-VNNI encoding.
struct DpbusdMul {
  // 6 rows x 2 vectors: 12 accumulators, 2 activation vectors and a code,
  // 15 of the 16 registers. vpdpbusd's latency wants about ten independent
  // sums in flight at two a cycle: 4 x 2 (8 sums) ran at 0.80-0.85 of the
  // peak on Zen 5, 6 x 2 at 0.85-0.87. 4 x 3 took all 16 registers, GCC
  // kept an accumulator on the stack, and its store-to-load round trip
  // each step held the tile to half the peak.
  static constexpr int kRows = 6;
  static constexpr int kMaxVecs = 2;
  static constexpr int64_t kSpan = int64_t(1) << 40;  // int32 all the way: one span
  struct Consts {};
  static inline __attribute__((always_inline)) void dot(__m256i& acc, __m256i c, __m256i x, const Consts&) {
    asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(c), "x"(x));
  }
  static inline __attribute__((always_inline)) void fold(__m256i& acc, __m256i part, const Consts&) {
    acc = _mm256_add_epi32(acc, part);
  }
};

void gemm_i8(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
             int64_t r1) {
  gemm_i8_avx2<DpbusdDot, DpbusdMul>(w, q, n, sums, r0, r1);
}

bool available(const CpuFeatures& f) { return f.avx2 && f.fma && f.f16c && f.avx_vnni && f.os_avx; }

}  // namespace

const KernelSet& avx2_vnni_kernels() {
  static const KernelSet set{"avx2-vnni", &available, &gemm_f32_avx2, &gemm_i8,
                             &dense_gemm_x86, &avx2_prepare, &avx2_prepared_bytes, &phase_gemm_avx2,
                             &quantize_i8_avx2, &phase_gemm_i8_avx2<PhaseDpbusd>, nullptr,
                             &silu_glu_avx2, &relu2_glu_avx2, &group_gemm_i8_avx2_sets<GroupDpbusd<PhaseDpbusd>>};
  return set;
}

}  // namespace tern::kernels_detail
