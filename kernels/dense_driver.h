// What every SIMD dense (output head) kernel shares: the loops over row
// tiles and vectors around an ISA's `Rows<T, R>::run(w, row_bytes, K, x,
// out)`, which takes R rows (row_bytes apart) against one vector x[K] in the
// summation order kernels.h fixes, and its `Q8Rows<R>::run` and
// `Q6Rows<R>::run` for Q8_0 and Q6_K rows against int8 activations.
//
// Internal linkage: each includer is compiled with its own -m flags.
#pragma once
#include <cstdint>

#include "code_layout.h"
#include "kernel_sets.h"
#include "tern/quant.h"

namespace tern::kernels_detail {
namespace {

// Quantized rows (Q8_0, Q6_K): the vectors quantized once per call by the
// one function every set shares (quantize_act_q8 per 32 values,
// quantize_act_q8k per 256), then QRows<R>::run(w, row_bytes, blocks,
// acts, out) for R rows against one vector. Out of line, as
// dense_gemm_typed.
template <class Act, int64_t QK, void (*Quantize)(const float*, int64_t, Act*), template <int> class QRows, int R>
__attribute__((noinline)) void dense_gemm_quant(const DenseMatrix& m, const float* x, int64_t n, float* y,
                                                int64_t ldy, int64_t r0, int64_t r1) {
  const int64_t K = m.cols, nb = K / QK, rb = dense_stride(m);
  auto* acts = reinterpret_cast<Act*>(thread_scratch(1, size_t(n * nb) * sizeof(Act)));
  for (int64_t i = 0; i < n; ++i) Quantize(x + i * K, K, acts + i * nb);
  const uint8_t* w = static_cast<const uint8_t*>(m.data);
  int64_t r = r0;
  for (; r + R <= r1; r += R)
    for (int64_t i = 0; i < n; ++i) {
      float out[R];
      QRows<R>::run(w + r * rb, rb, nb, acts + i * nb, out);
      for (int j = 0; j < R; ++j) y[i * ldy + r + j] = out[j];
    }
  for (; r < r1; ++r)
    for (int64_t i = 0; i < n; ++i) QRows<1>::run(w + r * rb, rb, nb, acts + i * nb, y + i * ldy + r);
}

// Out of line, so a profile names each type's row loop with its row count
// (bench/streams.sh finds the head by it).
template <template <gguf::TensorType, int> class Rows, int R, gguf::TensorType T>
__attribute__((noinline)) void dense_gemm_typed(const DenseMatrix& m, const float* x, int64_t n, float* y,
                                                int64_t ldy, int64_t r0, int64_t r1) {
  const int64_t K = m.cols, rb = dense_stride(m);
  const uint8_t* w = static_cast<const uint8_t*>(m.data);
  int64_t r = r0;
  for (; r + R <= r1; r += R)
    for (int64_t i = 0; i < n; ++i) {
      float out[R];
      Rows<T, R>::run(w + r * rb, rb, K, x + i * K, out);
      for (int j = 0; j < R; ++j) y[i * ldy + r + j] = out[j];
    }
  for (; r < r1; ++r)
    for (int64_t i = 0; i < n; ++i) Rows<T, 1>::run(w + r * rb, rb, K, x + i * K, y + i * ldy + r);
}

// Every type's rows, R at a time, once the call is checked.
template <template <gguf::TensorType, int> class Rows, template <int> class Q8Rows,
          template <int> class Q6Rows, int R>
void dense_gemm_rows(const DenseMatrix& m, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                     int64_t r1) {
  using gguf::TensorType;
  switch (m.type) {
    case TensorType::F32: return dense_gemm_typed<Rows, R, TensorType::F32>(m, x, n, y, ldy, r0, r1);
    case TensorType::F16: return dense_gemm_typed<Rows, R, TensorType::F16>(m, x, n, y, ldy, r0, r1);
    case TensorType::BF16: return dense_gemm_typed<Rows, R, TensorType::BF16>(m, x, n, y, ldy, r0, r1);
    case TensorType::Q8_0:
      return dense_gemm_quant<ActQ8, QK8_0, quantize_act_q8, Q8Rows, R>(m, x, n, y, ldy, r0, r1);
    case TensorType::Q6_K:
      return dense_gemm_quant<ActQ8K, QK_K, quantize_act_q8k, Q6Rows, R>(m, x, n, y, ldy, r0, r1);
    default: return;  // check_dense_call refused every other type
  }
}

// R rows side by side give R independent FMA chains per accumulator; a
// set whose rows stream better fewer at a time in decode (one vector) says
// so in RDecode (avx2_dense.h says why x86 does).
template <template <gguf::TensorType, int> class Rows, template <int> class Q8Rows,
          template <int> class Q6Rows, int R, int RDecode = R>
void dense_gemm_driver(const DenseMatrix& m, const float* x, int64_t n, float* y, int64_t ldy,
                       int64_t r0, int64_t r1) {
  check_dense_call(m, n, ldy, r0, r1);
  if (n == 1) return dense_gemm_rows<Rows, Q8Rows, Q6Rows, RDecode>(m, x, n, y, ldy, r0, r1);
  dense_gemm_rows<Rows, Q8Rows, Q6Rows, R>(m, x, n, y, ldy, r0, r1);
}

}  // namespace
}  // namespace tern::kernels_detail
