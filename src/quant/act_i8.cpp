#include <algorithm>
#include <cmath>
#include <string>

#include "tern/error.h"
#include "tern/quant.h"

namespace tern {

float act_i8_scale(float amax) { return 127.0f / std::max(amax, 1e-5f); }

float quantize_act_i8(const float* x, int64_t n, int8_t* q) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float s = act_i8_scale(amax);
  // nearbyint rounds half to even under the default mode, like torch.round.
  // fmax/fmin, not clamp: they map NaN (an overflowed activation) to a
  // bound, where clamp passes it to a float-to-int cast, which is undefined.
  for (int64_t i = 0; i < n; ++i)
    q[i] = int8_t(std::fmin(std::fmax(std::nearbyint(x[i] * s), -128.0f), 127.0f));
  return s;
}

namespace {

// The rounding and digit split of quantize_act_digits, unrolled per digit
// count: nearbyint and fmin/fmax are library calls on baseline x86-64, and
// they took 6% of a TriLM-shaped decode token. With kError it also sums
// (x - v / s)^2 and x^2 in double, as act_digits_rel_error does, in the
// same pass.
template <int D, bool kError>
void split_digits(const float* x, int64_t n, float s, int8_t* q, int64_t stride, double* e2, double* x2) {
  constexpr int64_t top = act_digits_max(D);
  // Adding and subtracting 1.5 * 2^52 rounds a double below 2^51 to an
  // integer, half to even (the default rounding mode), as nearbyint does.
  constexpr double kRound = 6755399441055744.0;
  for (int64_t i = 0; i < n; ++i) {
    double r = (double(x[i] * s) + kRound) - kRound;
    r = r > double(top) ? double(top) : r;
    r = r >= -double(top) ? r : -double(top);  // NaN fails the test: the lower bound
    // v + top has the plain base-255 digits q_j + 127.
    auto u = uint32_t(int32_t(r) + int32_t(top));
    for (int j = D - 1; j >= 0; --j) {
      q[j * stride + i] = int8_t(int(u % 255u) - 127);
      u /= 255u;
    }
    if constexpr (kError) {
      const double e = double(x[i]) - r / double(s);
      *e2 += e * e;
      *x2 += double(x[i]) * double(x[i]);
    }
  }
}

float abs_max(const float* x, int64_t n) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  return amax;
}

// The floor keeps s finite (8290687 / 1e-30 < FLT_MAX) for a vector of
// denormals or zeros.
float digits_scale(int digits, float amax) { return float(act_digits_max(digits)) / std::max(amax, 1e-30f); }

}  // namespace

float quantize_act_digits(const float* x, int64_t n, int digits, int8_t* q, int64_t stride) {
  if (digits < 2 || digits > kMaxActDigits) throw Error("quantize_act_digits: " + std::to_string(digits) + " digits");
  const float s = digits_scale(digits, abs_max(x, n));
  if (digits == 2) split_digits<2, false>(x, n, s, q, stride, nullptr, nullptr);
  else split_digits<3, false>(x, n, s, q, stride, nullptr, nullptr);
  return s;
}

float quantize_act_wide(const float* x, int64_t n, double max_rel_error, int8_t* q, int64_t stride, int* digits) {
  const float amax = abs_max(x, n);
  const float s2 = digits_scale(2, amax);
  double e2 = 0, x2 = 0;
  split_digits<2, true>(x, n, s2, q, stride, &e2, &x2);
  if (!((x2 > 0 ? std::sqrt(e2 / x2) : 0.0) > max_rel_error)) {
    *digits = 2;
    return s2;
  }
  const float s3 = digits_scale(3, amax);
  split_digits<3, false>(x, n, s3, q, stride, nullptr, nullptr);
  *digits = 3;
  return s3;
}

double act_digits_rel_error(const float* x, int64_t n, int digits, const int8_t* q, int64_t stride,
                            float s) {
  double e2 = 0, x2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = 0;
    for (int j = 0; j < digits; ++j) v = 255 * v + q[j * stride + i];
    const double e = double(x[i]) - double(v) / double(s);
    e2 += e * e;
    x2 += double(x[i]) * double(x[i]);
  }
  return x2 > 0 ? std::sqrt(e2 / x2) : 0.0;
}

}  // namespace tern
