// Every op of the forward pass against a naive version written differently
// (double precision, complex numbers, explicit KV-head repetition).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <vector>

#include "tern/ops.h"

namespace {

std::vector<float> randv(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

TEST(Ops, RmsNormMatchesNaive) {
  const int n = 257;
  auto x = randv(n, 1, 3.0f), w = randv(n, 2);
  std::vector<float> out(n);
  tern::ops::rmsnorm(out.data(), x.data(), w.data(), n, 1e-5f);
  long double ss = 0;
  for (float v : x) ss += (long double)v * v;
  const long double r = 1.0L / std::sqrt(ss / n + 1e-5L);
  for (int i = 0; i < n; ++i) EXPECT_NEAR(out[i], double(x[i] * r * w[i]), 1e-5 * std::fabs(x[i] * r * w[i]) + 1e-7);
}

// Rotates x's heads with rope_fn and checks each pair (a, b), b = a + gap
// (1: adjacent pairs, at even a; head_dim/2: halves), against a complex
// multiplication in double.
void expect_rope_rotates_pairs(void (*rope_fn)(float*, int, int, const float*), int heads, int hd,
                               int pos, float theta, bool halves) {
  auto x = randv(size_t(heads * hd), uint32_t(pos));
  auto y = x;
  std::vector<float> cs(static_cast<size_t>(hd));
  tern::ops::rope_angles(cs.data(), hd, pos, theta);
  rope_fn(y.data(), heads, hd, cs.data());
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < hd / 2; ++i) {
      const int a = h * hd + (halves ? i : 2 * i), b = a + (halves ? hd / 2 : 1);
      const double ang = pos / std::pow(double(theta), 2.0 * i / hd);
      const std::complex<double> r = std::complex<double>(x[a], x[b]) * std::polar(1.0, ang);
      EXPECT_NEAR(y[a], r.real(), 1e-5);
      EXPECT_NEAR(y[b], r.imag(), 1e-5);
    }
}

TEST(Ops, RopeRotatesAdjacentPairsLikeComplexMultiplication) {
  expect_rope_rotates_pairs(tern::ops::rope, 3, 16, 37, 10000.0f, false);
}

TEST(Ops, RopeHalvesRotatesPairsHalfAHeadApart) {
  expect_rope_rotates_pairs(tern::ops::rope_halves, 2, 64, 1234, 500000.0f, true);
}

TEST(Ops, RopeAtPositionZeroIsIdentity) {
  auto x = randv(64, 4), y = x;
  std::vector<float> cs(32);
  tern::ops::rope_angles(cs.data(), 32, 0, 500000.0f);
  tern::ops::rope(y.data(), 2, 32, cs.data());
  EXPECT_EQ(x, y);
}

// YaRN keeps the fast angles (below the beta_fast correction dimension),
// divides the slow ones (past beta_slow's) by the factor, ramps linearly
// in between, and scales cos and sin by 0.1 ln(factor) + 1. Qwen3's
// 128-wide heads, theta 1e6, 32768 trained positions: the dimensions are
// floor(23.6) = 23 and ceil(39.7) = 40 (transformers' truncate).
TEST(Ops, YarnBlendsFrequenciesAlongTheRamp) {
  const tern::ops::RopeTable plain = tern::ops::rope_table(128, 1e6);
  const tern::ops::RopeTable y = tern::ops::rope_table(128, 1e6, {.factor = 4, .orig_ctx = 32768});
  ASSERT_EQ(y.freq.size(), 64u);
  EXPECT_EQ(plain.mscale, 1.0);
  EXPECT_DOUBLE_EQ(y.mscale, 0.1 * std::log(4.0) + 1);
  for (int i = 0; i < 64; ++i) {
    const double keep = 1 - std::clamp((i - 23.0) / (40.0 - 23.0), 0.0, 1.0);
    EXPECT_DOUBLE_EQ(y.freq[size_t(i)], plain.freq[size_t(i)] * (keep + (1 - keep) / 4)) << i;
  }
  EXPECT_EQ(y.freq[23], plain.freq[23]);
  EXPECT_EQ(y.freq[40], plain.freq[40] / 4);
  // A factor of 1 is plain RoPE, bit for bit.
  const tern::ops::RopeTable one = tern::ops::rope_table(128, 1e6, {.factor = 1, .orig_ctx = 32768});
  EXPECT_EQ(one.freq, plain.freq);
  std::vector<float> a(128), b(128);
  tern::ops::rope_angles(a.data(), 77, y);
  tern::ops::rope_angles(b.data(), 77, plain);
  EXPECT_FLOAT_EQ(a[0], float(std::cos(77.0) * y.mscale));  // freq[0] = 1, kept
  EXPECT_NE(a, b);
}

TEST(Ops, SoftmaxMatchesNaiveAndSurvivesLargeValues) {
  std::vector<float> x{1000.0f, 999.0f, -5.0f, 0.0f};
  auto y = x;
  tern::ops::softmax(y.data(), int(y.size()));
  double z = 0;
  for (float v : x) z += std::exp(double(v) - 1000.0);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], std::exp(double(x[i]) - 1000.0) / z, 1e-7);
}

TEST(Ops, SoftmaxHoldsFloatPrecisionOverLongRowsAndZeroesMinusInfinity) {
  auto x = randv(1000, 13, 8.0f);
  x[7] = -std::numeric_limits<float>::infinity();
  auto y = x;
  tern::ops::softmax(y.data(), int(y.size()));
  // The float difference x - max is the argument (its rounding is the
  // same for any exp); from there on, a few ulps.
  const float mx = *std::max_element(x.begin(), x.end());
  double z = 0;
  for (float v : x) z += std::exp(double(v - mx));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(double(x[i] - mx)) / z;
    ASSERT_NEAR(y[i], want, 6 * want * 0x1p-24 + 1e-44) << i;
  }
  EXPECT_EQ(y[7], 0.0f);
}

TEST(Ops, GroupedQueryAttentionMatchesNaive) {
  const int H = 8, KVH = 2, hd = 16, n_pos = 11;
  auto q = randv(H * hd, 5), keys = randv(n_pos * KVH * hd, 6), values = randv(n_pos * KVH * hd, 7);
  std::vector<float> out(H * hd), scratch(n_pos);
  tern::ops::attention(out.data(), q.data(), keys.data(), values.data(), n_pos, H, KVH, hd,
                       scratch.data());
  for (int h = 0; h < H; ++h) {
    const int g = h / (H / KVH);  // query heads 0-3 share KV head 0
    std::vector<double> s(n_pos);
    double mx = -1e300, z = 0;
    for (int t = 0; t < n_pos; ++t) {
      double d = 0;
      for (int i = 0; i < hd; ++i) d += double(q[h * hd + i]) * keys[(t * KVH + g) * hd + i];
      s[t] = d / std::sqrt(double(hd));
      mx = std::max(mx, s[t]);
    }
    for (double& v : s) z += (v = std::exp(v - mx));
    for (int i = 0; i < hd; ++i) {
      double o = 0;
      for (int t = 0; t < n_pos; ++t) o += s[t] / z * values[(t * KVH + g) * hd + i];
      EXPECT_NEAR(out[h * hd + i], o, 1e-5);
    }
  }
}

// Threads split a token's heads: each head range writes only its heads, and
// the pieces equal the whole.
TEST(Ops, AttentionHeadRangesComposeToTheWhole) {
  const int H = 8, KVH = 2, hd = 16, n_pos = 9;
  auto q = randv(H * hd, 15), keys = randv(n_pos * KVH * hd, 16), values = randv(n_pos * KVH * hd, 17);
  std::vector<float> whole(H * hd), parts(H * hd, -3.0f), scratch(n_pos);
  tern::ops::attention(whole.data(), q.data(), keys.data(), values.data(), n_pos, H, KVH, hd,
                       scratch.data());
  tern::ops::attention(parts.data(), q.data(), keys.data(), values.data(), n_pos, H, KVH, hd,
                       scratch.data(), 2, 5);
  for (int i = 0; i < H * hd; ++i) {
    if (i < 2 * hd || i >= 5 * hd) {
      EXPECT_EQ(parts[i], -3.0f) << "wrote outside heads 2..4 at " << i;
    }
  }
  for (int h : {0, 1, 5, 6, 7})
    tern::ops::attention(parts.data(), q.data(), keys.data(), values.data(), n_pos, H, KVH, hd,
                         scratch.data(), h, h + 1);
  EXPECT_EQ(parts, whole);
}

TEST(Ops, AttentionOverOnePositionReturnsItsValue) {
  const int H = 4, KVH = 4, hd = 8;
  auto q = randv(H * hd, 8), k = randv(KVH * hd, 9), v = randv(KVH * hd, 10);
  std::vector<float> out(H * hd), scratch(1);
  tern::ops::attention(out.data(), q.data(), k.data(), v.data(), 1, H, KVH, hd, scratch.data());
  for (int i = 0; i < H * hd; ++i) EXPECT_FLOAT_EQ(out[i], v[i]);
}

TEST(Ops, SwiGluMatchesNaive) {
  auto g = randv(100, 11, 4.0f), u = randv(100, 12);
  auto y = g;
  tern::ops::swiglu(y.data(), u.data(), 100);
  for (int i = 0; i < 100; ++i)
    EXPECT_NEAR(y[i], double(g[i]) / (1 + std::exp(-double(g[i]))) * u[i], 1e-5);
}

// SwiGLU's own exp: within 4 float ulps of silu in double over every
// exponent a hidden value can take, and libm's limits at the ends.
TEST(Ops, SwiGluHoldsFloatPrecisionFromUnderflowToOverflow) {
  std::vector<float> g;
  for (float v = -110.0f; v <= 110.0f; v += 0.0137f) g.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 87.33f, -87.33f, 88.72f, -88.72f, 103.9f, -103.9f})
    g.push_back(v);
  const std::vector<float> u(g.size(), 1.0f);
  auto y = g;
  tern::ops::swiglu(y.data(), u.data(), int(y.size()));
  for (size_t i = 0; i < g.size(); ++i) {
    const double want = double(g[i]) / (1 + std::exp(-double(g[i])));
    // Below -88.72, exp(-g) overflows float and g / (1 + inf) is -0 (as
    // with libm's expf), while silu itself is still up to 3e-37.
    const double tol = std::max(4 * std::fabs(want) * 0x1p-24, 4e-37);
    ASSERT_NEAR(y[i], want, tol) << "g = " << g[i];
  }
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::vector<float> edge{inf, -inf, nan, -1000.0f, 1000.0f}, one(edge.size(), 1.0f);
  tern::ops::swiglu(edge.data(), one.data(), int(edge.size()));
  EXPECT_EQ(edge[0], inf);
  EXPECT_TRUE(std::isnan(edge[1]));  // -inf / inf, as with libm
  EXPECT_TRUE(std::isnan(edge[2]));
  EXPECT_EQ(edge[3], 0.0f);
  EXPECT_TRUE(std::signbit(edge[3]));
  EXPECT_EQ(edge[4], 1000.0f);
}

}  // namespace

TEST(Ops, DotMatchesDoubleOnAnyLength) {
  for (int n : {1, 7, 8, 9, 96, 257}) {
    auto a = randv(n, uint32_t(20 + n)), b = randv(n, uint32_t(40 + n));
    double want = 0, mag = 0;
    for (int i = 0; i < n; ++i) {
      want += double(a[i]) * b[i];
      mag += std::fabs(double(a[i]) * b[i]);
    }
    EXPECT_NEAR(tern::ops::dot(a.data(), b.data(), n), want, 1e-6 * mag + 1e-12) << n;
  }
}
