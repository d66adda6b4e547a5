#include <algorithm>
#include <cmath>

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

}  // namespace tern
