#include <algorithm>
#include <cmath>
#include <string>

#include "tern/error.h"
#include "tern/quant.h"

namespace tern {

float quantize_act_i8(const float* x, int64_t n, int8_t* q) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float s = 127.0f / std::max(amax, 1e-5f);
  // nearbyint rounds half to even under the default mode, like torch.round.
  // fmax/fmin, not clamp: they map NaN (an overflowed activation) to a
  // bound, where clamp passes it to a float-to-int cast, which is undefined.
  for (int64_t i = 0; i < n; ++i)
    q[i] = int8_t(std::fmin(std::fmax(std::nearbyint(x[i] * s), -128.0f), 127.0f));
  return s;
}

float quantize_act_digits(const float* x, int64_t n, int digits, int8_t* q, int64_t stride) {
  if (digits < 2 || digits > kMaxActDigits) throw Error("quantize_act_digits: " + std::to_string(digits) + " digits");
  const float top = float(act_digits_max(digits));  // exact: below 2^24
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  // The floor keeps s finite (8290687 / 1e-30 < FLT_MAX) for a vector of
  // denormals or zeros.
  const float s = top / std::max(amax, 1e-30f);
  for (int64_t i = 0; i < n; ++i) {
    int v = int(std::fmin(std::fmax(std::nearbyint(x[i] * s), -top), top));
    // Least significant digit first: the residue of v nearest zero.
    for (int j = digits - 1; j >= 0; --j) {
      int r = v % 255;  // C++ truncates: r has v's sign
      if (r > 127) r -= 255;
      else if (r < -127) r += 255;
      q[j * stride + i] = int8_t(r);
      v = (v - r) / 255;
    }
  }
  return s;
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
