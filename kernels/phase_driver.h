// What every Fairy2i phase kernel shares (kernels.h PhaseGemm): turning a
// stage's eight sums into its Re and Im outputs in the fixed fma order, and
// for the fused SIMD kernels the loops over rows, vectors and stages around
// an ISA's `sums(row, nb, a, b, S)`, which fills S[8] with one row's sums of
// one stage (TrUa, TiUb, TrWa, TiWb, TrUb, TiUa, TrWb, TiWa).
//
// Internal linkage: each includer is compiled with its own -m flags.
#pragma once
#include <cstdint>

#include "code_layout.h"
#include "kernel_sets.h"
#include "tern/phase.h"

namespace tern::kernels_detail {
namespace {

// Stage `st`'s outputs from its sums S and scales s[4]: written to *re and
// *im for stage 0, added to them after.
inline void phase_store(const float* s, const float S[8], int st, float* re_out, float* im_out) {
  float re = s[kUre] * S[0];
  re = __builtin_fmaf(-s[kUim], S[1], re);
  re = __builtin_fmaf(s[kWre], S[2], re);
  re = __builtin_fmaf(s[kWim], S[3], re);
  float im = s[kUre] * S[4];
  im = __builtin_fmaf(s[kUim], S[5], im);
  im = __builtin_fmaf(-s[kWre], S[6], im);
  im = __builtin_fmaf(s[kWim], S[7], im);
  *re_out = st == 0 ? re : *re_out + re;
  *im_out = st == 0 ? im : *im_out + im;
}

template <class Sums>
void phase_gemm_driver(const PhaseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                       int64_t r1, Sums sums) {
  check_phase_call(w, n, ldy, r0, r1);
  const int64_t M = w.rows, K = w.cols, nb = K / kPhaseBlock;
  const auto* blocks = reinterpret_cast<const BlockPhase*>(w.data);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t i = 0; i < n; ++i) {
      const float* a = x + i * 2 * K;
      float* out = y + i * ldy;
      for (int st = 0; st < w.stages; ++st) {
        float S[8];
        sums(blocks + (st * M + r) * nb, nb, a, a + K, S);
        phase_store(w.scales + 4 * st, S, st, &out[r], &out[M + r]);
      }
    }
}

// The int8 kernels' eight products of one group of columns, in kernels.h's
// order, from one matrix's real- and imaginary-axis weights (U: tru, tiu;
// W: trw, tiw) and the inputs a and b: acc[j] = dot(acc[j], weights, input).
template <class Acc, class W, class X, class Dot>
inline void phase_products(Acc acc[8], W tru, W tiu, W trw, W tiw, X a, X b, Dot dot) {
  acc[0] = dot(acc[0], tru, a);
  acc[1] = dot(acc[1], tiu, b);
  acc[2] = dot(acc[2], trw, a);
  acc[3] = dot(acc[3], tiw, b);
  acc[4] = dot(acc[4], tru, b);
  acc[5] = dot(acc[5], tiu, a);
  acc[6] = dot(acc[6], trw, b);
  acc[7] = dot(acc[7], tiw, a);
}

struct NoPrologue {
  void operator()(int64_t) const {}
};

// The int8 form (kernels.h PhaseGemmI8) around an ISA's `sums(row, nb, q,
// stride, count, S)`, which fills S[v][8] with one row's exact integer sums
// of one stage against the count <= kGroup vectors q + v * stride. A group
// of vectors shares each decoded block of the row (a token's digits, or
// consecutive tokens); the row's planes stay in L1 while the groups pass.
// `prologue(nq)` runs once per call, after the check, before any row: what
// a kernel needs from the nq input vectors as a whole.
template <int kGroup, class SumsI8, class Prologue = NoPrologue>
void phase_gemm_i8_driver(const PhaseMatrix& w, const int8_t* xq, int64_t n, const int* digits,
                          const float* xscale, float* y, int64_t ldy, int64_t r0, int64_t r1, SumsI8 sums,
                          Prologue prologue = {}) {
  const int64_t nq = check_phase_i8_call(w, xq, n, digits, xscale, ldy, r0, r1);
  prologue(nq);
  const int64_t M = w.rows, K = w.cols, nb = K / kPhaseBlock;
  const auto* blocks = reinterpret_cast<const BlockPhase*>(w.data);
  auto* S = reinterpret_cast<int32_t(*)[8]>(thread_scratch(0, size_t(nq) * 8 * sizeof(int32_t)));
  for (int64_t r = r0; r < r1; ++r)
    for (int st = 0; st < w.stages; ++st) {
      const BlockPhase* row = blocks + (st * M + r) * nb;
      for (int64_t v = 0; v < nq; v += kGroup)
        sums(row, nb, xq + v * 2 * K, 2 * K, int(nq - v < kGroup ? nq - v : kGroup), S + v);
      const int32_t(*t)[8] = S;
      for (int64_t i = 0; i < n; ++i) {
        const float inv = 1.0f / xscale[i];
        float f[8];
        for (int j = 0; j < 8; ++j) {
          int64_t v = 0;  // at most 8290687 * K in magnitude
          for (int d = 0; d < digits[i]; ++d) v = 255 * v + t[d][j];
          f[j] = float(v) * inv;
        }
        phase_store(w.scales + 4 * st, f, st, &y[i * ldy + r], &y[i * ldy + M + r]);
        t += digits[i];
      }
    }
}

}  // namespace
}  // namespace tern::kernels_detail
