// What every set's group-scaled int8 kernel shares (kernels.h GroupGemmI8):
// the loop over rows and tokens around an ISA's `sums(row, G, group, q,
// stride, count, S)`, which fills S[v * G + g] with the exact int32 sum of
// group g of one row against each of count vectors q + v * stride; then
// each token's digits combined per group in int64 and the groups in the
// fixed double fma order.
//
// Internal linkage: each includer is compiled with its own -m flags.
#pragma once
#include <cmath>
#include <cstdint>

#include "code_layout.h"
#include "kernel_sets.h"
#include "tern/quant_group.h"

namespace tern::kernels_detail {
namespace {

template <class Sums>
void group_gemm_i8_driver(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits,
                          const float* xscale, float* y, int64_t ldy, int64_t r0, int64_t r1, Sums sums) {
  check_group_call(w, n, ldy, r0, r1);
  const int64_t K = w.cols, G = w.groups(), bb = group_block_bytes(w.group);
  int64_t nq = 0;
  for (int64_t i = 0; i < n; ++i) nq += digits[i];
  // Scratch slot 0 (code_layout.h; no std::vector here: its instances
  // would be compiled with an ISA's flags and shared).
  uint8_t* scratch = thread_scratch(0, size_t(G) * (sizeof(double) + size_t(nq) * sizeof(int32_t)));
  double* d = reinterpret_cast<double*>(scratch);                // [G] one row's scales
  int32_t* S = reinterpret_cast<int32_t*>(scratch + G * sizeof(double));  // [nq][G] its sums
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.data + r * G * bb;
    for (int64_t g = 0; g < G; ++g) d[g] = double(fp16_to_f32(uint16_t(row[g * bb] | row[g * bb + 1] << 8)));
    sums(row, G, w.group, xq, K, nq, S);
    const int32_t* s = S;  // token i's first vector
    for (int64_t i = 0; i < n; ++i) {
      const int nd = digits[i];
      double acc = 0;
      for (int64_t g = 0; g < G; ++g) {
        int64_t v = 0;
        for (int j = 0; j < nd; ++j) v = 255 * v + s[j * G + g];
        acc = std::fma(double(v), d[g], acc);
      }
      y[i * ldy + r] = float(acc) * (1.0f / xscale[i]);
      s += nd * G;
    }
  }
}

}  // namespace
}  // namespace tern::kernels_detail
