// TQ1_0 on the AVX2 sets (avx2, avx2-vnni). Decoding base 3 in the loop
// takes 2.9x the time of TQ2_0's shifts (git show d2934d8:docs/PERFORMANCE.md,
// "TQ1_0 on AVX2-only CPUs"), so a decode step
// there is bound by arithmetic, not by memory. prepare() therefore turns
// TQ1_0 rows into LayoutKind::Tq2Blocks once, at load: per 256 columns the
// 64 code bytes a TQ2_0 block holds (byte m of half h: column 128h + 32n +
// m in bits 2n), rows one after another, no block scales (the kernels take
// row_scale). TQ2_0 is read in place and not prepared. The price is 2 bits
// per weight resident instead of 1.6875.
//
// Plain declarations only (see avx2_common.h).
#pragma once
#include <cstdint>
#include <memory>

#include "tern/kernels.h"

namespace tern::kernels_detail {

// KernelSet::prepare / prepared_bytes of the AVX2 sets: a Tq2Blocks layout
// for TQ1_0, nullptr / 0 for TQ2_0 (read in place). Portable code
// (avx2_layout.cpp), since a shared_ptr built in an -mavx2 file would be
// weak code compiled for AVX2.
std::shared_ptr<const void> avx2_prepare(const TernaryMatrix& w);
int64_t avx2_prepared_bytes(const TernaryMatrix& w);

// The AVX2 conversion (avx2.cpp): n TQ1_0 blocks (54 bytes each) to n
// 64-byte blocks of TQ2_0 codes. Called only where AVX2 is available.
void tq1_blocks_to_tq2_codes(const uint8_t* blocks, int64_t n, uint8_t* out);

}  // namespace tern::kernels_detail
