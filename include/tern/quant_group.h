// Group-scaled 2-bit blocks: one fp16 scale per group of weights along a
// row, as PrismML's Ternary Bonsai stores its weights. Bit-exact with
// ggml-common.h's block_q2_0, which mainline llama.cpp defines with 64
// weights per block (Q2_0, type 42) and PrismML's fork with 128 (PQ2_0,
// type 142; its April 2026 files declare 42, see TensorInfo::declared_q2_0).
//
// Weight j of a block has the 2-bit code c in bits 2(j % 4) of qs[j / 4]
// and the value (c - 1) * d: codes 0, 1, 2 are -d, 0, +d, and code 3 is
// +2d (a general 2-bit format; tern runs it exactly, never as +1).
#pragma once
#include <cstdint>

#include "tern/gguf.h"

namespace tern {

template <int N>
struct BlockQ2Group {
  uint16_t d;  // fp16
  uint8_t qs[N / 4];
};
using BlockQ2_0 = BlockQ2Group<64>;
using BlockPQ2_0 = BlockQ2Group<128>;
static_assert(sizeof(BlockQ2_0) == 18, "Q2_0 block must be 18 bytes");
static_assert(sizeof(BlockPQ2_0) == 34, "PQ2_0 block must be 34 bytes");

// Weights per group of a group-scaled type (Q2_0 64, PQ2_0 128), 0 for others.
constexpr int group_size(gguf::TensorType t) {
  return t == gguf::TensorType::Q2_0 ? 64 : t == gguf::TensorType::PQ2_0 ? 128 : 0;
}
constexpr bool is_group_type(gguf::TensorType t) { return group_size(t) != 0; }

// Bytes of one block of a group type: 2 + group / 4.
constexpr int64_t group_block_bytes(int group) { return 2 + group / 4; }

// The code of weight j of a block (qs: the block's codes).
inline int q2_group_code(const uint8_t* qs, int j) { return (qs[j / 4] >> (2 * (j % 4))) & 3; }

// One row of n weights (n % group == 0) as blocks: weight k is v[k] * d[k
// / group], v[k] in {-1, 0, 1, 2}, d the fp16 scales of the row's groups.
void pack_q2_group_row(const int8_t* v, int64_t n, int group, const uint16_t* d, uint8_t* out);
// The row back: v[k] = code - 1, d[g] the groups' fp16 scales.
void unpack_q2_group_row(const uint8_t* row, int64_t n, int group, int8_t* v, uint16_t* d);
// The row's values as float, each exactly (c - 1) * fp16(d).
void dequantize_q2_group_row(const uint8_t* row, int64_t n, int group, float* out);

}  // namespace tern
