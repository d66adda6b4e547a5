// The NEON kernel sets (neon-sdot, neon-tbl) against scalar_kernels(): int8
// sums must be equal, float results within 1e-5 of sum |x| * row scale.
// Shapes cover the smallest block count, model sizes, row counts that are no
// multiple of any row group, and row ranges that split groups. On aarch64
// both sets must be present; elsewhere (not built) the tests skip.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
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

constexpr TensorType kTypes[] = {TensorType::TQ2_0, TensorType::TQ1_0};

class Neon : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ks_ = find_set(GetParam());
#if defined(__aarch64__)
    // On aarch64 both sets are always built, and neon-tbl runs on every
    // ARMv8-A core; neon-sdot needs dotprod (qemu's default CPU has it, an
    // ARMv8.0 core such as QEMU_CPU=cortex-a53 does not).
    ASSERT_NE(ks_, nullptr) << GetParam() << " not built";
    if (std::string(GetParam()) == "neon-sdot" && !cpu_features().dotprod)
      GTEST_SKIP() << "no dotprod; CPU has " << cpu_features().summary();
    ASSERT_TRUE(ks_->available(cpu_features()))
        << GetParam() << " unavailable; CPU has " << cpu_features().summary();
#else
    if (ks_ == nullptr || !ks_->available(cpu_features()))
      GTEST_SKIP() << GetParam() << " not built";
#endif
    ASSERT_TRUE(kernel_supports(*ks_, ActMode::Int8));
    ASSERT_TRUE(kernel_supports(*ks_, ActMode::Float));
  }
  const KernelSet* ks_ = nullptr;
};

// Rows [r0, r1) of n vectors against scalar; every other entry of y/sums
// must keep its sentinel.
void check(const KernelSet& ks, const Matrix& m, int64_t n, int64_t r0, int64_t r1, Acts kind,
           uint32_t seed, const std::string& what) {
  const int64_t M = m.M, K = m.K;
  const auto q = acts(n * K, kind, seed);
  const auto x = random_floats(n * K, seed + 1);
  const int32_t kSent = 0x5a5a5a5a;
  const uint32_t kSentF = 0x7fc0dead;  // a NaN no kernel produces
  std::vector<int32_t> want(size_t(n * M)), got(size_t(n * M), kSent);
  std::vector<float> wantf(size_t(n * M)), gotf(size_t(n * M), std::bit_cast<float>(kSentF));
  scalar_kernels().gemm_i8(m.plain, q.data(), n, want.data(), 0, M);
  scalar_kernels().gemm_f32(m.plain, x.data(), n, wantf.data(), 0, M);
  if (n == 1) {
    ks.gemm_i8(m.w, q.data(), 1, got.data(), r0, r1);
    ks.gemm_f32(m.w, x.data(), 1, gotf.data(), r0, r1);
  } else {
    ks.gemm_i8(m.w, q.data(), n, got.data(), r0, r1);
    ks.gemm_f32(m.w, x.data(), n, gotf.data(), r0, r1);
  }
  for (int64_t i = 0; i < n; ++i) {
    double mag = 0;
    for (int64_t k = 0; k < K; ++k) mag += std::fabs(double(x[size_t(i * K + k)]));
    for (int64_t r = 0; r < M; ++r) {
      const size_t at = size_t(i * M + r);
      const std::string where = what + " vec " + std::to_string(i) + " row " + std::to_string(r);
      if (r < r0 || r >= r1) {
        ASSERT_EQ(got[at], kSent) << where << " written outside [r0, r1)";
        ASSERT_EQ(std::bit_cast<uint32_t>(gotf[at]), kSentF)
            << where << " written outside [r0, r1)";
        continue;
      }
      ASSERT_EQ(got[at], want[at]) << where;
      ASSERT_NEAR(gotf[at], wantf[at], 1e-5 * m.scale[size_t(r)] * mag) << where;
    }
  }
}

std::string describe(TensorType type, int64_t M, int64_t K) {
  return std::string(type == TensorType::TQ2_0 ? "TQ2_0" : "TQ1_0") + " M " + std::to_string(M) +
         " K " + std::to_string(K);
}

}  // namespace

TEST_P(Neon, GemvShapesAndActivations) {
  for (TensorType type : kTypes)
    for (int64_t M : {1, 7, 33})
      for (int64_t K : {256, 512, 768, 2560, 6912}) {
        const uint32_t seed = uint32_t(M * 131 + K);
        const Matrix m = make_matrix(*ks_, type, M, K, Rows::Mixed, seed);
        for (Acts a : {Acts::Random, Acts::Max, Acts::Min, Acts::Alternating})
          check(*ks_, m, 1, 0, M, a, seed + 7,
                describe(type, M, K) + " acts " + std::to_string(int(a)));
      }
}

TEST_P(Neon, UniformRows) {
  for (TensorType type : kTypes)
    for (Rows rows : {Rows::Zero, Rows::Plus, Rows::Minus, Rows::Random})
      for (int64_t K : {256, 2560}) {
        const Matrix m = make_matrix(*ks_, type, 17, K, rows, uint32_t(K + int(rows)));
        for (Acts a : {Acts::Max, Acts::Min, Acts::Random})
          check(*ks_, m, 1, 0, 17, a, 3,
                describe(type, 17, K) + " rows " + std::to_string(int(rows)) + " acts " +
                    std::to_string(int(a)));
      }
}

TEST_P(Neon, RowRangesSplitRowGroups) {
  const std::pair<int64_t, int64_t> ranges[] = {{0, 33},  {1, 32}, {5, 6},  {15, 17}, {16, 32},
                                                {17, 33}, {3, 3},  {0, 16}, {31, 33}, {32, 33}};
  for (TensorType type : kTypes) {
    const Matrix m = make_matrix(*ks_, type, 33, 768, Rows::Random, 41);
    for (auto [r0, r1] : ranges)
      for (int64_t n : {1, 3})
        check(*ks_, m, n, r0, r1, Acts::Random, uint32_t(r0 * 40 + r1),
              describe(type, 33, 768) + " range [" + std::to_string(r0) + ", " +
                  std::to_string(r1) + ") n " + std::to_string(n));
  }
}

TEST_P(Neon, GemmVectorCounts) {
  for (TensorType type : kTypes)
    for (int64_t M : {7, 33})
      for (int64_t K : {256, 2560})
        for (int64_t n = 1; n <= 5; ++n) {
          const Matrix m = make_matrix(*ks_, type, M, K, Rows::Mixed, uint32_t(n * 5 + M + K));
          check(*ks_, m, n, 0, M, n % 2 ? Acts::Random : Acts::Alternating, uint32_t(n),
                describe(type, M, K) + " n " + std::to_string(n));
          check(*ks_, m, n, 2, M - 1, Acts::Min, uint32_t(n),
                describe(type, M, K) + " n " + std::to_string(n) + " rows [2, M-1)");
        }
}

// gemm must give each vector exactly what gemv gives it (the caller may
// use either, e.g. one token or a batch), floats bit for bit.
TEST_P(Neon, GemmMatchesGemvPerVector) {
  const int64_t M = 33, K = 2560;
  for (TensorType type : kTypes)
    for (int64_t n : {1, 3}) {
      const Matrix m = make_matrix(*ks_, type, M, K, Rows::Random, 9);
      const auto x = random_floats(n * K, 10);
      const auto q = acts(n * K, Acts::Random, 11);
      std::vector<float> a(static_cast<size_t>(n * M)), b(static_cast<size_t>(M));
      std::vector<int32_t> c(static_cast<size_t>(n * M)), d(static_cast<size_t>(M));
      ks_->gemm_f32(m.w, x.data(), n, a.data(), 0, M);
      ks_->gemm_i8(m.w, q.data(), n, c.data(), 0, M);
      for (int64_t i = 0; i < n; ++i) {
        ks_->gemm_f32(m.w, x.data() + i * K, 1, b.data(), 0, M);
        ks_->gemm_i8(m.w, q.data() + i * K, 1, d.data(), 0, M);
        for (int64_t r = 0; r < M; ++r) {
          EXPECT_EQ(std::bit_cast<uint32_t>(a[size_t(i * M + r)]),
                    std::bit_cast<uint32_t>(b[size_t(r)]))
              << describe(type, M, K) << " n " << n << " vec " << i << " row " << r;
          EXPECT_EQ(c[size_t(i * M + r)], d[size_t(r)]) << "vec " << i << " row " << r;
        }
      }
    }
}

// Direct callers (tests, tools) may skip prepare(): the results must not
// depend on it.
TEST_P(Neon, UnpreparedMatrixGivesTheSameSums) {
  for (TensorType type : kTypes) {
    Matrix m = make_matrix(*ks_, type, 33, 512, Rows::Random, 51);
    m.w.packed = nullptr;
    m.packed.reset();
    check(*ks_, m, 1, 3, 30, Acts::Random, 52, describe(type, 33, 512) + " unprepared");
    check(*ks_, m, 2, 0, 33, Acts::Random, 53, describe(type, 33, 512) + " unprepared n 2");
  }
}

// A layout prepared for another matrix is a caller bug: an error, not
// silently wrong sums or a read past the layout.
TEST_P(Neon, MismatchedLayoutThrows) {
  if (!ks_->prepare) GTEST_SKIP() << "reads the GGUF layout directly";
  const Matrix small = make_matrix(*ks_, TensorType::TQ2_0, 7, 256, Rows::Random, 1);
  Matrix big = make_matrix(*ks_, TensorType::TQ2_0, 33, 512, Rows::Random, 2);
  big.w.packed = small.w.packed;
  const auto q = acts(512, Acts::Random, 3);
  std::vector<int32_t> s(33);
  EXPECT_THROW(ks_->gemm_i8(big.w, q.data(), 1, s.data(), 0, 33), Error);
}

// TQ2_0 code 3 is no trit; loaders reject it, but a kernel reading one must
// still agree with scalar (+2) rather than read out of its tables.
TEST_P(Neon, Tq2CodeThreeCountsAsTwo) {
  Matrix m = make_matrix(*ks_, TensorType::TQ2_0, 17, 512, Rows::Random, 61);
  for (size_t i = 0; i < m.data.size(); i += 7)
    if (i % 66 < 64) m.data[i] = 0xff;  // four code-3 weights
  if (ks_->prepare) {
    m.packed = ks_->prepare(m.plain);
    m.w.packed = m.packed.get();
  }
  for (Acts a : {Acts::Min, Acts::Max, Acts::Random})
    check(*ks_, m, 1, 0, 17, a, 62, "code 3 acts " + std::to_string(int(a)));
  check(*ks_, m, 3, 1, 16, Acts::Min, 63, "code 3 gemm");
}

TEST_P(Neon, RejectsBadCalls) {
  expect_int8_bad_calls_throw(*ks_);
}

INSTANTIATE_TEST_SUITE_P(Sets, Neon, testing::Values("neon-sdot", "neon-tbl"),
                         [](const testing::TestParamInfo<const char*>& p) {
                           std::string s = p.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });
