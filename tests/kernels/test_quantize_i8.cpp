// Int8 activations: the reference (quantize_act_i8) against its definition,
// and every kernel set's quantize_i8 against the reference, byte for byte,
// on lengths around the vector widths and on the values where a vector
// rewrite could differ (ties, bounds, NaN, infinities, signed zeros).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "tern/kernels.h"
#include "tern/quant.h"

using namespace tern;

namespace {

TEST(QuantizeActI8, IsAbsmaxWithHalfEvenRounding) {
  // amax 127 gives scale 1, so x*s lands exactly on the .5 boundaries.
  std::vector<float> x{127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -127.0f, 0.49f};
  std::vector<int8_t> q(x.size());
  const float s = quantize_act_i8(x.data(), int64_t(x.size()), q.data());
  EXPECT_FLOAT_EQ(s, 1.0f);
  EXPECT_EQ(q, (std::vector<int8_t>{127, 0, 2, 2, 0, -2, -127, 0}));
}

TEST(QuantizeActI8, ZerosGiveAFiniteScale) {
  std::vector<float> x(16, 0.0f);
  std::vector<int8_t> q(16, 5);
  EXPECT_TRUE(std::isfinite(quantize_act_i8(x.data(), 16, q.data())));
  for (int8_t v : q) EXPECT_EQ(v, 0);
}

// An overflowed activation (inf, or NaN from inf - inf) must not reach a
// float-to-int cast: that is undefined, and the sanitizer job builds with
// -fsanitize=float-cast-overflow to catch it. The result is defined: the
// NaN and whatever inf scales to land on the int8 bounds.
TEST(QuantizeActI8, NanAndInfAreDefined) {
  const float nan = std::nanf(""), inf = INFINITY;
  std::vector<float> x{1.0f, nan, -2.0f, 3.0f};
  std::vector<int8_t> q(x.size());
  quantize_act_i8(x.data(), int64_t(x.size()), q.data());
  EXPECT_EQ(q[0], 42);
  EXPECT_EQ(q[1], -128);
  EXPECT_EQ(q[3], 127);
  std::vector<float> y{inf, 1.0f, -inf};
  std::vector<int8_t> r(y.size());
  quantize_act_i8(y.data(), int64_t(y.size()), r.data());
  // amax inf: the scale is 0, so inf * 0 is NaN again and 1 * 0 is 0.
  EXPECT_EQ(r, (std::vector<int8_t>{-128, 0, -128}));
}

void expect_same(const KernelSet& ks, const std::vector<float>& x, const char* what) {
  const int64_t n = int64_t(x.size());
  std::vector<int8_t> want(x.size() + 1, 77), got(x.size() + 1, 77);
  const float ws = quantize_act_i8(x.data(), n, want.data());
  const float gs = ks.quantize_i8(x.data(), n, got.data());
  ASSERT_EQ(std::bit_cast<uint32_t>(gs), std::bit_cast<uint32_t>(ws)) << ks.name << " scale, " << what << " n " << n;
  for (size_t i = 0; i <= x.size(); ++i)
    ASSERT_EQ(int(got[i]), int(want[i])) << ks.name << " " << what << " n " << n << " at " << i;
}

TEST(QuantizeI8, EverySetMatchesTheReference) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (const KernelSet* ks : all_kernel_sets()) {
    if (!ks->available(cpu_features())) continue;
    ASSERT_NE(ks->quantize_i8, nullptr) << ks->name;
    for (int64_t n : {1, 7, 8, 31, 32, 33, 63, 64, 65, 100, 1536, 2560 + 13}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (auto& v : x) v = u(rng);
      expect_same(*ks, x, "random");
      // The largest value last (in the padded tail) and first.
      x.back() = 9.0f;
      expect_same(*ks, x, "max in tail");
      x.front() = -12.0f;
      expect_same(*ks, x, "max first");
    }
    // Scale 1 puts every value on a half-integer tie; 127 and -128 bounds.
    std::vector<float> ties;
    for (int i = -256; i <= 254; ++i) ties.push_back(0.5f * float(i));
    ties.push_back(127.0f);
    expect_same(*ks, ties, "ties");
    const float nan = std::nanf(""), inf = INFINITY;
    for (std::vector<float> x : {std::vector<float>(40, 0.0f), std::vector<float>(40, -0.0f),
                                 std::vector<float>{1.0f, nan, -2.0f, 3.0f},
                                 std::vector<float>{inf, 1.0f, -inf, nan, 0.0f},
                                 std::vector<float>(45, nan), std::vector<float>(9, 1e-9f)}) {
      for (size_t i = 4; i < x.size(); i += 7) x[i] = float(i) * 0.25f;
      expect_same(*ks, x, "special values");
    }
  }
}

}  // namespace
