#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "tern/error.h"
#include "tern/quant.h"

namespace tern {
namespace {

// Round half to even, as llama.cpp's nearest_int (a float add of 1.5 * 2^23)
// rounds every value the quantizer meets (|v| < 2^22).
int nearest_int(float v) { return int(std::nearbyint(v)); }

// The scale of one group of 16 values for codes in [-32, 31]: the first
// guess from the largest magnitude, then 18 neighbouring steps, keeping the
// one that minimizes the x^2-weighted squared error; codes + 32 into L.
// llama.cpp's make_qx_quants with rmse_type 1 and no importance weights.
float group_scale(const float* x, uint8_t* L) {
  constexpr int n = 16, nmax = 32;
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax < 1e-15f) {
    std::memset(L, 0, n);
    return 0;
  }
  auto code = [&](float iscale, int i) { return std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))); };
  float iscale = -nmax / max, sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = code(iscale, i);
    L[i] = uint8_t(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(step)) / max;
    sumlx = suml2 = 0;
    uint8_t trial[n];  // this step's codes, kept if it wins
    for (int i = 0; i < n; ++i) {
      const int l = code(iscale, i);
      trial[i] = uint8_t(l + nmax);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * float(l);
      suml2 += w * float(l) * float(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      std::memcpy(L, trial, n);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

}  // namespace

void quantize_q6_k_row(const float* x, int64_t n, BlockQ6_K* out) {
  if (n <= 0 || n % QK_K != 0)
    throw Error("Q6_K row of " + std::to_string(n) + " values is not a positive multiple of " +
                std::to_string(QK_K));
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) throw Error("Q6_K: non-finite value at column " + std::to_string(i));
  for (int64_t b = 0; b < n / QK_K; ++b) {
    const float* v = x + b * QK_K;
    BlockQ6_K& blk = out[b];
    uint8_t L[QK_K];
    float scales[QK_K / 16];
    float max_scale = 0, max_abs_scale = 0;
    for (int g = 0; g < QK_K / 16; ++g) {
      scales[g] = group_scale(v + 16 * g, L + 16 * g);
      if (std::fabs(scales[g]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[g]);
        max_scale = scales[g];
      }
    }
    std::memset(&blk, 0, sizeof blk);
    if (max_abs_scale < 1e-15f) continue;  // all zeros: d = 0, every code 0 - 32 times 0
    const float iscale = -128.0f / max_scale;
    blk.d = f32_to_fp16(1 / iscale);
    for (int g = 0; g < QK_K / 16; ++g) blk.scales[g] = int8_t(std::min(127, nearest_int(iscale * scales[g])));
    for (int g = 0; g < QK_K / 16; ++g) {
      const float d = fp16_to_f32(blk.d) * float(blk.scales[g]);
      if (d == 0) continue;
      for (int i = 0; i < 16; ++i)
        L[16 * g + i] = uint8_t(std::max(-32, std::min(31, nearest_int(v[16 * g + i] / d))) + 32);
    }
    for (int i = 0; i < QK_K; ++i) {
      const int half = i / 128, j = (i % 128) / 32, l = i % 32;
      uint8_t& lo = blk.ql[64 * half + l + 32 * (j & 1)];
      lo |= uint8_t((L[i] & 0xF) << (j < 2 ? 0 : 4));
      blk.qh[32 * half + l] |= uint8_t((L[i] >> 4) << (2 * j));
    }
  }
}

void dequantize_q6_k_row(const BlockQ6_K* row, int64_t n, float* out) {
  for (int64_t b = 0; b < n / QK_K; ++b) {
    const BlockQ6_K& blk = row[b];
    const float d = fp16_to_f32(blk.d);
    float* y = out + b * QK_K;
    for (int i = 0; i < QK_K; ++i) y[i] = d * float(int(blk.scales[i / 16]) * q6_k_code(blk, i));
  }
}

std::string dense_type_names() {
  std::string s;
  const size_t n = std::size(kDenseTypes);
  for (size_t i = 0; i < n; ++i) {
    if (i) s += i + 1 == n ? " or " : ", ";
    s += gguf::traits(kDenseTypes[i]).name;
  }
  return s;
}

}  // namespace tern
