// The loop both group tile kernels share (avx512_group_tile.h at 512
// bits, avx2_group_tile.h at 256): blocks of T::kRows rows; per group the
// codes spread once (T::codes), T::kVectors digit vectors at a time
// against them (T::vectors, then T::vector1 for the rest), and each
// token's sums scaled into its double accumulators in increasing group
// order (T::scale_group); at the end of a block each token's rows are
// converted and stored (T::store_token). Each includer instantiates it
// with its own T, compiled with its own flags.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "../kernel_sets.h"
#include "avx2_group.h"
#include "tern/quant_group.h"

namespace tern::kernels_detail {
namespace {

template <class T>
void group_tile_run(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                    float* y, int64_t ldy, int64_t r0, int64_t r1) {
  constexpr int R = T::kRows, V = T::kVectors;
  const int64_t K = w.cols, G = w.groups(), bb = group_block_bytes(w.group), rb = G * bb;
  const int quads = w.group / 4;
  int64_t nq = 0;
  for (int64_t i = 0; i < n; ++i) nq += digits[i];
  // Slot 1: [nq][G] each group's sum of x; slot 0: A [n][R] the tokens'
  // sums in double, C [quads][R] a group's codes, S [nq][R] its sums.
  int32_t* xsum = reinterpret_cast<int32_t*>(thread_scratch(1, size_t(nq * G) * 4));
  for (int64_t v = 0; v < nq; ++v) group_x_sums(xq + v * K, G, w.group, xsum + v * G);
  uint8_t* buf = thread_scratch(0, size_t(n * R) * 8 + size_t((quads + nq) * R) * 4);
  double* A = reinterpret_cast<double*>(buf);
  int32_t* C = reinterpret_cast<int32_t*>(buf + n * R * 8);
  int32_t* S = C + quads * R;
  for (int64_t rb0 = r0; rb0 < r1; rb0 += R) {
    const int nrows = int(std::min<int64_t>(R, r1 - rb0));
    const uint8_t* rows[R];  // a block short of R rows repeats its last
    for (int rr = 0; rr < R; ++rr) rows[rr] = w.data + (rb0 + std::min(rr, nrows - 1)) * rb;
    std::memset(A, 0, size_t(n * R) * 8);
    for (int64_t g = 0; g < G; ++g) {
      T::codes(rows, g * bb + 2, quads, C);
      const int8_t* xg = xq + g * w.group;
      int64_t v = 0;
      for (; v + V <= nq; v += V) T::vectors(C, quads, xg + v * K, K, xsum + v * G + g, G, S + v * R);
      for (; v < nq; ++v) T::vector1(C, quads, xg + v * K, xsum[v * G + g], S + v * R);
      T::scale_group(rows, g * bb, S, n, digits, A);
    }
    for (int64_t i = 0; i < n; ++i) {
      alignas(64) float out[R];
      T::store_token(A + i * R, 1.0f / xscale[i], out);
      for (int rr = 0; rr < nrows; ++rr) y[i * ldy + rb0 + rr] = out[rr];
    }
  }
}

}  // namespace
}  // namespace tern::kernels_detail
