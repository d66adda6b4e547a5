#include "tern/quant.h"

namespace tern {
namespace {

// Group j's 6-bit scale and min: groups 0-3 in the low 6 bits of bytes
// j and j + 4; groups 4-7 split into a nibble of byte j + 4 and the top two
// bits of bytes j - 4 (scale) and j (min).
void scale_min(const uint8_t* q, int j, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

}  // namespace

void dequantize_q4_k_row(const BlockQ4_K* row, int64_t n, float* out) {
  for (int64_t b = 0; b < n / QK_K; ++b) {
    const BlockQ4_K& blk = row[b];
    const float d = fp16_to_f32(blk.d), dmin = fp16_to_f32(blk.dmin);
    float* y = out + b * QK_K;
    for (int j = 0; j < 4; ++j) {  // 64 values: a group in low nibbles, the next in high
      int sc, m;
      scale_min(blk.scales, 2 * j, sc, m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      scale_min(blk.scales, 2 * j + 1, sc, m);
      const float d2 = d * float(sc), m2 = dmin * float(m);
      const uint8_t* q = blk.qs + 32 * j;
      for (int l = 0; l < 32; ++l) y[64 * j + l] = d1 * float(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) y[64 * j + 32 + l] = d2 * float(q[l] >> 4) - m2;
    }
  }
}

}  // namespace tern
