// Test matrices and activations shared by the kernel test files. Everything
// here is seeded, so each test generates exactly the same data every run.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string_view>
#include <vector>

#include "tern/error.h"
#include "tern/kernels.h"
#include "tern/quant.h"

namespace tern::test {

// The values match the row kinds' draw order: Mixed cycles 1..4.
enum class Rows { Mixed, Random, Zero, Plus, Minus };
enum class Acts { Random, Max, Min, Alternating };

struct Matrix {
  int64_t M = 0, K = 0;
  std::vector<int8_t> trits;  // M * K, row-major, as packed
  std::vector<uint8_t> data;
  std::vector<float> scale;
  std::shared_ptr<const void> packed;  // keeps w.packed alive
  TernaryMatrix w;      // prepared for a set, if made for one that prepares
  TernaryMatrix plain;  // the GGUF layout alone (what scalar reads)
};

// Row scales are uniform in [0.25, 2); rows of `Mixed` cycle through
// random, zero, all +1 and all -1. The matrix is not prepared for any set.
inline Matrix make_matrix(gguf::TensorType type, int64_t M, int64_t K, Rows rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> trit(-1, 1);
  std::uniform_real_distribution<float> sc(0.25f, 2.0f);
  Matrix m;
  m.M = M;
  m.K = K;
  m.trits.resize(size_t(M * K));
  const int64_t rb = ternary_row_bytes(type, K);
  m.data.resize(size_t(M * rb));
  for (int64_t r = 0; r < M; ++r) {
    const Rows kind = rows == Rows::Mixed ? Rows(1 + r % 4) : rows;
    int8_t* t = &m.trits[size_t(r * K)];
    for (int64_t k = 0; k < K; ++k)
      t[k] = kind == Rows::Random  ? int8_t(trit(rng))
             : kind == Rows::Plus  ? 1
             : kind == Rows::Minus ? -1
                                   : 0;
    pack_ternary_row(type, t, K, f32_to_fp16(1.0f), &m.data[size_t(r * rb)]);
    m.scale.push_back(sc(rng));
  }
  m.plain.type = type;
  m.plain.rows = M;
  m.plain.cols = K;
  m.plain.data = m.data.data();
  m.plain.row_scale = m.scale.data();
  m.w = m.plain;
  return m;
}

// The same matrix, with `w` prepared for `ks` when the set has a layout of
// its own.
inline Matrix make_matrix(const KernelSet& ks, gguf::TensorType type, int64_t M, int64_t K,
                          Rows rows, uint32_t seed) {
  Matrix m = make_matrix(type, M, K, rows, seed);
  if (ks.prepare) {
    m.packed = ks.prepare(m.w);
    m.w.packed = m.packed.get();
  }
  return m;
}

// The matrix as the model hands it to `ks`: with the set's own layout when
// it has one (kept alive by `hold`).
inline TernaryMatrix prepared(const KernelSet& ks, const TernaryMatrix& w,
                              std::shared_ptr<const void>& hold) {
  TernaryMatrix out = w;
  if (ks.prepare) {
    hold = ks.prepare(w);
    out.packed = hold.get();
  }
  return out;
}

inline std::vector<int8_t> acts(int64_t n, Acts kind, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-128, 127);
  std::vector<int8_t> q(static_cast<size_t>(n));
  for (size_t i = 0; i < q.size(); ++i)
    q[i] = kind == Acts::Max           ? 127
           : kind == Acts::Min         ? -128
           : kind == Acts::Alternating ? int8_t(i % 2 ? 127 : -128)
                                       : int8_t(d(rng));
  return q;
}

inline std::vector<int8_t> random_int8(int64_t n, uint32_t seed) { return acts(n, Acts::Random, seed); }

inline std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = d(rng);
  return x;
}

// The set of that name, or null when this binary does not include it.
inline const KernelSet* find_set(std::string_view name) {
  for (const KernelSet* s : all_kernel_sets())
    if (name == s->name) return s;
  return nullptr;
}

// Int8 calls every set must refuse: rows past the end, a reversed range, a
// negative vector count, and a row length that is no whole block.
inline void expect_int8_bad_calls_throw(const KernelSet& ks) {
  const Matrix m = make_matrix(ks, gguf::TensorType::TQ1_0, 4, 256, Rows::Random, 5);
  const auto q = acts(256, Acts::Random, 6);
  std::vector<int32_t> s(4);
  EXPECT_THROW(ks.gemm_i8(m.w, q.data(), 1, s.data(), 0, 5), Error);
  EXPECT_THROW(ks.gemm_i8(m.w, q.data(), 1, s.data(), 3, 2), Error);
  EXPECT_THROW(ks.gemm_i8(m.w, q.data(), -1, s.data(), 0, 4), Error);
  TernaryMatrix bad = m.w;
  bad.cols = 300;
  EXPECT_THROW(ks.gemm_i8(bad, q.data(), 1, s.data(), 0, 4), Error);
}

}  // namespace tern::test
