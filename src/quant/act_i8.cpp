#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

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

// u / 255 for any 32-bit u, as a multiply and shift (what GCC emits for
// the division in hot code), written out so no code layout turns it into
// a div instruction.
inline uint32_t div255(uint32_t u) { return uint32_t((uint64_t(u) * 0x80808081ull) >> 39); }

// sum (x_i - v_i / s)^2 and sum x_i^2 over i < n in double, where
// elem(i) returns x_i and v_i, in the one order quantize_act_wide and
// act_digits_rel_error share (so they decide alike): elements in fours,
// ((0 + 1) + (2 + 3)) added to the running sums, the last n % 4 one at a
// time. One add per element in a single chain held quantize_act_wide to
// that chain's latency; v / s is v times 1 / s.
template <class Elem>
void sum_errors(int64_t n, float s, Elem&& elem, double& e2, double& x2) {
  const double inv_s = 1.0 / double(s);
  const auto sq = [&](int64_t i, double& xx) {
    const auto [x, v] = elem(i);
    xx = x * x;
    const double e = x - v * inv_s;
    return e * e;
  };
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    double a[4], b[4];
    for (int k = 0; k < 4; ++k) a[k] = sq(i + k, b[k]);
    e2 += (a[0] + a[1]) + (a[2] + a[3]);
    x2 += (b[0] + b[1]) + (b[2] + b[3]);
  }
  for (; i < n; ++i) {
    double b;
    e2 += sq(i, b);
    x2 += b;
  }
}

// x[i] * s rounded to D digits' range and split into them (see below).
template <int D>
inline double round_split(float x, float s, int8_t* q, int64_t i, int64_t stride) {
  constexpr int64_t top = act_digits_max(D);
  // Adding and subtracting 1.5 * 2^52 rounds a double below 2^51 to an
  // integer, half to even (the default rounding mode), as nearbyint does.
  constexpr double kRound = 6755399441055744.0;
  double r = (double(x * s) + kRound) - kRound;
  // The bounds as branches marked unlikely: GCC 12 took the in-range
  // case for the rare one, moved it out of line and, optimizing that
  // "cold" code for size, divided by 255 with two div instructions per
  // element (a third of a Bonsai decode step's quantization).
  if (!(r >= -double(top))) [[unlikely]]
    r = -double(top);  // NaN fails the test: the lower bound
  else if (r > double(top)) [[unlikely]]
    r = double(top);
  // v + top has the plain base-255 digits q_j + 127.
  auto u = uint32_t(int32_t(r) + int32_t(top));
  for (int j = D - 1; j >= 0; --j) {
    const uint32_t d = div255(u);
    q[j * stride + i] = int8_t(int(u - 255u * d) - 127);
    u = d;
  }
  return r;
}

// The rounding and digit split of quantize_act_digits, unrolled per digit
// count: nearbyint and fmin/fmax are library calls on baseline x86-64, and
// they took 6% of a TriLM-shaped decode token. With kError it also sums
// the error as act_digits_rel_error does (sum_errors), in the same pass.
template <int D, bool kError>
void split_digits(const float* x, int64_t n, float s, int8_t* q, int64_t stride, double* e2, double* x2) {
  if constexpr (kError) {
    sum_errors(n, s, [&](int64_t i) { return std::pair(double(x[i]), round_split<D>(x[i], s, q, i, stride)); }, *e2, *x2);
  } else {
    for (int64_t i = 0; i < n; ++i) round_split<D>(x[i], s, q, i, stride);
  }
}

// max |x_i|, NaNs passed over (std::max keeps its first argument). Eight
// running maxima, not one: a maximum is exact in any order, and one chain
// of maxss took a fifth of quantize_act_wide.
float abs_max(const float* x, int64_t n) {
  float m[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) m[k] = std::max(m[k], std::fabs(x[i + k]));
  for (; i < n; ++i) m[0] = std::max(m[0], std::fabs(x[i]));
  float amax = 0;
  for (float v : m) amax = std::max(amax, v);
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
  sum_errors(n, s, [&](int64_t i) {
    int64_t v = 0;
    for (int j = 0; j < digits; ++j) v = 255 * v + q[j * stride + i];
    return std::pair(double(x[i]), double(v));
  }, e2, x2);
  return x2 > 0 ? std::sqrt(e2 / x2) : 0.0;
}

}  // namespace tern
