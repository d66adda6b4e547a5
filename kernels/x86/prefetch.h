// Software prefetch for the kernels that stream weights in place from the
// mmapped file. Those pages are 4 KiB page-cache pages, and the hardware
// prefetchers stop at every page boundary: without help the AVX2 TQ2_0
// kernel read 0.45 of the DRAM roof on Zen 3 though it decodes faster than
// DRAM when its weights are in cache. Touching the stream this far ahead
// keeps a page walk and a few line fills in flight (measured on Zen 3 over
// 512..4096 bytes: 1 KiB reached 0.7-0.85 of the roof, 2-3 KiB 0.95-1.0).
//
// __builtin_prefetch(p, 0, 3), not _mm_prefetch: GCC 12 dropped every
// _mm_prefetch of a loop inlined through an always_inline function (the
// avx512-vnni decode loop lost its prefetches and fell from 0.85 to 0.60
// of the roof); the builtin survives inlining.
//
// Internal linkage for the reason avx2_common.h gives.
#pragma once

#include <cstdint>

namespace tern::kernels_detail {
namespace {

constexpr int64_t kPrefetchAhead = 2048;

// The line kPrefetchAhead bytes past p (prefetches never fault, so past the
// end of a buffer is harmless).
inline void prefetch(const uint8_t* p) {
  __builtin_prefetch(p + kPrefetchAhead, 0, 3);
}

// For R rows read side by side (row r at w + r * rb, `off` bytes into each
// so far): the line kPrefetchAhead past row r's position, or, past its end,
// the matching place in row r of the next tile of R rows.
inline void prefetch_tile_row(const uint8_t* w, int64_t rb, int R, int r, int64_t off) {
  const int64_t t = off + kPrefetchAhead;
  const uint8_t* p = w + r * rb + t + (t >= rb ? (R - 1) * rb : 0);
  __builtin_prefetch(p, 0, 3);
}

// For R rows that lie back to back (row r at w + r * rb) read side by side,
// `off` bytes into each: the lines of one stream running kTileAhead bytes
// past the far end of the tile's own progress. As R prefetch streams (one
// per row, prefetch_tile_row) a Zen 5 core read the BF16 head at 0.75-0.78
// of its one-stream roof, and even without arithmetic R = 4 adjacent row
// streams read at 0.74, 2 at 0.79, one at 1.0; prefetched as one stream,
// 2 rows of the head read at 0.88-1.02 (docs/studies/2026-11-29-zen5-two-cores.md).
// Call it for every row at each 64 bytes of row progress, so the R calls
// cover the R * 64 bytes the tile consumed. An asm statement, not the
// builtin: in the two-row Q8_0 loop GCC 12 dropped the builtin too, and
// the Q8_0 head decoded at half speed.
constexpr int64_t kTileAhead = 6144;
inline void prefetch_tile_linear(const uint8_t* w, int64_t rb, int R, int r, int64_t off) {
  const uint8_t* p = w + R * off + 64 * r + (R - 1) * rb + kTileAhead;
  asm volatile("prefetcht0 %0" : : "m"(*p));
}

// Item i of n items (row groups, row pairs) in the order that takes them
// alternately from the two halves of [0, n), so a decode loop's loads form
// two streams: as one contiguous stream, the avx512-vnni loop took
// 1.07-1.14x the time per byte of the head's four row streams in the same
// decode and the AVX2 pair loop 1.28-1.34x; as two, 1.03-1.06x and
// 1.09-1.19x (perf, Xeon, S and L; four streams were no better than two,
// eight worse). Each item's sums are its own, so the order changes no result.
inline int64_t two_stream_item(int64_t i, int64_t n) {
  const int64_t half = (n + 1) / 2;
  return i % 2 ? half + i / 2 : i / 2;
}

}  // namespace
}  // namespace tern::kernels_detail
