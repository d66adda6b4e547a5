// Internal to tern_kernels: the code layouts the AVX-512 kernel sets repack
// TQ2_0/TQ1_0 rows into at load. Plain declarations only: this header is
// included by translation units built with ISA flags, so it must not define
// inline functions (they would be shared with the portable code).
//
// Every layout stores the code t + 1 (0, 1, 2) of each weight in 64-byte
// units (code_row_bytes / 64 per row). A repacked matrix (pack_codes)
// interleaves its rows in groups of kRowGroup: unit u of rows 4G .. 4G+3
// are 4 consecutive units, so a kernel working on the 4 rows of a group
// reads one sequential stream (hardware prefetchers follow one long stream
// far better than 4 short ones); the rows are padded to a multiple of 4.
// Rows repacked on the fly (pack_code_rows) are plain, one after another.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "layout.h"
#include "tern/kernels.h"

namespace tern::kernels_detail {

constexpr int kRowGroup = 4;
constexpr int64_t kUnitBytes = 64;
// Bytes from one unit of a row to its next in a pack_codes result.
constexpr int64_t kPackedUnitStride = kRowGroup * kUnitBytes;

// The three code layouts are LayoutKind values (layout.h):
//  Chunk64: 2 bits per weight. Per 256 columns one 64-byte chunk; byte i of
//    chunk c holds column 256c + 64j + i in bits 2j..2j+1 (j = 0..3). One
//    load, a shift and an and give 64 byte-codes lined up with 64
//    consecutive activations.
//  Linear: 2 bits per weight. Column k in bits 2(k % 32) of little-endian
//    64-bit word k / 32: the even bits of a word are the codes' low bits,
//    the odd bits their high bits, which is what pext splits apart.
//  Base3x64: 1.6 bits per weight, for TQ1_0: per 320 columns one 64-byte
//    group; byte i of group g holds the codes of columns 320g + 64n + i
//    (n = 0..4) as TQ1_0 does, base 3 with code 0 most significant, byte =
//    ceil(v * 256 / 243), so code n = ((uint8_t)(byte * 3^n) * 3) >> 8. The
//    last K % 320 columns (0, 64, 128, 192 or 256 of them) fill one more
//    group's first (K % 320) / 64 codes. Rows are 64 * ceil(K / 320) bytes:
//    at most the TQ1_0 size (54 * K / 256) from K = 1280 on (1408 vs 1458
//    bytes at K = 6912); below that the one padded group makes rows up to
//    64 bytes longer, on matrices of a few kilobytes.
using CodeLayout = LayoutKind;

// Bytes of one row of K columns in `layout`.
int64_t code_row_bytes(CodeLayout layout, int64_t K);

// Bytes of the codes pack_codes(w, layout) holds (rows padded to groups).
int64_t packed_codes_bytes(const TernaryMatrix& w, CodeLayout layout);

// Repacks all rows of w (validated with check_call) into `layout`, one of
// the three above; the result is what KernelSet::prepare returns.
std::shared_ptr<const void> pack_codes(const TernaryMatrix& w, CodeLayout layout);

// The codes of a pack_codes result are layout_body(w, layout) (layout.h):
// nullptr when w.packed is null, and the caller then repacks rows on the fly
// with pack_code_rows.

// The first unit of row r of a pack_codes result (codes from layout_body);
// its later units follow every kPackedUnitStride bytes.
const uint8_t* packed_row(const uint8_t* codes, CodeLayout layout, int64_t K, int64_t r);

// Codes of rows [r0, r1) of w into out, plain: row after row, each
// code_row_bytes long, its units kUnitBytes apart.
void pack_code_rows(const TernaryMatrix& w, CodeLayout layout, int64_t r0, int64_t r1,
                    uint8_t* out);

// A 64-byte aligned per-thread buffer of at least `bytes` bytes, valid until
// the calling thread's next request for the same slot (0, 1 or 2).
uint8_t* thread_scratch(int slot, size_t bytes);

}  // namespace tern::kernels_detail
