// One suite for every ternary kernel set this binary has and this CPU runs
// (gemma.cpp runs each test on every SIMD target): int8 sums equal to the
// scalar oracle's, float results within 1e-5 of sum |x| * row scale, each
// vector's result independent of the batch it came in, nothing written
// outside the row range, and a layout that is not the set's refused. A new
// set gets all of it by being in the dispatch table. What is particular to
// one set (its availability bits, an instruction it must not use, its
// handling of TQ2_0's non-trit code 3) stays in that set's own file.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "tern/error.h"
#include "tern/kernels.h"
#include "tern/quant.h"

using namespace tern;
using namespace tern::test;
using gguf::TensorType;

namespace {

constexpr TensorType kTypes[] = {TensorType::TQ2_0, TensorType::TQ1_0};

std::vector<std::string> vector_sets() {
  std::vector<std::string> names;
  for (const KernelSet* s : all_kernel_sets())
    if (s != &scalar_kernels()) names.emplace_back(s->name);
  return names;
}

class EverySet : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ks_ = find_set(GetParam());
    ASSERT_NE(ks_, nullptr);
    if (!ks_->available(cpu_features()))
      GTEST_SKIP() << GetParam() << " needs a CPU feature missing here (CPU has " << cpu_features().summary()
                   << ")";
  }
  const KernelSet* ks_ = nullptr;
};

std::string describe(TensorType type, int64_t M, int64_t K, int64_t r0, int64_t r1, int64_t n) {
  return std::string(type == TensorType::TQ1_0 ? "TQ1_0" : "TQ2_0") + " M " + std::to_string(M) + " K " +
         std::to_string(K) + " rows [" + std::to_string(r0) + "," + std::to_string(r1) + ") n " +
         std::to_string(n);
}

// Rows [r0, r1) of n vectors through each mode the set has, against
// scalar on the stored matrix; every other entry must keep its sentinel,
// and each vector alone must get what it got in the batch (floats bit for
// bit: a token's logits may not depend on what it was batched with).
void check(const KernelSet& ks, const Matrix& m, int64_t n, int64_t r0, int64_t r1, Acts kind, uint32_t seed,
           const std::string& what) {
  const int64_t M = m.M, K = m.K;
  const std::string where = std::string(ks.name) + " " + what;
  if (ks.gemm_i8) {
    const auto q = acts(n * K, kind, seed);
    const int32_t kSent = 0x5a5a5a5a;
    std::vector<int32_t> want(size_t(n * M)), got(size_t(n * M), kSent), one(size_t(M), kSent);
    scalar_kernels().gemm_i8(m.plain, q.data(), n, want.data(), 0, M);
    ks.gemm_i8(m.w, q.data(), n, got.data(), r0, r1);
    for (int64_t i = 0; i < n; ++i) {
      ks.gemm_i8(m.w, q.data() + i * K, 1, one.data(), r0, r1);
      for (int64_t r = 0; r < M; ++r) {
        const size_t at = size_t(i * M + r);
        const bool in = r >= r0 && r < r1;
        ASSERT_EQ(got[at], in ? want[at] : kSent) << where << " int8 vec " << i << " row " << r;
        ASSERT_EQ(one[size_t(r)], in ? want[at] : kSent) << where << " int8 alone, vec " << i << " row " << r;
      }
    }
  }
  if (ks.gemm_f32) {
    const auto x = random_floats(n * K, seed + 1);
    const uint32_t kSent = 0x7fc0dead;  // a NaN no kernel produces
    std::vector<float> want(size_t(n * M)), got(size_t(n * M), std::bit_cast<float>(kSent)),
        one(size_t(M), std::bit_cast<float>(kSent));
    scalar_kernels().gemm_f32(m.plain, x.data(), n, want.data(), 0, M);
    ks.gemm_f32(m.w, x.data(), n, got.data(), r0, r1);
    for (int64_t i = 0; i < n; ++i) {
      ks.gemm_f32(m.w, x.data() + i * K, 1, one.data(), r0, r1);
      double mag = 0;
      for (int64_t k = 0; k < K; ++k) mag += std::fabs(double(x[size_t(i * K + k)]));
      for (int64_t r = 0; r < M; ++r) {
        const size_t at = size_t(i * M + r);
        if (r < r0 || r >= r1) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got[at]), kSent) << where << " float wrote row " << r;
          ASSERT_EQ(std::bit_cast<uint32_t>(one[size_t(r)]), kSent) << where << " float wrote row " << r;
          continue;
        }
        ASSERT_NEAR(got[at], want[at], 1e-5 * mag * m.scale[size_t(r)]) << where << " float vec " << i << " row " << r;
        ASSERT_EQ(std::bit_cast<uint32_t>(one[size_t(r)]), std::bit_cast<uint32_t>(got[at]))
            << where << " float alone vs batch, vec " << i << " row " << r;
      }
    }
  }
}

}  // namespace

// Smallest block count, model widths, K = 1280 (no multiple of 320, the
// base-3 group), row counts that fill no row group, every activation extreme.
TEST_P(EverySet, ShapesAndActivationsMatchScalar) {
  for (TensorType type : kTypes)
    for (int64_t M : {1, 7, 33})
      for (int64_t K : {256, 768, 1280, 2560}) {
        const uint32_t seed = uint32_t(M * 131 + K);
        const Matrix m = make_matrix(*ks_, type, M, K, Rows::Mixed, seed);
        for (Acts a : {Acts::Random, Acts::Max, Acts::Min, Acts::Alternating})
          for (int64_t n : {1, 3})
            check(*ks_, m, n, 0, M, a, seed + int(a), describe(type, M, K, 0, M, n) + " acts " + std::to_string(int(a)));
        // Not prepared (direct callers may skip prepare()): the same results
        // (rows repacked or decoded on the fly), or a refusal, never others.
        const Matrix raw = make_matrix(type, M, K, Rows::Mixed, seed);
        try {
          check(*ks_, raw, 2, 0, M, Acts::Random, seed, describe(type, M, K, 0, M, 2) + " unprepared");
        } catch (const Error&) {
        }
      }
}

// Uniform rows at the activation extremes put every partial sum at its
// largest; K = 6912 is BitNet's FFN width.
TEST_P(EverySet, UniformRowsAtExtremes) {
  for (TensorType type : kTypes)
    for (Rows rows : {Rows::Zero, Rows::Plus, Rows::Minus})
      for (int64_t K : {256, 6912}) {
        const int64_t M = K > 2560 ? 5 : 33;
        const Matrix m = make_matrix(*ks_, type, M, K, rows, uint32_t(K + int(rows)));
        for (Acts a : {Acts::Max, Acts::Min})
          for (int64_t n : {1, 4, 17})
            check(*ks_, m, n, 0, M, a, 3, describe(type, M, K, 0, M, n) + " rows " + std::to_string(int(rows)));
      }
}

// Ranges that start or end inside a row group or pair, empty ranges, and
// batch sizes around every tile width (1 .. 5, a prompt-sized 37).
TEST_P(EverySet, RowRangesAndBatches) {
  for (TensorType type : kTypes)
    for (int64_t M : {7, 33, 70}) {
      const int64_t K = 768;
      const Matrix m = make_matrix(*ks_, type, M, K, Rows::Random, uint32_t(M));
      const std::pair<int64_t, int64_t> ranges[] = {
          {0, M}, {1, M}, {0, M - 1}, {3, 5}, {M / 2, M / 2}, {M - 1, M}, {M / 3, 2 * M / 3}};
      for (auto [r0, r1] : ranges)
        for (int64_t n = 1; n <= 5; ++n)
          check(*ks_, m, n, r0, r1, Acts::Random, uint32_t(M + n), describe(type, M, K, r0, r1, n));
    }
  for (TensorType type : kTypes) {
    const Matrix m = make_matrix(*ks_, type, 9, 1280, Rows::Mixed, 17);
    check(*ks_, m, 37, 1, 7, Acts::Max, 18, describe(type, 9, 1280, 1, 7, 37));
  }
}

// Prompt-sized batches over ranges that start and end inside tiles (sets
// may tile tokens by 16, as avx512-amx does), and over long rows, which
// sets may cut into column slices (the AVX-512 sets decode codes to bytes
// 3840 columns at a time): K = 7936 is three slices with a base-3 group of
// 4 planes at the end, and 16 and 23 vectors leave partial vector blocks.
TEST_P(EverySet, PromptBatchesMatchScalar) {
  struct Case {
    int64_t M, K, r0, r1, n;
  };
  const Case cases[] = {{48, 512, 0, 48, 16}, {48, 512, 0, 48, 35}, {48, 512, 5, 40, 16}, {48, 512, 5, 40, 35},
                        {11, 7936, 0, 11, 16}, {11, 7936, 2, 9, 23}, {9, 4096, 1, 8, 8}, {9, 4096, 0, 9, 9}};
  for (TensorType type : kTypes)
    for (const Case& c : cases) {
      const Matrix m = make_matrix(*ks_, type, c.M, c.K, Rows::Mixed, uint32_t(61 + c.K));
      check(*ks_, m, c.n, c.r0, c.r1, Acts::Random, uint32_t(62 + c.n), describe(type, c.M, c.K, c.r0, c.r1, c.n));
    }
}

// Direct callers (tests, tools) may skip prepare(): a set then either gives
// the same results or refuses with tern::Error, never other numbers.
TEST_P(EverySet, UnpreparedMatrixMatchesOrIsRefused) {
  for (TensorType type : kTypes) {
    const Matrix m = make_matrix(type, 33, 512, Rows::Random, 51);
    // n = 2 takes the decode loops, n = 17 the prompt paths.
    for (int n : {2, 17}) try {
        check(*ks_, m, n, 3, 30, Acts::Random, 52, describe(type, 33, 512, 3, 30, n) + " unprepared");
      } catch (const Error& e) {
        SUCCEED() << ks_->name << " refuses unprepared " << describe(type, 33, 512, 3, 30, n) << ": " << e.what();
      }
  }
}

// A layout made for another shape, or by a set that arranges weights
// differently, is refused (kernels/layout.h); a set reading the same
// arrangement (avx2 and avx2-vnni) must then give the right answer.
TEST_P(EverySet, ForeignLayoutIsRefusedOrRead) {
  for (TensorType type : kTypes) {
    const Matrix big = make_matrix(*ks_, type, 33, 512, Rows::Random, 2);
    if (big.w.packed != nullptr) {  // else this type is read in place
      const Matrix small = make_matrix(*ks_, type, 7, 256, Rows::Random, 1);
      TernaryMatrix w = big.w;
      w.packed = small.w.packed;
      const auto q = acts(512, Acts::Random, 3);
      const auto x = random_floats(512, 4);
      std::vector<int32_t> s(33);
      std::vector<float> y(33);
      const std::string what = describe(type, 33, 512, 0, 33, 1) + " in a 7x256 layout";
      if (ks_->gemm_i8) {
        EXPECT_THROW(ks_->gemm_i8(w, q.data(), 1, s.data(), 0, 33), Error) << what;
      }
      if (ks_->gemm_f32) {
        EXPECT_THROW(ks_->gemm_f32(w, x.data(), 1, y.data(), 0, 33), Error) << what;
      }
    }
    for (const KernelSet* other : all_kernel_sets()) {
      if (other == ks_ || other->prepare == nullptr || !other->available(cpu_features())) continue;
      Matrix theirs = make_matrix(*other, type, 33, 512, Rows::Random, 2);
      if (theirs.w.packed == nullptr) continue;
      const std::string what = describe(type, 33, 512, 0, 33, 1) + " in " + other->name + "'s layout";
      try {
        check(*ks_, theirs, 1, 0, 33, Acts::Random, 5, what);
      } catch (const Error& e) {
        SUCCEED() << what << ": " << e.what();
      }
    }
  }
}

TEST_P(EverySet, BadCallsAreErrors) {
  if (ks_->gemm_i8) expect_int8_bad_calls_throw(*ks_);
  if (ks_->gemm_f32) {
    const Matrix m = make_matrix(*ks_, TensorType::TQ2_0, 4, 256, Rows::Random, 5);
    const auto x = random_floats(256, 6);
    std::vector<float> y(4);
    EXPECT_THROW(ks_->gemm_f32(m.w, x.data(), 1, y.data(), 0, 5), Error);
    EXPECT_THROW(ks_->gemm_f32(m.w, x.data(), -1, y.data(), 0, 4), Error);
    TernaryMatrix no_scale = m.w;
    no_scale.row_scale = nullptr;
    EXPECT_THROW(ks_->gemm_f32(no_scale, x.data(), 1, y.data(), 0, 4), Error);
  }
}

// The gated activations, bit for bit the references (kernels/glu.h): over
// every exponent a hidden value takes, the ends of exp's range, signed
// zeros, infinities and NaN, at lengths around the vector widths and from
// an unaligned start.
TEST_P(EverySet, GatedActivationsAreTheReferenceBits) {
  std::vector<float> g, u;
  for (float v = -120.0f; v <= 120.0f; v += 0.0371f) g.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-42f, -1e-42f, 87.33f, -87.33f, 88.72f, -88.72f, 103.9f,
                  -103.9f, 1e30f, -1e30f, inf, -inf, std::nanf(""), -std::nanf("")})
    g.push_back(v);
  const auto r = random_floats(g.size(), 71);
  for (size_t i = 0; i < g.size(); ++i) u.push_back(i % 7 == 3 ? -0.0f : 3 * r[i]);
  const struct {
    const char* name;
    Glu set, reference;
  } glus[] = {{"silu", ks_->glu_silu, &silu_glu}, {"relu2", ks_->glu_relu2, &relu2_glu}};
  for (const auto& f : glus)
    for (int n : {1, 7, 8, 15, 16, 17, 33, 100, int(g.size()) - 1}) {
      std::vector<float> want(g.begin() + 1, g.begin() + 1 + n), got = want;
      f.reference(want.data(), u.data() + 1, n);
      f.set(got.data(), u.data() + 1, n);
      for (int i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(got[size_t(i)]), std::bit_cast<uint32_t>(want[size_t(i)]))
            << f.name << " n " << n << " g " << g[size_t(i) + 1] << " u " << u[size_t(i) + 1];
    }
}

INSTANTIATE_TEST_SUITE_P(Built, EverySet, testing::ValuesIn(vector_sets()), [](const auto& info) {
  std::string s = info.param;
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
});
