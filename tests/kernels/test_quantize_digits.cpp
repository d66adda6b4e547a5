// Wide activations as int8 digits (quantize_act_digits): the digits are
// the balanced base-255 form of the rounded value, every value of the
// 16-bit range comes back exactly, the 24-bit one likewise at its edges
// and on a sweep, and a ternary dot product through the digits stays
// inside the bound docs/ARCHITECTURE.md states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tern/error.h"
#include "tern/quant.h"

using namespace tern;

namespace {

// The value the digits of element i stand for.
int64_t value(const std::vector<int8_t>& q, size_t n, int digits, size_t i) {
  int64_t v = 0;
  for (int j = 0; j < digits; ++j) {
    const int8_t dj = q[size_t(j) * n + i];
    EXPECT_LE(std::abs(int(dj)), 127);
    v = 255 * v + dj;
  }
  return v;
}

// x = v for the values, with the top present so the scale is 1.
void expect_round_trip(int digits, const std::vector<float>& x) {
  std::vector<int8_t> q(size_t(digits) * x.size());
  ASSERT_EQ(quantize_act_digits(x.data(), int64_t(x.size()), digits, q.data(), int64_t(x.size())), 1.0f);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(value(q, x.size(), digits, i), int64_t(x[i])) << digits;
  EXPECT_EQ(act_digits_rel_error(x.data(), int64_t(x.size()), digits, q.data(), int64_t(x.size()), 1.0f), 0.0);
}

TEST(QuantizeActDigits, EveryValueRoundTrips) {
  std::vector<float> x;
  for (int64_t v = -act_digits_max(2); v <= act_digits_max(2); ++v) x.push_back(float(v));
  expect_round_trip(2, x);
  // 24 bits: both ends, every digit boundary near them, and a stride over the rest.
  const int64_t top = act_digits_max(3);
  std::vector<float> y{float(top)};
  for (int64_t v = -top; v <= top; v += 997) y.push_back(float(v));
  for (int64_t v : {int64_t(127), int64_t(128), int64_t(32512), int64_t(32513), int64_t(32639), top - 1})
    for (int64_t sgn : {-1, 1}) y.push_back(float(sgn * v));
  expect_round_trip(3, y);
}

TEST(QuantizeActDigits, RoundsHalfToEvenAndBadCountsThrow) {
  std::vector<float> x{float(act_digits_max(2)), 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 127.5f, -127.5f, 0.49f};
  std::vector<int8_t> q(2 * x.size());
  ASSERT_EQ(quantize_act_digits(x.data(), int64_t(x.size()), 2, q.data(), int64_t(x.size())), 1.0f);
  std::vector<int64_t> v;
  for (size_t i = 0; i < x.size(); ++i) v.push_back(value(q, x.size(), 2, i));
  EXPECT_EQ(v, (std::vector<int64_t>{act_digits_max(2), 0, 2, 2, 0, -2, 128, -128, 0}));
  EXPECT_EQ(q[6], 1);  // 128 = 255 - 127: (1, -127)
  EXPECT_EQ(q[x.size() + 6], -127);
  for (int d : {0, 1, 4}) EXPECT_THROW(quantize_act_digits(x.data(), 1, d, q.data(), 1), Error) << d;
}

TEST(QuantizeActDigits, ZerosTinyValuesNanAndInfAreDefined) {
  std::vector<float> z(8, 0.0f);
  std::vector<int8_t> q(16, 5);
  EXPECT_TRUE(std::isfinite(quantize_act_digits(z.data(), 8, 2, q.data(), 8)));
  for (int8_t v : q) EXPECT_EQ(v, 0);
  EXPECT_EQ(act_digits_rel_error(z.data(), 8, 2, q.data(), 8, 1.0f), 0.0);
  // Below the 1e-30 floor of max|x| the scale stays finite and the values
  // round to zero; just above it they fill the range.
  std::vector<float> d{1e-40f, -2e-40f}, e{1e-29f, -2e-29f};
  for (int digits : {2, 3}) {
    std::vector<int8_t> r(size_t(2 * digits));
    EXPECT_TRUE(std::isfinite(quantize_act_digits(d.data(), 2, digits, r.data(), 2)));
    EXPECT_EQ(value(r, 2, digits, 1), 0);
    EXPECT_TRUE(std::isfinite(quantize_act_digits(e.data(), 2, digits, r.data(), 2)));
    EXPECT_EQ(value(r, 2, digits, 1), -act_digits_max(digits));
  }
  const float nan = std::nanf(""), inf = INFINITY;
  std::vector<float> x{1.0f, nan, -2.0f};
  std::vector<int8_t> r(6);
  quantize_act_digits(x.data(), 3, 2, r.data(), 3);
  EXPECT_EQ(value(r, 3, 2, 1), -act_digits_max(2));  // NaN to the lower bound, as int8 does
  EXPECT_EQ(value(r, 3, 2, 2), -act_digits_max(2));
  std::vector<float> y{inf, 1.0f};
  quantize_act_digits(y.data(), 2, 2, r.data(), 2);  // scale 0: inf * 0 is NaN
  EXPECT_EQ(value(r, 2, 2, 0), -act_digits_max(2));
  EXPECT_EQ(value(r, 2, 2, 1), 0);
}

// quantize_act_wide is 2 digits, or 3 where the 2-digit rounding's
// act_digits_rel_error passes the bound: the same digits and scale as
// quantize_act_digits, on vectors whose outliers put them either side.
TEST(QuantizeActDigits, WideChoosesAsTheRelativeErrorSays) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int took[4] = {0, 0, 0, 0};
  for (float outlier : {0.0f, 5.0f, 20.0f, 60.0f, 400.0f}) {
    std::vector<float> x(2560);
    for (float& v : x) v = normal(rng);
    x[100] = outlier;
    const int64_t n = int64_t(x.size());
    std::vector<int8_t> two(2 * x.size()), three(3 * x.size()), wide(3 * x.size(), 5);
    const float s2 = quantize_act_digits(x.data(), n, 2, two.data(), n);
    const float s3 = quantize_act_digits(x.data(), n, 3, three.data(), n);
    const bool want3 = act_digits_rel_error(x.data(), n, 2, two.data(), n, s2) > 1e-4;
    int d = 0;
    const float s = quantize_act_wide(x.data(), n, 1e-4, wide.data(), n, &d);
    ASSERT_EQ(d, want3 ? 3 : 2) << outlier;
    EXPECT_EQ(s, want3 ? s3 : s2) << outlier;
    const std::vector<int8_t>& ref = want3 ? three : two;
    EXPECT_TRUE(std::equal(ref.begin(), ref.end(), wide.begin())) << outlier;
    ++took[d];
  }
  EXPECT_GT(took[2], 0);
  EXPECT_GT(took[3], 0);
  std::vector<float> z(256, 0.0f);
  std::vector<int8_t> q(3 * 256);
  int d = 0;
  EXPECT_TRUE(std::isfinite(quantize_act_wide(z.data(), 256, 1e-4, q.data(), 256, &d)));
  EXPECT_EQ(d, 2);  // no error to speak of
}

// Each element is off by at most max|x| (1/2 + top 2^-24) / top (half a
// step, plus the float rounding of x * s), so a ternary row's dot product
// is off by at most that times its nonzeros; act_digits_rel_error is the
// L2 error it states, and 24 bits are about 255x finer than 16.
TEST(QuantizeActDigits, TernaryDotStaysInsideTheBound) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> trit(-1, 1);
  for (int K : {256, 2560, 6912}) {
    std::vector<float> x(static_cast<size_t>(K));
    for (float& v : x) v = normal(rng);
    x[17] = 40.0f;  // an outlier sets the scale, as real activations have
    double rel[2] = {0, 0};
    for (int digits : {2, 3}) {
      const double top = double(act_digits_max(digits));
      const double bound = 40.0 * (0.5 + top * std::ldexp(1.0, -24)) / top * 1.0001;
      const size_t n = x.size();
      std::vector<int8_t> q(size_t(digits) * n);
      const float s = quantize_act_digits(x.data(), K, digits, q.data(), K);
      double e2 = 0, x2 = 0;
      for (size_t k = 0; k < n; ++k) {
        const double e = double(x[k]) - double(value(q, n, digits, k)) / double(s);
        ASSERT_LE(std::fabs(e), bound);
        e2 += e * e;
        x2 += double(x[k]) * double(x[k]);
      }
      rel[digits - 2] = act_digits_rel_error(x.data(), K, digits, q.data(), K, s);
      EXPECT_NEAR(rel[digits - 2], std::sqrt(e2 / x2), 1e-12);
      for (int row = 0; row < 16; ++row) {
        double exact = 0;
        int64_t sum = 0, nnz = 0;
        std::vector<int64_t> part(size_t(digits), 0);
        for (int k = 0; k < K; ++k) {
          const int t = trit(rng);
          exact += t * double(x[size_t(k)]);
          for (int j = 0; j < digits; ++j) part[size_t(j)] += t * q[size_t(j) * n + size_t(k)];
          nnz += t != 0;
        }
        for (int j = 0; j < digits; ++j) sum = 255 * sum + part[size_t(j)];
        const double got = double(sum) / double(s);
        ASSERT_LE(std::fabs(got - exact), double(nnz) * bound);
      }
    }
    EXPECT_LT(rel[1], rel[0] / 100) << "K " << K;  // 255x the steps, less the rounding of x * s
    EXPECT_GT(rel[0], 0.0);
  }
}

}  // namespace
