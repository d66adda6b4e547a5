#include <cstring>

#include "tern/quant.h"
#include "tern/quant_group.h"

namespace tern {

void pack_q2_group_row(const int8_t* v, int64_t n, int group, const uint16_t* d, uint8_t* out) {
  const int64_t bb = group_block_bytes(group);
  for (int64_t g = 0; g < n / group; ++g) {
    uint8_t* b = out + g * bb;
    std::memcpy(b, &d[g], 2);
    uint8_t* qs = b + 2;
    std::memset(qs, 0, size_t(group / 4));
    for (int j = 0; j < group; ++j) qs[j / 4] |= uint8_t((v[g * group + j] + 1) << (2 * (j % 4)));
  }
}

void unpack_q2_group_row(const uint8_t* row, int64_t n, int group, int8_t* v, uint16_t* d) {
  const int64_t bb = group_block_bytes(group);
  for (int64_t g = 0; g < n / group; ++g) {
    const uint8_t* b = row + g * bb;
    std::memcpy(&d[g], b, 2);
    for (int j = 0; j < group; ++j) v[g * group + j] = int8_t(q2_group_code(b + 2, j) - 1);
  }
}

void dequantize_q2_group_row(const uint8_t* row, int64_t n, int group, float* out) {
  const int64_t bb = group_block_bytes(group);
  for (int64_t g = 0; g < n / group; ++g) {
    const uint8_t* b = row + g * bb;
    uint16_t h;
    std::memcpy(&h, b, 2);
    const float d = fp16_to_f32(h);
    for (int j = 0; j < group; ++j) out[g * group + j] = float(q2_group_code(b + 2, j) - 1) * d;
  }
}

}  // namespace tern
