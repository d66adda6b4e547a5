#include "tern/ops.h"

#include "tern/kernels.h"

#include <algorithm>
#include <cstdint>
#include <cmath>

namespace tern::ops {

void rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
  // Four double lanes: one chain of dependent adds cost about 4 cycles a
  // value (6% of a prompt). Each square is exact in double, so the lanes
  // change ss by rounding at 2^-53 only, below what the float result shows.
  double lane[4] = {};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) lane[j] += double(x[i + j]) * x[i + j];
  double ss = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  for (; i < n; ++i) ss += double(x[i]) * x[i];
  const float inv = float(1.0 / std::sqrt(ss / n + eps));
  for (int i = 0; i < n; ++i) out[i] = x[i] * inv * w[i];
}

RopeTable rope_table(int head_dim, double theta, const Yarn& yarn) {
  RopeTable t;
  const int half = head_dim / 2;
  t.freq.resize(size_t(half));
  for (int i = 0; i < half; ++i) t.freq[size_t(i)] = std::pow(theta, -2.0 * i / head_dim);
  if (!(yarn.factor > 1)) return t;
  // The angle index whose wavelength turns `rotations` times over the
  // trained context; below `low` (fast) frequencies keep their angle,
  // past `high` (slow) they are divided by the factor, and in between the
  // two are mixed along a linear ramp.
  const auto corr_dim = [&](double rotations) {
    return head_dim * std::log(yarn.orig_ctx / (rotations * 2 * M_PI)) / (2 * std::log(theta));
  };
  const double low = std::max(0.0, std::floor(corr_dim(yarn.beta_fast)));
  const double high = std::min(double(head_dim - 1), std::ceil(corr_dim(yarn.beta_slow)));
  const double span = high == low ? 0.001 : high - low;  // transformers' and llama.cpp's guard
  for (int i = 0; i < half; ++i) {
    const double keep = 1 - std::clamp((i - low) / span, 0.0, 1.0);
    const double f = t.freq[size_t(i)];
    t.freq[size_t(i)] = f / yarn.factor * (1 - keep) + f * keep;
  }
  t.mscale = 0.1 * std::log(yarn.factor) + 1;
  return t;
}

void rope_angles(float* cs, int pos, const RopeTable& t) {
  // Angles in double: at long positions float angle error would dominate.
  for (size_t i = 0; i < t.freq.size(); ++i) {
    const double a = pos * t.freq[i];
    cs[2 * i] = float(std::cos(a) * t.mscale);
    cs[2 * i + 1] = float(std::sin(a) * t.mscale);
  }
}

void rope_angles(float* cs, int head_dim, int pos, float theta) {
  rope_angles(cs, pos, rope_table(head_dim, theta));
}

// Head by head, each head's values in order: the q and k a prompt's
// product wrote are half another thread's (rows are split), and walking
// all heads at each angle touched a line of every head at once, each a miss
// to the other core (RoPE was 3.8% of a two-thread prompt at S's shape
// against 1.3% on one). In order, the prefetcher runs ahead and the loop
// vectorizes; every value gets the same operations as before.
void rope(float* x, int n_heads, int head_dim, const float* cs) {
  for (int h = 0; h < n_heads; ++h) {
    float* p = x + h * head_dim;
    for (int i = 0; i < head_dim / 2; ++i) {
      const float c = cs[2 * i], s = cs[2 * i + 1];
      const float x0 = p[2 * i], x1 = p[2 * i + 1];
      p[2 * i] = x0 * c - x1 * s;
      p[2 * i + 1] = x0 * s + x1 * c;
    }
  }
}

void rope_halves(float* x, int n_heads, int head_dim, const float* cs) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* p = x + h * head_dim;
    for (int i = 0; i < half; ++i) {
      const float c = cs[2 * i], s = cs[2 * i + 1];
      const float x0 = p[i], x1 = p[i + half];
      p[i] = x0 * c - x1 * s;
      p[i + half] = x0 * s + x1 * c;
    }
  }
}

void softmax(float* x, int n) {
  // libm's exp here: the scores are few next to SwiGLU's values (2% of a
  // prompt), and exp_poly's extra ulp moved the bundled model's perplexity
  // by 0.005%.
  const float mx = *std::max_element(x, x + n);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = float(1.0 / sum);
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

void attention(float* out, const float* q, const float* keys, const float* values, int n_pos,
               int n_heads, int n_kv_heads, int head_dim, float* scratch, int h0, int h1) {
  const int kv_dim = n_kv_heads * head_dim;
  const int group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  for (int h = h0; h < (h1 < 0 ? n_heads : h1); ++h) {
    const float* qh = q + h * head_dim;
    const int kvh = h / group;
    for (int t = 0; t < n_pos; ++t)
      scratch[t] = dot(qh, keys + size_t(t) * kv_dim + kvh * head_dim, head_dim) * scale;
    softmax(scratch, n_pos);
    float* o = out + h * head_dim;
    std::fill(o, o + head_dim, 0.0f);
    for (int t = 0; t < n_pos; ++t) {
      const float* v = values + size_t(t) * kv_dim + kvh * head_dim;
      const float a = scratch[t];
      for (int i = 0; i < head_dim; ++i) o[i] += a * v[i];
    }
  }
}

void swiglu(float* gate, const float* up, int n) { silu_glu(gate, up, n); }

void relu2_glu(float* gate, const float* up, int n) { tern::relu2_glu(gate, up, n); }

// Eight interleaved partial sums, added in a fixed order: the compiler
// vectorizes the lanes without reassociating anything, so the result is the
// same on every machine, and a chain of dependent adds (7% of a decode step
// in attention before this) becomes a few vector instructions.
float dot(const float* a, const float* b, int n) {
  float lane[8] = {};
  int i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lane[j] += a[i + j] * b[i + j];
  float s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace tern::ops
