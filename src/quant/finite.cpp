#include <algorithm>
#include <cstddef>
#include <cstring>

#include "tern/error.h"
#include "tern/quant.h"
#include "tern/quant_group.h"

namespace tern {
namespace {

// All-ones exponent: infinity or NaN. Blocks are tested with an OR of
// flags and no early exit, which the vectorizer needs (a memcpy of a whole
// block into a buffer first, as this once did, left a scalar loop behind a
// rep movs at about 2 bytes a cycle: the scan of a 0.66 GB head was a
// tenth of a second at load).
template <class U, U kExp>
int64_t first_all_ones_exponent(const uint8_t* data, int64_t n) {
  constexpr int64_t kBlock = 1024;
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t m = std::min(kBlock, n - i0);
    const uint8_t* p = data + i0 * int64_t(sizeof(U));
    unsigned any = 0;
    for (int64_t i = 0; i < m; ++i) {
      U v;
      std::memcpy(&v, p + i * int64_t(sizeof(U)), sizeof v);
      any |= unsigned((v & kExp) == kExp);
    }
    if (!any) continue;
    for (int64_t i = 0; i < m; ++i) {
      U v;
      std::memcpy(&v, p + i * int64_t(sizeof(U)), sizeof v);
      if ((v & kExp) == kExp) return i0 + i;
    }
  }
  return -1;
}

}  // namespace

int64_t find_nonfinite(gguf::TensorType t, const uint8_t* data, int64_t n) {
  using gguf::TensorType;
  switch (t) {
    case TensorType::F32:
      return first_all_ones_exponent<uint32_t, 0x7f800000u>(data, n);
    case TensorType::F16:
      return first_all_ones_exponent<uint16_t, 0x7c00u>(data, n);
    case TensorType::BF16:
      return first_all_ones_exponent<uint16_t, 0x7f80u>(data, n);
    case TensorType::Q8_0:
      for (int64_t b = 0; b < n / QK8_0; ++b) {
        uint16_t d;
        std::memcpy(&d, data + b * int64_t(sizeof(BlockQ8_0)), sizeof d);
        if ((d & 0x7c00u) == 0x7c00u) return b * QK8_0;
      }
      return -1;
    case TensorType::Q4_K:  // d and dmin, the first two fp16 of a block
      for (int64_t b = 0; b < n / QK_K; ++b) {
        uint16_t h[2];
        std::memcpy(h, data + b * int64_t(sizeof(BlockQ4_K)), sizeof h);
        if ((h[0] & 0x7c00u) == 0x7c00u || (h[1] & 0x7c00u) == 0x7c00u) return b * QK_K;
      }
      return -1;
    case TensorType::Q6_K:
      for (int64_t b = 0; b < n / QK_K; ++b) {
        uint16_t d;
        std::memcpy(&d, data + b * int64_t(sizeof(BlockQ6_K)) + offsetof(BlockQ6_K, d), sizeof d);
        if ((d & 0x7c00u) == 0x7c00u) return b * QK_K;
      }
      return -1;
    case TensorType::PQ2_0:  // a scale of its own per group, first in the block
    case TensorType::Q2_0: {
      const int g = group_size(t);
      for (int64_t b = 0; b < n / g; ++b) {
        uint16_t d;
        std::memcpy(&d, data + b * group_block_bytes(g), sizeof d);
        if ((d & 0x7c00u) == 0x7c00u) return b * g;
      }
      return -1;
    }
    case TensorType::PTQ1_0:  // d last in its 28 bytes
    case TensorType::Q1_0: {  // d first in its 18 bytes
      const bool ptq = t == TensorType::PTQ1_0;
      const int64_t bb = ptq ? int64_t(sizeof(BlockPTQ1_0)) : int64_t(sizeof(BlockQ1_0));
      const size_t at = ptq ? offsetof(BlockPTQ1_0, d) : offsetof(BlockQ1_0, d);
      for (int64_t b = 0; b < n / 128; ++b) {
        uint16_t d;
        std::memcpy(&d, data + b * bb + int64_t(at), sizeof d);
        if ((d & 0x7c00u) == 0x7c00u) return b * 128;
      }
      return -1;
    }
    default:
      throw Error(std::string("find_nonfinite: ") + gguf::traits(t).name + " is not a float type");
  }
}

}  // namespace tern
