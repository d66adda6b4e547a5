// What is particular to the AVX2 kernel sets (avx2, avx2-vnni, avx2-tl1):
// TQ2_0's code 3, TQ1_0 converted at load, and their CPUID checks. Shapes,
// ranges, batches and bad calls against the scalar oracle are the shared
// suite's (test_every_set.cpp).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
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

class Avx2Sets : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ks_ = find_set(GetParam());
    if (ks_ == nullptr) GTEST_SKIP() << GetParam() << " is not built into this binary";
    if (!ks_->available(cpu_features())) GTEST_SKIP() << GetParam() << " needs a CPU feature missing here";
    ASSERT_NE(ks_->gemm_i8, nullptr);
    ASSERT_NE(ks_->gemm_i8, nullptr);
  }
  const KernelSet* ks_ = nullptr;
};

constexpr TensorType kTypes[] = {TensorType::TQ2_0, TensorType::TQ1_0};

std::string describe(TensorType type, int64_t M, int64_t K, int64_t r0, int64_t r1, int64_t n) {
  return std::string(type == TensorType::TQ1_0 ? "TQ1_0" : "TQ2_0") + " M " + std::to_string(M) +
         " K " + std::to_string(K) + " rows [" + std::to_string(r0) + "," + std::to_string(r1) +
         ") n " + std::to_string(n);
}

// gemm over [r0, r1) for n vectors, and gemv for the first vector, against
// scalar; rows outside the range must keep their sentinel.
void check_int8(const KernelSet& ks, const Matrix& m, const std::vector<int8_t>& q, int64_t n,
                int64_t r0, int64_t r1, const std::string& what) {
  const int32_t kSentinel = 0x5a5a5a5a;
  std::vector<int32_t> want(size_t(n * m.M), kSentinel), got(size_t(n * m.M), kSentinel);
  scalar_kernels().gemm_i8(m.w, q.data(), n, want.data(), r0, r1);
  ks.gemm_i8(m.w, q.data(), n, got.data(), r0, r1);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << ks.name << " gemm " << what << " vec " << i / m.M << " row " << i % m.M;
  std::vector<int32_t> one(size_t(m.M), kSentinel);
  ks.gemm_i8(m.w, q.data(), 1, one.data(), r0, r1);
  for (int64_t r = 0; r < m.M; ++r)
    ASSERT_EQ(one[size_t(r)], want[size_t(r)]) << ks.name << " gemv " << what << " row " << r;
}

void check_float(const KernelSet& ks, const Matrix& m, const std::vector<float>& x, int64_t n,
                 int64_t r0, int64_t r1, const std::string& what) {
  std::vector<float> want(size_t(n * m.M), -7.0f), got(size_t(n * m.M), -7.0f);
  scalar_kernels().gemm_f32(m.w, x.data(), n, want.data(), r0, r1);
  ks.gemm_f32(m.w, x.data(), n, got.data(), r0, r1);
  for (int64_t i = 0; i < n; ++i) {
    // Each vector's result must not depend on the batch it came in.
    std::vector<float> one(size_t(m.M), -7.0f);
    ks.gemm_f32(m.w, x.data() + i * m.K, 1, one.data(), r0, r1);
    double mag = 0;
    for (int64_t k = 0; k < m.K; ++k) mag += std::fabs(double(x[size_t(i * m.K + k)]));
    for (int64_t r = 0; r < m.M; ++r) {
      const size_t at = size_t(i * m.M + r);
      const double tol = 1e-5 * mag * m.scale[size_t(r)];
      if (r < r0 || r >= r1) {
        ASSERT_EQ(got[at], -7.0f) << ks.name << " wrote outside its rows " << what;
        continue;
      }
      ASSERT_NEAR(got[at], want[at], tol) << ks.name << " gemm " << what << " vec " << i << " row " << r;
      ASSERT_EQ(std::bit_cast<uint32_t>(one[size_t(r)]), std::bit_cast<uint32_t>(got[at]))
          << ks.name << " gemv vs gemm " << what << " vec " << i << " row " << r;
    }
  }
}

}  // namespace

// TQ2_0 code 3 is no trit; loaders reject it, but a kernel handed one must
// still agree with scalar (which reads it as +2) or refuse it at prepare.
TEST_P(Avx2Sets, Tq2CodeThreeMatchesScalarOrIsRefused) {
  const int64_t M = 5, K = 512;
  Matrix m = make_matrix(scalar_kernels(), TensorType::TQ2_0, M, K, Rows::Random, 9);
  m.data[size_t(2 * ternary_row_bytes(TensorType::TQ2_0, K) + 70)] |= 0xC0;  // row 2, block 1
  ASSERT_GE(find_invalid_tq2_code(&m.data[size_t(2 * ternary_row_bytes(TensorType::TQ2_0, K))], K), 0);
  if (ks_->prepare && ks_->prepared_bytes(m.w) > 0) {
    EXPECT_THROW(ks_->prepare(m.w), Error);
    return;
  }
  check_int8(*ks_, m, acts(2 * K, Acts::Random, 10), 2, 0, M, "code 3");
  check_int8(*ks_, m, acts(K, Acts::Min, 10), 1, 0, M, "code 3, q = -128");
  if (ks_->gemm_f32) check_float(*ks_, m, random_floats(2 * K, 11), 2, 0, M, "code 3");
}

// A set that converts TQ1_0 at load (avx2, avx2-vnni) still reads it in
// place for a caller that never prepared it, with the same results; and
// the conversion holds exactly the codes TQ2_0 would store.
TEST_P(Avx2Sets, Tq1ConvertedOrInPlaceMatchScalar) {
  const Matrix probe = make_matrix(TensorType::TQ1_0, 1, 256, Rows::Mixed, 1);
  if (ks_->prepare == nullptr || ks_->prepared_bytes(probe.w) == 0 || ks_->gemm_f32 == nullptr)
    GTEST_SKIP() << GetParam() << " does not convert TQ1_0";
  for (int64_t M : {1, 7, 33})
    for (int64_t K : {256, 1280, 6912}) {
      const uint32_t seed = uint32_t(M * 7 + K);
      const Matrix raw = make_matrix(TensorType::TQ1_0, M, K, Rows::Mixed, seed);
      const Matrix conv = make_matrix(*ks_, TensorType::TQ1_0, M, K, Rows::Mixed, seed);
      ASSERT_NE(conv.w.packed, nullptr);
      EXPECT_EQ(ks_->prepared_bytes(raw.w), M * K / 4);
      const auto q = acts(3 * K, Acts::Random, seed);
      const auto x = random_floats(3 * K, seed);
      for (const Matrix* m : {&raw, &conv}) {
        const std::string what = describe(TensorType::TQ1_0, M, K, 0, M, 3) + (m == &raw ? " in place" : " converted");
        check_int8(*ks_, *m, q, 3, 0, M, what);
        check_float(*ks_, *m, x, 3, 0, M, what);
      }
      // The converted codes are TQ2_0's: same trits, packed as TQ2_0 rows.
      std::vector<int8_t> t(static_cast<size_t>(K));
      std::vector<uint8_t> tq2(size_t(ternary_row_bytes(TensorType::TQ2_0, K)));
      const auto* body = static_cast<const uint8_t*>(conv.w.packed) + 64;
      for (int64_t r = 0; r < M; ++r) {
        unpack_ternary_row(TensorType::TQ1_0, raw.w.data + r * ternary_row_bytes(TensorType::TQ1_0, K), K, t.data());
        pack_ternary_row(TensorType::TQ2_0, t.data(), K, 0, tq2.data());
        for (int64_t b = 0; b < K / 256; ++b)
          ASSERT_EQ(std::memcmp(body + (r * K / 256 + b) * 64, tq2.data() + b * sizeof(BlockTQ2), 64), 0)
              << "row " << r << " block " << b << " K " << K;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Sets, Avx2Sets, ::testing::Values("avx2", "avx2-vnni", "avx2-tl1"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

// available() must need each CPUID bit a set uses and the OS's YMM state.
TEST(Avx2Availability, ChecksEveryFeatureAndOsState) {
  CpuFeatures all;
  all.avx = all.avx2 = all.fma = all.f16c = all.bmi2 = all.avx_vnni = all.os_avx = true;
  struct Need {
    const char* set;
    std::vector<bool CpuFeatures::*> bits;
  };
  const Need needs[] = {
      {"avx2", {&CpuFeatures::avx2, &CpuFeatures::fma, &CpuFeatures::os_avx}},
      {"avx2-vnni", {&CpuFeatures::avx2, &CpuFeatures::fma, &CpuFeatures::avx_vnni, &CpuFeatures::os_avx}},
      {"avx2-tl1", {&CpuFeatures::avx2, &CpuFeatures::os_avx}},
  };
  for (const Need& n : needs) {
    const KernelSet* ks = find_set(n.set);
    if (ks == nullptr) continue;
    EXPECT_TRUE(ks->available(all)) << n.set;
    for (auto bit : n.bits) {
      CpuFeatures f = all;
      f.*bit = false;
      EXPECT_FALSE(ks->available(f)) << n.set;
    }
  }
}

