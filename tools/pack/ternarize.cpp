#include "pack/ternarize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tern/quant.h"

namespace tern::pack {

float absmean_scale(const float* w, uint64_t n) {
  double sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += std::fabs(static_cast<double>(w[i]));
  float mean = n ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
  return std::max(mean, 1e-5f);
}

void absmean_trits(const float* w, uint64_t n, float s, int8_t* trits) {
  const float inv = 1.0f / s;
  for (uint64_t i = 0; i < n; ++i) {
    // nearbyint honours the default round-to-nearest-even mode, as torch.round.
    float r = std::nearbyint(w[i] * inv);
    trits[i] = static_cast<int8_t>(std::clamp(r, -1.0f, 1.0f));
  }
}

std::optional<float> exact_row_scale(const float* row, uint64_t n, float* a, float* b) {
  float s = 0;
  for (uint64_t i = 0; i < n; ++i) {
    float m = std::fabs(row[i]);
    if (m == 0) continue;
    if (s == 0 && !std::isnan(m)) {
      s = m;
    } else if (m != s) {  // also catches NaN
      *a = s == 0 ? m : s;
      *b = m;
      return std::nullopt;
    }
  }
  return s;
}

void sign_trits(const float* w, uint64_t n, int8_t* trits) {
  for (uint64_t i = 0; i < n; ++i) trits[i] = static_cast<int8_t>((w[i] > 0) - (w[i] < 0));
}

std::vector<uint32_t> qk_row_permutation(uint32_t rows, uint32_t n_head) {
  const uint32_t D = rows / n_head, half = D / 2;
  std::vector<uint32_t> src(rows);
  for (uint32_t h = 0; h < n_head; ++h)
    for (uint32_t i = 0; i < half; ++i)
      for (uint32_t j = 0; j < 2; ++j) src[h * D + 2 * i + j] = h * D + j * half + i;
  return src;
}

bool fits_f16_exactly(const float* w, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    float back = fp16_to_f32(f32_to_fp16(w[i]));
    // Compare bits: -0.0 and NaN payloads must survive too.
    if (std::memcmp(&back, &w[i], 4) != 0) return false;
  }
  return true;
}

std::string fmt_float(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace tern::pack
