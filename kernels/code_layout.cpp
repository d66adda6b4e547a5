// Repacking into the 2-bit code layouts of code_layout.h. Runs once per
// matrix at load (or per row group for matrices that were not prepared), so
// it favours plainness: decode with the same unpack the scalar oracle uses,
// then place each code.
#include "code_layout.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "kernel_sets.h"
#include "tern/error.h"
#include "tern/quant.h"

namespace tern::kernels_detail {
namespace {

constexpr size_t kAlign = 64;

// Five codes (code 0 most significant) as one TQ1_0-style byte.
uint8_t base3_byte(const unsigned* codes) {
  unsigned v = 0;
  for (int n = 0; n < 5; ++n) v = v * 3 + codes[n];
  return uint8_t((v * 256 + 242) / 243);
}

void place_base3_row(const int8_t* t, int64_t K, uint8_t* out) {
  const int64_t groups = (K + 319) / 320;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t i = 0; i < 64; ++i) {
      unsigned codes[5] = {0, 0, 0, 0, 0};  // past the row end: unused, any code decodes
      for (int64_t n = 0; n < 5; ++n) {
        const int64_t k = 320 * g + 64 * n + i;
        if (k < K) codes[n] = unsigned(t[k] + 1);
      }
      out[64 * g + i] = base3_byte(codes);
    }
}

void place_row(const int8_t* t, int64_t K, CodeLayout layout, uint8_t* out) {
  if (layout == CodeLayout::Base3x64) return place_base3_row(t, K, out);
  std::memset(out, 0, size_t(K / 4));
  for (int64_t k = 0; k < K; ++k) {
    // Code 3 (a TQ2_0 "+2", rejected by loaders) decodes to 2 and returns as 3.
    const unsigned code = unsigned(t[k] + 1) & 3u;
    int64_t byte = k / 4, shift = 2 * (k % 4);
    if (layout == CodeLayout::Chunk64) {
      const int64_t c = k / 256, j = (k % 256) / 64, i = k % 64;
      byte = 64 * c + i;
      shift = 2 * j;
    }
    out[byte] = uint8_t(out[byte] | (code << shift));
  }
}

// TQ2_0 already stores each code t + 1 in 2 bits; Chunk64 and Linear only
// move them. Byte m of a block's 32-byte half h holds column 128h + 32n + m
// in bits 2n, so both layouts are built byte by byte, no trit decoded (about
// 30x fewer operations than unpacking a row and placing every code).
void place_tq2_chunk64(const uint8_t* qs, uint8_t* out) {
  // Column 64j + i sits in half j / 2 at n = 2 (j % 2) + i / 32, so byte m
  // of each half feeds out[m] (its codes n = 0, 2) and out[32 + m] (n = 1,
  // 3). Written as whole-byte masks and shifts the loop vectorizes: at load
  // this runs over every weight of the model, and the per-code version was
  // a third of the time to first token.
  for (int m = 0; m < 32; ++m) {
    const unsigned lo = qs[m], hi = qs[32 + m];
    out[m] = uint8_t((lo & 0x03u) | ((lo >> 2) & 0x0cu) | ((hi << 4) & 0x30u) | ((hi << 2) & 0xc0u));
    out[32 + m] = uint8_t(((lo >> 2) & 0x03u) | ((lo >> 4) & 0x0cu) | ((hi << 2) & 0x30u) | (hi & 0xc0u));
  }
}

void place_tq2_linear(const uint8_t* qs, uint8_t* out) {
  for (int q = 0; q < 64; ++q) {  // columns 4q .. 4q + 3 share h = q / 32 and n = (q % 32) / 8
    const uint8_t* src = qs + 32 * (q / 32) + (4 * q) % 32;
    const int s = 2 * ((q % 32) / 8);
    out[q] = uint8_t(((src[0] >> s) & 3) | (((src[1] >> s) & 3) << 2) | (((src[2] >> s) & 3) << 4) |
                     (((src[3] >> s) & 3) << 6));
  }
}

}  // namespace

int64_t code_row_bytes(CodeLayout layout, int64_t K) {
  return layout == CodeLayout::Base3x64 ? 64 * ((K + 319) / 320) : K / 4;
}

void pack_code_rows(const TernaryMatrix& w, CodeLayout layout, int64_t r0, int64_t r1,
                    uint8_t* out) {
  const int64_t K = w.cols, rb = ternary_row_bytes(w.type, K), stride = code_row_bytes(layout, K);
  // TQ2_0 already holds 2-bit codes; every other format is decoded by
  // unpack_ternary_row (which switches over all of them) and placed.
  if (ternary_format(w.type) == Ternary::TQ2 && layout != CodeLayout::Base3x64) {
    const auto place = layout == CodeLayout::Chunk64 ? place_tq2_chunk64 : place_tq2_linear;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t b = 0; b < K / QK; ++b)
        place(w.data + r * rb + b * int64_t(sizeof(BlockTQ2)), out + (r - r0) * stride + b * (QK / 4));
    return;
  }
  thread_local std::vector<int8_t> trits;
  trits.resize(size_t(K));
  for (int64_t r = r0; r < r1; ++r) {
    unpack_ternary_row(w.type, w.data + r * rb, K, trits.data());
    place_row(trits.data(), K, layout, out + (r - r0) * stride);
  }
}

int64_t packed_codes_bytes(const TernaryMatrix& w, CodeLayout layout) {
  return (w.rows + kRowGroup - 1) / kRowGroup * kRowGroup * code_row_bytes(layout, w.cols);
}

std::shared_ptr<const void> pack_codes(const TernaryMatrix& w, CodeLayout layout) {
  if (layout != CodeLayout::Chunk64 && layout != CodeLayout::Linear && layout != CodeLayout::Base3x64)
    throw Error(std::string("ternary kernel prepare: ") + layout_kind_name(layout) + " is not a code layout");
  if (layout == CodeLayout::Base3x64 && w.type != gguf::TensorType::TQ1_0)
    throw Error("ternary kernel prepare: the base-3 layout is for TQ1_0 weights only");
  const int64_t row_bytes = code_row_bytes(layout, w.cols), units = row_bytes / kUnitBytes;
  const int64_t groups = (w.rows + kRowGroup - 1) / kRowGroup;
  const size_t bytes = size_t(packed_codes_bytes(w, layout));
  uint8_t* codes = nullptr;
  std::shared_ptr<const void> owner = new_layout(w, layout, int64_t(bytes), &codes);
  // Only the last group can hold padding rows. Clearing the whole layout
  // was one more pass over fresh memory at load, for nothing.
  if (groups > 0) std::memset(codes + (groups - 1) * kRowGroup * row_bytes, 0, size_t(kRowGroup * row_bytes));
  std::vector<uint8_t> plain(size_t(kRowGroup * row_bytes));
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t r0 = g * kRowGroup, r1 = std::min(w.rows, r0 + kRowGroup);
    pack_code_rows(w, layout, r0, r1, plain.data());
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t u = 0; u < units; ++u)
        std::memcpy(codes + g * kRowGroup * row_bytes + u * kPackedUnitStride + (r - r0) * kUnitBytes,
                    plain.data() + (r - r0) * row_bytes + u * kUnitBytes, kUnitBytes);
  }
  return owner;
}

const uint8_t* packed_row(const uint8_t* codes, CodeLayout layout, int64_t K, int64_t r) {
  return codes + (r / kRowGroup) * kRowGroup * code_row_bytes(layout, K) + (r % kRowGroup) * kUnitBytes;
}

uint8_t* thread_scratch(int slot, size_t bytes) {
  struct Buf {
    std::unique_ptr<uint8_t[], void (*)(uint8_t*)> p{nullptr, [](uint8_t* q) {
                                                         ::operator delete[](q, std::align_val_t(kAlign));
                                                       }};
    size_t size = 0;
  };
  thread_local Buf bufs[3];
  Buf& b = bufs[unsigned(slot) % 3];
  if (b.size < bytes) {
    b.p.reset(static_cast<uint8_t*>(::operator new[](bytes, std::align_val_t(kAlign))));
    b.size = bytes;
  }
  return b.p.get();
}

}  // namespace tern::kernels_detail
