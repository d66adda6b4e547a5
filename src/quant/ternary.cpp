// TQ2_0 / TQ1_0 packing, bit-exact with llama.cpp (quantize_row_tq*_ref and
// dequantize_row_tq* in ggml-quants.c). The layouts are described in quant.h.
//
// Everything works on raw block bytes: row data comes straight from a mapped
// file, so it is never accessed through BlockTQ* lvalues (no alignment or
// aliasing assumptions); the struct overloads just view their blocks as bytes.
// Block sizes are computed here rather than taken from gguf::traits so this
// file stands on its own.
#include <bit>
#include <cstring>
#include <string>

#include "tern/error.h"
#include "tern/quant.h"

namespace tern {
namespace {

static_assert(std::endian::native == std::endian::little,
              "GGUF block scales are little-endian; big-endian hosts need byte swaps");

constexpr int64_t kTQ2Bytes = sizeof(BlockTQ2);  // 64 qs + 2 d
constexpr int64_t kTQ1Bytes = sizeof(BlockTQ1);  // 48 qs + 4 qh + 2 d
constexpr int kTQ2D = 64;                        // offset of d in a TQ2_0 block
constexpr int kTQ1Qh = 48, kTQ1D = 52;           // offsets of qh and d in TQ1_0

constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};

void check_k(int64_t K) {
  if (K <= 0 || K % QK != 0)
    throw Error("ternary row of " + std::to_string(K) + " elements: length must be a positive "
                "multiple of " + std::to_string(QK));
}

void check_trits(const int8_t* t, int64_t K) {
  for (int64_t c = 0; c < K; ++c)
    if (t[c] < -1 || t[c] > 1)
      throw Error("non-ternary value " + std::to_string(int(t[c])) + " at column " +
                  std::to_string(c));
}

uint8_t code(int8_t trit) { return uint8_t(trit + 1); }

// v is a base-3 number of five codes (< 243); the byte is ceil(v * 256 / 243).
uint8_t to_fraction(unsigned v) { return uint8_t((v * 256 + 242) / 243); }

// Code n (0 = most significant) of a base-3 fraction byte. The product is
// deliberately truncated to 8 bits: that discards codes 0..n-1.
int8_t trit_of(uint8_t byte, int n) {
  const uint8_t shifted = uint8_t(byte * kPow3[n]);
  return int8_t(int((unsigned(shifted) * 3) >> 8) - 1);
}

void pack_tq2_block(const int8_t* t, uint16_t d, uint8_t* b) {
  for (int h = 0; h < 2; ++h)
    for (int m = 0; m < 32; ++m) {
      unsigned q = 0;
      for (int n = 0; n < 4; ++n) q |= unsigned(code(t[128 * h + 32 * n + m])) << (2 * n);
      b[32 * h + m] = uint8_t(q);
    }
  std::memcpy(b + kTQ2D, &d, 2);
}

void unpack_tq2_block(const uint8_t* b, int8_t* t) {
  for (int h = 0; h < 2; ++h)
    for (int n = 0; n < 4; ++n)
      for (int m = 0; m < 32; ++m)
        t[128 * h + 32 * n + m] = int8_t(((b[32 * h + m] >> (2 * n)) & 3) - 1);
}

// Five codes at t[0], t[stride], ..., first one most significant.
uint8_t pack5(const int8_t* t, int stride) {
  unsigned v = 0;
  for (int n = 0; n < 5; ++n) v = v * 3 + code(t[n * stride]);
  return to_fraction(v);
}

void pack_tq1_block(const int8_t* t, uint16_t d, uint8_t* b) {
  for (int m = 0; m < 32; ++m) b[m] = pack5(t + m, 32);
  for (int m = 0; m < 16; ++m) b[32 + m] = pack5(t + 160 + m, 16);
  for (int j = 0; j < 4; ++j) {
    unsigned v = 0;
    for (int n = 0; n < 4; ++n) v = v * 3 + code(t[240 + j + 4 * n]);
    b[kTQ1Qh + j] = to_fraction(v * 3);  // the fifth (least significant) trit is 0
  }
  std::memcpy(b + kTQ1D, &d, 2);
}

void unpack_tq1_block(const uint8_t* b, int8_t* t) {
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m) t[m + 32 * n] = trit_of(b[m], n);
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m) t[160 + m + 16 * n] = trit_of(b[32 + m], n);
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) t[240 + j + 4 * n] = trit_of(b[kTQ1Qh + j], n);
}

void pack_tq2_bytes(const int8_t* trits, int64_t K, uint16_t d, uint8_t* out) {
  check_k(K);
  check_trits(trits, K);
  for (int64_t i = 0; i < K / QK; ++i) pack_tq2_block(trits + i * QK, d, out + i * kTQ2Bytes);
}

void pack_tq1_bytes(const int8_t* trits, int64_t K, uint16_t d, uint8_t* out) {
  check_k(K);
  check_trits(trits, K);
  for (int64_t i = 0; i < K / QK; ++i) pack_tq1_block(trits + i * QK, d, out + i * kTQ1Bytes);
}

void unpack_tq2_bytes(const uint8_t* in, int64_t K, int8_t* trits) {
  check_k(K);
  for (int64_t i = 0; i < K / QK; ++i) unpack_tq2_block(in + i * kTQ2Bytes, trits + i * QK);
}

void unpack_tq1_bytes(const uint8_t* in, int64_t K, int8_t* trits) {
  check_k(K);
  for (int64_t i = 0; i < K / QK; ++i) unpack_tq1_block(in + i * kTQ1Bytes, trits + i * QK);
}

[[noreturn]] void not_ternary(gguf::TensorType t) {
  throw Error("tensor type " + std::to_string(uint32_t(t)) + " is not a ternary type (TQ1_0 or TQ2_0)");
}

}  // namespace

void pack_tq2_row(const int8_t* trits, int64_t K, uint16_t d, BlockTQ2* out) {
  pack_tq2_bytes(trits, K, d, reinterpret_cast<uint8_t*>(out));
}

void pack_tq1_row(const int8_t* trits, int64_t K, uint16_t d, BlockTQ1* out) {
  pack_tq1_bytes(trits, K, d, reinterpret_cast<uint8_t*>(out));
}

void unpack_tq2_row(const BlockTQ2* in, int64_t K, int8_t* trits) {
  unpack_tq2_bytes(reinterpret_cast<const uint8_t*>(in), K, trits);
}

void unpack_tq1_row(const BlockTQ1* in, int64_t K, int8_t* trits) {
  unpack_tq1_bytes(reinterpret_cast<const uint8_t*>(in), K, trits);
}

bool is_ternary_type(gguf::TensorType t) {
  return t == gguf::TensorType::TQ1_0 || t == gguf::TensorType::TQ2_0;
}

Ternary ternary_format(gguf::TensorType t) {
  if (t == gguf::TensorType::TQ1_0) return Ternary::TQ1;
  if (t == gguf::TensorType::TQ2_0) return Ternary::TQ2;
  not_ternary(t);
}

int64_t ternary_row_bytes(gguf::TensorType t, int64_t K) {
  const Ternary f = ternary_format(t);
  check_k(K);
  switch (f) {
    case Ternary::TQ1: return K / QK * kTQ1Bytes;
    case Ternary::TQ2: return K / QK * kTQ2Bytes;
  }
  not_ternary(t);
}

void pack_ternary_row(gguf::TensorType t, const int8_t* trits, int64_t K, uint16_t d,
                      uint8_t* out) {
  switch (ternary_format(t)) {
    case Ternary::TQ1: return pack_tq1_bytes(trits, K, d, out);
    case Ternary::TQ2: return pack_tq2_bytes(trits, K, d, out);
  }
}

void unpack_ternary_row(gguf::TensorType t, const uint8_t* in, int64_t K, int8_t* trits) {
  switch (ternary_format(t)) {
    case Ternary::TQ1: return unpack_tq1_bytes(in, K, trits);
    case Ternary::TQ2: return unpack_tq2_bytes(in, K, trits);
  }
}

void row_block_scales(gguf::TensorType t, const uint8_t* in, int64_t K, uint16_t* d) {
  const int64_t block = ternary_row_bytes(t, QK);
  int offset = 0;
  switch (ternary_format(t)) {
    case Ternary::TQ1: offset = kTQ1D; break;
    case Ternary::TQ2: offset = kTQ2D; break;
  }
  check_k(K);
  for (int64_t i = 0; i < K / QK; ++i) std::memcpy(&d[i], in + i * block + offset, 2);
}

int64_t find_invalid_tq2_code(const uint8_t* in, int64_t K) {
  check_k(K);
  for (int64_t i = 0; i < K / QK; ++i) {
    const uint8_t* b = in + i * kTQ2Bytes;
    // Runs over every weight at load: test 32 codes per word for a field
    // with both bits set, and look closer only in a block that has one.
    uint64_t both = 0;
    for (int j = 0; j < QK / 4; j += 8) {
      uint64_t v;
      std::memcpy(&v, b + j, 8);
      both |= v & (v >> 1) & 0x5555555555555555ull;
    }
    if (both == 0) continue;
    for (int e = 0; e < QK; ++e) {
      const int h = e / 128, n = (e % 128) / 32, m = e % 32;
      if (((b[32 * h + m] >> (2 * n)) & 3) == 3) return i * QK + e;
    }
  }
  return -1;
}

int64_t unpack_i2s_row(const uint8_t* in, int64_t K, int8_t* trits) {
  int64_t bad = -1;
  for (int64_t b = 0; b < K / 128; ++b)
    for (int j = 0; j < 128; ++j) {
      const int code = (in[32 * b + j % 32] >> (6 - 2 * (j / 32))) & 3;
      if (code == 3 && bad < 0) bad = 128 * b + j;
      trits[128 * b + j] = int8_t(code - 1);
    }
  return bad;
}

}  // namespace tern
