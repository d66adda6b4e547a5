#include <bit>
#include <cmath>
#include <string>

#include "tern/error.h"
#include "tern/quant.h"

namespace tern {

uint16_t f32_to_bf16_rne(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);  // keep it a (quiet) NaN
  return uint16_t((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

void quantize_q8_0_row(const float* x, int64_t n, BlockQ8_0* out) {
  if (n <= 0 || n % QK8_0 != 0)
    throw Error("Q8_0 row of " + std::to_string(n) + " values is not a positive multiple of " +
                std::to_string(QK8_0));
  for (int64_t b = 0; b < n / QK8_0; ++b) {
    const float* v = x + b * QK8_0;
    float amax = 0;
    for (int j = 0; j < QK8_0; ++j) {
      if (!std::isfinite(v[j]))
        throw Error("Q8_0: non-finite value at column " + std::to_string(b * QK8_0 + j));
      amax = std::fmax(amax, std::fabs(v[j]));
    }
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    out[b].d = f32_to_fp16(d);
    for (int j = 0; j < QK8_0; ++j) out[b].qs[j] = int8_t(std::round(v[j] * id));
  }
}

namespace {

// One block of activations: d = max|x| / 127, q = round(x / d) in
// [-127, 127], NaN as 0. Returns d.
float quantize_act_block(const float* v, int n, int8_t* qs) {
  float amax = 0;
  for (int j = 0; j < n; ++j) amax = std::fmax(amax, std::fabs(v[j]));
  const float d = amax / 127.0f;
  const float id = d != 0 && std::isfinite(d) ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; ++j) {
    const float q = std::round(v[j] * id);
    qs[j] = std::isnan(q) ? 0 : int8_t(std::fmax(-127.0f, std::fmin(127.0f, q)));
  }
  return d;
}

}  // namespace

void quantize_act_q8(const float* x, int64_t n, ActQ8* out) {
  for (int64_t b = 0; b < n / QK8_0; ++b) out[b].d = quantize_act_block(x + b * QK8_0, QK8_0, out[b].qs);
}

void quantize_act_q8k(const float* x, int64_t n, ActQ8K* out) {
  for (int64_t b = 0; b < n / QK_K; ++b) {
    out[b].d = quantize_act_block(x + b * QK_K, QK_K, out[b].qs);
    for (int g = 0; g < QK_K / 16; ++g) {
      int sum = 0;
      for (int j = 16 * g; j < 16 * g + 16; ++j) sum += out[b].qs[j];
      out[b].bsums[g] = int16_t(sum);
    }
  }
}

}  // namespace tern
