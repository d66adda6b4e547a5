#include <cstring>
#include <string>

#include "tern/error.h"

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

namespace {

// Trit n (0 the most significant) of a byte holding ceil(v * 256 / 243):
// multiplying by 3^n (mod 256) brings trit n to the top.
int trit(uint8_t b, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const uint8_t q = uint8_t(b * kPow3[n]);
  return (int(q) * 3) >> 8;
}

}  // namespace

void ptq1_0_codes(const BlockPTQ1_0& b, uint8_t codes[128]) {
  for (int e = 0; e < 80; ++e) codes[e] = uint8_t(trit(b.qs[e % 16], e / 16));
  for (int e = 80; e < 120; ++e) codes[e] = uint8_t(trit(b.qs[16 + (e - 80) % 8], (e - 80) / 8));
  for (int e = 120; e < 128; ++e) codes[e] = uint8_t(trit(b.qh[(e - 120) % 2], (e - 120) / 2));
}

void q1_0_codes(const BlockQ1_0& b, uint8_t codes[128]) {
  for (int j = 0; j < 128; ++j) codes[j] = ((b.qs[j / 8] >> (j % 8)) & 1) ? 2 : 0;
}

void convert_row_to_pq2_0(gguf::TensorType t, const uint8_t* row, int64_t n, uint8_t* out) {
  if (!converts_to_pq2_0(t)) throw Error(std::string("convert_row_to_pq2_0: ") + gguf::traits(t).name);
  uint8_t codes[128];
  for (int64_t g = 0; g < n / 128; ++g) {
    BlockPQ2_0 o{};
    if (t == gguf::TensorType::PTQ1_0) {
      BlockPTQ1_0 b;
      std::memcpy(&b, row + g * int64_t(sizeof b), sizeof b);
      ptq1_0_codes(b, codes);
      o.d = b.d;
    } else {
      BlockQ1_0 b;
      std::memcpy(&b, row + g * int64_t(sizeof b), sizeof b);
      q1_0_codes(b, codes);
      o.d = b.d;
    }
    for (int j = 0; j < 128; ++j) o.qs[j / 4] |= uint8_t(codes[j] << (2 * (j % 4)));
    std::memcpy(out + g * int64_t(sizeof o), &o, sizeof o);
  }
}

}  // namespace tern
