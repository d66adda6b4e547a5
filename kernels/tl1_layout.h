// The weight layout of the avx2-tl1 kernels, built once at load. It lives in
// a portable translation unit because building it needs std::vector,
// std::string and std::shared_ptr, whose template instantiations are shared
// across the binary; compiled with -mavx2 they could replace the portable
// copies and fault on a CPU without AVX2.
//
// Rows go in groups of 16 (the last group padded with zero weights). Within
// a group, each 8 columns (pairs p..p+3, p = 4c, pair i = columns 2i, 2i+1)
// take 32 bytes: byte j < 16 is row j's index of pair p in the low nibble
// and of pair p + 2 in the high nibble; byte 16 + j holds pairs p + 1 and
// p + 3. A pair (t0, t1) has index 3(t0 + 1) + (t1 + 1) in 0..8. That is 2
// bits per weight, 64-byte aligned.
#pragma once
#include <cstdint>
#include <memory>

#include "tern/kernels.h"

namespace tern::kernels_detail {

// Constants only (internal linkage): an inline function here would be
// compiled into both this portable code and the -mavx2 file.
constexpr int64_t kTl1Group = 16;           // rows per group
constexpr int64_t kTl1GroupColumnBytes = 4;  // a group's bytes per column: 16 rows x 2 bits

// Throws tern::Error if w is malformed or holds TQ2_0 code 3 (no trit).
std::shared_ptr<const void> tl1_prepare(const TernaryMatrix& w);
int64_t tl1_prepared_bytes(const TernaryMatrix& w);

}  // namespace tern::kernels_detail
