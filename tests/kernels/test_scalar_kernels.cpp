// The kernels against a naive double-precision dense product over the
// unpacked trits. Every kernel set available on this machine is checked
// against the dense product; scalar is additionally checked bit-for-bit
// against its documented float summation order.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tern/error.h"
#include "tern/kernels.h"
#include "tern/quant.h"
#include "kernel_test_util.h"

using namespace tern;
using namespace tern::test;
using gguf::TensorType;

namespace {

// Scalar's documented order: per-block float partial sums in increasing k,
// added to the total in block order, then scaled.
float documented_order(const Matrix& m, int64_t r, const float* x) {
  const int8_t* t = &m.trits[size_t(r * m.K)];
  float total = 0.0f;
  for (int64_t b = 0; b < m.K; b += 256) {
    float part = 0.0f;
    for (int64_t k = b; k < b + 256; ++k) part += float(t[k]) * x[k];
    total += part;
  }
  return m.scale[size_t(r)] * total;
}

void check_float(const KernelSet& ks, const Matrix& m, const std::vector<float>& x,
                 const std::string& what) {
  if (!kernel_supports(ks, ActMode::Float)) return;  // a set may implement one mode only
  std::shared_ptr<const void> hold;
  const TernaryMatrix w = prepared(ks, m.w, hold);
  std::vector<float> y(size_t(m.M), -7.0f);
  ks.gemm_f32(w, x.data(), 1, y.data(), 0, m.M);
  for (int64_t r = 0; r < m.M; ++r) {
    double exact = 0, mag = 0;
    for (int64_t k = 0; k < m.K; ++k) {
      exact += double(m.trits[size_t(r * m.K + k)]) * double(x[size_t(k)]);
      mag += std::fabs(double(x[size_t(k)]));
    }
    const double s = m.scale[size_t(r)];
    // Summation error bound for 256-term partials plus K/256 block sums,
    // and the rounding of the final scale multiply.
    const double tol = (300.0 + double(m.K) / 256) * 0x1p-24 * s * mag + 0x1p-23 * std::fabs(s * exact);
    EXPECT_NEAR(y[size_t(r)], s * exact, tol) << ks.name << " " << what << " row " << r;
    if (std::string(ks.name) == "scalar") {
      EXPECT_EQ(std::bit_cast<uint32_t>(y[size_t(r)]),
                std::bit_cast<uint32_t>(documented_order(m, r, x.data())))
          << what << " row " << r;
    }
  }
}

void check_int8(const KernelSet& ks, const Matrix& m, const std::vector<int8_t>& q,
                const std::string& what) {
  if (!kernel_supports(ks, ActMode::Int8)) return;
  std::shared_ptr<const void> hold;
  const TernaryMatrix w = prepared(ks, m.w, hold);
  std::vector<int32_t> s(size_t(m.M), 12345);
  ks.gemm_i8(w, q.data(), 1, s.data(), 0, m.M);
  for (int64_t r = 0; r < m.M; ++r) {
    int64_t exact = 0;
    for (int64_t k = 0; k < m.K; ++k)
      exact += int64_t(m.trits[size_t(r * m.K + k)]) * int64_t(q[size_t(k)]);
    EXPECT_EQ(s[size_t(r)], exact) << ks.name << " " << what << " row " << r;
  }
}

// Sets with a single activation mode are covered by their own test files
// for the two tests that exercise both modes at once (both_modes).
std::vector<const KernelSet*> available_sets(bool both_modes = false) {
  std::vector<const KernelSet*> out;
  for (const KernelSet* s : all_kernel_sets())
    if (s->available(cpu_features()) &&
        (!both_modes || (kernel_supports(*s, ActMode::Float) && kernel_supports(*s, ActMode::Int8))))
      out.push_back(s);
  return out;
}

constexpr TensorType kTypes[] = {TensorType::TQ2_0, TensorType::TQ1_0};

}  // namespace

TEST(Kernels, GemvAgainstDenseProduct) {
  for (const KernelSet* ks : available_sets())
    for (TensorType type : kTypes)
      for (int64_t M : {1, 7})
        for (int64_t K : {256, 512, 768, 2560})
          for (Rows rows : {Rows::Mixed, Rows::Random, Rows::Zero, Rows::Plus, Rows::Minus}) {
            const uint32_t seed = uint32_t(K * 31 + M * 7 + int(rows));
            const Matrix m = make_matrix(type, M, K, rows, seed);
            const std::string what = "type " + std::to_string(uint32_t(type)) + " M " +
                                     std::to_string(M) + " K " + std::to_string(K) + " rows " +
                                     std::to_string(int(rows));
            check_float(*ks, m, random_floats(K, seed + 1), what);
            check_int8(*ks, m, random_int8(K, seed + 2), what);
            check_int8(*ks, m, std::vector<int8_t>(size_t(K), 127), what + " q=127");
            check_int8(*ks, m, std::vector<int8_t>(size_t(K), -128), what + " q=-128");
          }
}

TEST(Kernels, Int8ExtremesGiveExactTotals) {
  const int64_t K = 2560;
  for (TensorType type : kTypes) {
    const Matrix plus = make_matrix(type, 2, K, Rows::Plus, 1);
    const Matrix minus = make_matrix(type, 2, K, Rows::Minus, 1);
    std::vector<int8_t> lo(size_t(K), -128), hi(size_t(K), 127);
    int32_t s[2];
    scalar_kernels().gemm_i8(plus.w, lo.data(), 1, s, 0, 2);
    EXPECT_EQ(s[1], -128 * K);
    scalar_kernels().gemm_i8(minus.w, lo.data(), 1, s, 0, 2);
    EXPECT_EQ(s[0], 128 * K);
    scalar_kernels().gemm_i8(minus.w, hi.data(), 1, s, 0, 2);
    EXPECT_EQ(s[0], -127 * K);
  }
}

TEST(Kernels, GemmMatchesGemvBitForBit) {
  for (const KernelSet* ks : available_sets(/*both_modes=*/true))
    for (TensorType type : kTypes)
      for (int64_t n : {1, 3}) {
        const int64_t M = 7, K = 768;
        const Matrix m = make_matrix(type, M, K, Rows::Mixed, 11);
        std::shared_ptr<const void> hold;
        const TernaryMatrix w = prepared(*ks, m.w, hold);
        const auto x = random_floats(n * K, 12);
        const auto q = random_int8(n * K, 13);
        std::vector<float> y(static_cast<size_t>(n * M));
        std::vector<int32_t> s(static_cast<size_t>(n * M));
        ks->gemm_f32(w, x.data(), n, y.data(), 0, M);
        ks->gemm_i8(w, q.data(), n, s.data(), 0, M);
        for (int64_t i = 0; i < n; ++i) {
          std::vector<float> yv(static_cast<size_t>(M));
          std::vector<int32_t> sv(static_cast<size_t>(M));
          ks->gemm_f32(w, x.data() + i * K, 1, yv.data(), 0, M);
          ks->gemm_i8(w, q.data() + i * K, 1, sv.data(), 0, M);
          for (int64_t r = 0; r < M; ++r) {
            EXPECT_EQ(std::bit_cast<uint32_t>(y[size_t(i * M + r)]),
                      std::bit_cast<uint32_t>(yv[size_t(r)]))
                << ks->name << " n " << n << " vec " << i << " row " << r;
            EXPECT_EQ(s[size_t(i * M + r)], sv[size_t(r)]) << ks->name << " vec " << i << " row " << r;
          }
        }
      }
}

TEST(Kernels, RowRangeWritesOnlyItsRows) {
  const uint32_t kSentinel = 0x7fc0dead;  // a NaN no kernel would produce
  for (const KernelSet* ks : available_sets(/*both_modes=*/true))
    for (TensorType type : kTypes) {
      const int64_t M = 7, K = 512, n = 2, r0 = 2, r1 = 5;
      const Matrix m = make_matrix(type, M, K, Rows::Random, 21);
      std::shared_ptr<const void> hold;
      const TernaryMatrix w = prepared(*ks, m.w, hold);
      const auto x = random_floats(n * K, 22);
      const auto q = random_int8(n * K, 23);
      std::vector<float> full(static_cast<size_t>(n * M));
      std::vector<int32_t> full_i(static_cast<size_t>(n * M));
      ks->gemm_f32(w, x.data(), n, full.data(), 0, M);
      ks->gemm_i8(w, q.data(), n, full_i.data(), 0, M);

      std::vector<float> y(size_t(n * M), std::bit_cast<float>(kSentinel));
      std::vector<int32_t> s(size_t(n * M), 0x5a5a5a5a);
      ks->gemm_f32(w, x.data(), n, y.data(), r0, r1);
      ks->gemm_i8(w, q.data(), n, s.data(), r0, r1);
      std::vector<float> yv(size_t(M), std::bit_cast<float>(kSentinel));
      std::vector<int32_t> sv(size_t(M), 0x5a5a5a5a);
      ks->gemm_f32(w, x.data(), 1, yv.data(), r0, r1);
      ks->gemm_i8(w, q.data(), 1, sv.data(), r0, r1);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t r = 0; r < M; ++r) {
          const bool inside = r >= r0 && r < r1;
          const size_t at = size_t(i * M + r);
          EXPECT_EQ(std::bit_cast<uint32_t>(y[at]),
                    inside ? std::bit_cast<uint32_t>(full[at]) : kSentinel)
              << ks->name << " vec " << i << " row " << r;
          EXPECT_EQ(s[at], inside ? full_i[at] : 0x5a5a5a5a) << ks->name << " vec " << i << " row " << r;
          if (i == 0) {
            EXPECT_EQ(std::bit_cast<uint32_t>(yv[size_t(r)]),
                      inside ? std::bit_cast<uint32_t>(full[at]) : kSentinel);
            EXPECT_EQ(sv[size_t(r)], inside ? full_i[at] : 0x5a5a5a5a);
          }
        }
      // An empty range touches nothing.
      std::vector<float> none(size_t(M), std::bit_cast<float>(kSentinel));
      ks->gemm_f32(w, x.data(), 1, none.data(), 3, 3);
      for (float v : none) EXPECT_EQ(std::bit_cast<uint32_t>(v), kSentinel);
    }
}

TEST(Kernels, ScalarRejectsBadCalls) {
  const Matrix m = make_matrix(TensorType::TQ2_0, 4, 256, Rows::Random, 5);
  const auto x = random_floats(256, 6);
  std::vector<float> y(4);
  const KernelSet& ks = scalar_kernels();
  EXPECT_THROW(ks.gemm_f32(m.w, x.data(), 1, y.data(), 0, 5), Error);
  EXPECT_THROW(ks.gemm_f32(m.w, x.data(), 1, y.data(), 3, 2), Error);
  EXPECT_THROW(ks.gemm_f32(m.w, x.data(), 1, y.data(), -1, 2), Error);
  EXPECT_THROW(ks.gemm_f32(m.w, x.data(), -1, y.data(), 0, 4), Error);
  TernaryMatrix bad = m.w;
  bad.type = TensorType::F32;
  EXPECT_THROW(ks.gemm_f32(bad, x.data(), 1, y.data(), 0, 4), Error);
  bad = m.w;
  bad.cols = 300;
  EXPECT_THROW(ks.gemm_f32(bad, x.data(), 1, y.data(), 0, 4), Error);
  bad = m.w;
  bad.row_scale = nullptr;
  EXPECT_THROW(ks.gemm_f32(bad, x.data(), 1, y.data(), 0, 4), Error);
  // Int8 mode does not need row scales.
  std::vector<int32_t> s(4);
  const auto q = random_int8(256, 7);
  EXPECT_NO_THROW(ks.gemm_i8(bad, q.data(), 1, s.data(), 0, 4));
}

// A set that prepares a layout reports its size, and the layout stays within
// 2 bits per weight on rows padded to the largest row group (16): no set
// expands the weights (seed 003's design doubles them).
TEST(Kernels, PreparedLayoutsReportSizeAndStayCompact) {
  for (const KernelSet* s : all_kernel_sets()) {
    EXPECT_EQ(s->prepare == nullptr, s->prepared_bytes == nullptr) << s->name;
    if (s->prepare == nullptr || !s->available(cpu_features())) continue;
    for (gguf::TensorType type : {gguf::TensorType::TQ2_0, gguf::TensorType::TQ1_0})
      for (auto [M, K] : {std::pair<int64_t, int64_t>{33, 2560}, {4, 6912}, {1, 256}}) {
        Matrix m = make_matrix(type, M, K, Rows::Mixed, 5);
        // 0 bytes: the set reads this type in place and prepares nothing.
        const int64_t bytes = s->prepared_bytes(m.w);
        EXPECT_GE(bytes, 0) << s->name;
        EXPECT_LE(bytes, (M + 15) / 16 * 16 * K / 4) << s->name << " " << M << "x" << K;
        EXPECT_EQ(s->prepare(m.w) != nullptr, bytes > 0) << s->name;
      }
  }
}
