// What is particular to the NEON kernel sets (neon-sdot, neon-tbl): on
// aarch64 both must be present, unprepared matrices must give the same sums
// (not a refusal), and TQ2_0's code 3 counts as +2. Shapes, ranges, batches
// and bad calls against the scalar oracle are the shared suite's
// (test_every_set.cpp); elsewhere (not built) these tests skip.
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

INSTANTIATE_TEST_SUITE_P(Sets, Neon, testing::Values("neon-sdot", "neon-tbl"),
                         [](const testing::TestParamInfo<const char*>& p) {
                           std::string s = p.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });
