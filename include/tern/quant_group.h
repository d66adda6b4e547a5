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

// The two group types tern reads by converting them to PQ2_0 at load
// (exactly: their values are codes 0..2 of PQ2_0 with the same d), so every
// kernel set runs them. Both 128 weights per fp16 d.
// PTQ1_0 (PrismML's fork, type 143): base-3 trits, 5 per byte in qs and 4
// per byte in qh, as ggml's TQ1_0 at 128 weights. Trit n (0 the most
// significant) of byte b is ((uint8_t)(b * 3^n) * 3) >> 8, the value
// (t - 1) * d; element e < 80 is trit e / 16 of qs[e % 16], e < 120 trit
// (e - 80) / 8 of qs[16 + (e - 80) % 8], the last 8 trit (e - 120) / 2 of
// qh[(e - 120) % 2]. Every byte decodes to trits 0..2.
struct BlockPTQ1_0 {
  uint8_t qs[24];
  uint8_t qh[2];
  uint16_t d;  // fp16, last
};
static_assert(sizeof(BlockPTQ1_0) == 28, "PTQ1_0 block must be 28 bytes");
// Q1_0 (ggml type 41; PrismML's binary Bonsai): bit j % 8 of qs[j / 8] set
// is +d, clear is -d.
struct BlockQ1_0 {
  uint16_t d;  // fp16
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ1_0) == 18, "Q1_0 block must be 18 bytes");

constexpr bool converts_to_pq2_0(gguf::TensorType t) {
  return t == gguf::TensorType::PTQ1_0 || t == gguf::TensorType::Q1_0;
}
// The 128 PQ2_0 codes (0, 1, 2) of one block of a converted type.
void ptq1_0_codes(const BlockPTQ1_0& b, uint8_t codes[128]);
void q1_0_codes(const BlockQ1_0& b, uint8_t codes[128]);
// A row of n weights (n % 128 == 0) of PTQ1_0 or Q1_0 as PQ2_0 blocks.
void convert_row_to_pq2_0(gguf::TensorType t, const uint8_t* row, int64_t n, uint8_t* out);

// Weights per group of a group-scaled type the kernels run (Q2_0 64, PQ2_0
// 128), 0 for others.
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
