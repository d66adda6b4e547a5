// avx512-vnni's prompt batches (avx512_vnni.h): each row group's codes are
// decoded into bytes t + 1 once per slice of columns and every block of
// vectors runs over those bytes, so the tile's inner loop is loads and
// vpdpbusd alone. Internal to avx512_vnni.h, in an anonymous namespace for
// the reason it gives.
#pragma once
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "../code_layout.h"
#include "../kernel_sets.h"

namespace tern::kernels_detail {
namespace {

// Lane k: the lane sum of s[k], k < N <= 16. One transpose-and-add tree
// for all N: 15 steps of three instructions, where N horizontal reductions
// cost about nine each; at K = 1536 a 4 x 4 prompt tile has only 24
// vpdpbusd per (row, vector), so the reductions were a sixth of its work.
// int32 adds wrap, so the sums are exact whenever the true ones fit.
template <int N>
inline __attribute__((always_inline)) __m512i lane_sums16(const __m512i* s) {
  static_assert(N >= 1 && N <= 16);
  __m512i a[16];
  for (int k = 0; k < 16; ++k) a[k] = k < N ? s[k] : _mm512_setzero_si512();
  // Per 128-bit lane, after the 32-bit and the 64-bit steps: the partial
  // sums of four consecutive vectors, in order.
  __m512i b[8], c[4];
  for (int p = 0; p < 8; ++p)
    b[p] = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2 * p], a[2 * p + 1]), _mm512_unpackhi_epi32(a[2 * p], a[2 * p + 1]));
  for (int p = 0; p < 4; ++p)
    c[p] = _mm512_add_epi32(_mm512_unpacklo_epi64(b[2 * p], b[2 * p + 1]), _mm512_unpackhi_epi64(b[2 * p], b[2 * p + 1]));
  // Then across the four 128-bit lanes, twice: lane l of the result holds
  // vectors 4l .. 4l + 3.
  const __m512i d0 = _mm512_add_epi32(_mm512_shuffle_i32x4(c[0], c[1], 0x88), _mm512_shuffle_i32x4(c[0], c[1], 0xdd));
  const __m512i d1 = _mm512_add_epi32(_mm512_shuffle_i32x4(c[2], c[3], 0x88), _mm512_shuffle_i32x4(c[2], c[3], 0xdd));
  return _mm512_add_epi32(_mm512_shuffle_i32x4(d0, d1, 0x88), _mm512_shuffle_i32x4(d0, d1, 0xdd));
}

// acc += the dot products of a's unsigned and b's signed byte quadruples,
// in place. Through the intrinsic, GCC 12 copies each accumulator out and
// back around its vpdpbusd in loops of many accumulators (two moves per
// vpdpbusd).
inline __attribute__((always_inline)) void dpbusd(__m512i& acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}

// Prompt batches of kDecodeVecs* vectors or more decode each row group's
// codes into bytes t + 1 (decode_blocks), a slice of columns at a time, and
// run every vector block over the slice: the tile's inner loop is then
// loads and vpdpbusd alone. On the packed codes each 64 products also cost
// a mask and, for half the codes, a shift (28 of them per 64 vpdpbusd at
// 4 x 4), and the tile ran at 0.57-0.78 of the vpdpbusd peak on Zen 5.
// Base 3 gains most: its packed loop needs two vpdpbusd per 64 weights,
// the bytes one. TQ2_0 needs more vectors to repay the decode than TQ1_0.
constexpr int kDecodeVecsChunk64 = 16;
constexpr int kDecodeVecsBase3 = 8;
// Rows x vectors of the tile over bytes: 24 accumulators, 6 vectors and a
// code fill 31 of the 32 registers.
constexpr int kByteVecs = 6;
// Columns per slice, in 64-column blocks: whole TQ2_0 chunks (4 blocks)
// and base-3 groups (5), 15 KiB of a group's bytes, which stay in L1 while
// every vector block streams its share of the slice past them. Over whole
// rows, K = 6912's 27 KiB of bytes were pushed out by the activations and
// the tile fell to 0.74x of the packed loop.
constexpr int64_t kSliceBlocks = 60;

// Code p (0..3) of each byte of a Chunk64 unit: columns 64p .. 64p + 63 of
// its chunk, in bits 2p, 2p + 1.
inline __m512i chunk64_codes(__m512i v, int p) {
  return _mm512_and_si512(_mm512_srli_epi16(v, 2 * p), _mm512_set1_epi8(0x03));
}

// The code of each base-3 byte b_n, (3 b_n) >> 8: 1 from 86, 2 from 171.
// The next plane's byte is 3 b_n mod 256 (next_base3).
inline __m512i base3_codes(__m512i b) {
  const __m512i one = _mm512_set1_epi8(1);
  const __m512i code = _mm512_maskz_mov_epi8(_mm512_cmpge_epu8_mask(b, _mm512_set1_epi8(char(86))), one);
  return _mm512_mask_add_epi8(code, _mm512_cmpge_epu8_mask(b, _mm512_set1_epi8(char(171))), code, one);
}
inline __m512i next_base3(__m512i b) { return _mm512_add_epi8(_mm512_add_epi8(b, b), b); }

// The codes t + 1 of R <= 4 rows (units `stride` bytes apart) in 64-column
// blocks [b0, b1) as bytes: block b0 + j of row r at out + 64 (4 j + r), so
// a block's rows are one 256-byte run. b0 starts a chunk (Chunk64) or a
// group (Base3x64); b1 ends one or the row.
void decode_blocks(const uint8_t* const* rows, int R, int64_t stride, int64_t K, bool base3, int64_t b0,
                   int64_t b1, uint8_t* out) {
  if (!base3) {
    for (int64_t c = b0 / 4; c < b1 / 4; ++c)
      for (int r = 0; r < R; ++r) {
        const __m512i v = _mm512_load_si512(rows[r] + stride * c);
        for (int p = 0; p < 4; ++p) _mm512_store_si512(out + 64 * (4 * (4 * c + p - b0) + r), chunk64_codes(v, p));
      }
    return;
  }
  for (int64_t g = b0 / 5; g < (b1 + 4) / 5; ++g) {
    const int planes = g < K / 320 ? 5 : int(K % 320 / 64);
    for (int r = 0; r < R; ++r) {
      __m512i b = _mm512_load_si512(rows[r] + stride * g);
      for (int n = 0; n < planes; ++n, b = next_base3(b))
        _mm512_store_si512(out + 64 * (4 * (5 * g + n - b0) + r), base3_codes(b));
    }
  }
}

// Where a byte tile's sums go. int32 throughout: adds wrap, so partial
// sums over slices are exact whenever the final ones fit, as they must.
// The tile stores them itself: read back by scalar code right after the
// tile's vector stores, they stalled on store forwarding (7% of a prompt
// at S's shapes on Zen 5).
struct TileOut {
  int32_t* acc;          // [V][4], the earlier slices' sums (read unless first, written unless last)
  bool first, last;
  const int32_t* qsum;   // the tile's vectors' activation sums, subtracted on the last slice
  int32_t* dst;          // on the last slice: vector v's R sums at dst + v * ld
  int64_t ld;
};

// Lanes 4j .. 4j + 3 of e (vector 4k + j of the tile) to dst + v * ld.
template <int R, int V, int k, int j = 0>
inline __attribute__((always_inline)) void store_rows(__m512i e, int32_t* dst, int64_t ld) {
  if constexpr (j < 4 && 4 * k + j < V) {
    _mm_mask_storeu_epi32(dst + (4 * k + j) * ld, __mmask8((1u << R) - 1), _mm512_extracti32x4_epi32(e, j));
    store_rows<R, V, k, j + 1>(e, dst, ld);
  }
}

// Lanes 16k .. 16k + 15 of the tile's sums ([v][4], rows past R zero) as e.
template <int R, int V, int k = 0>
inline __attribute__((always_inline)) void finish_tile(const __m512i* s, const TileOut& out) {
  if constexpr (16 * k < 4 * V) {
    constexpr int N = std::min(16, 4 * V - 16 * k);
    __m512i e = lane_sums16<N>(s + 16 * k);
    const __mmask16 m = __mmask16(N == 16 ? 0xffff : (1u << N) - 1);
    int32_t* acc = out.acc + 16 * k;
    if (!out.first) e = _mm512_add_epi32(e, _mm512_maskz_loadu_epi32(m, acc));
    if (!out.last) {
      _mm512_mask_storeu_epi32(acc, m, e);
    } else {
      // Vector 4k + j's activation sum in lanes 4j .. 4j + 3.
      const __m128i q = _mm_maskz_loadu_epi32(__mmask8((1u << std::min(4, V - 4 * k)) - 1), out.qsum + 4 * k);
      const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
      e = _mm512_sub_epi32(e, _mm512_permutexvar_epi32(spread, _mm512_castsi128_si512(q)));
      store_rows<R, V, k>(e, out.dst, out.ld);
    }
    finish_tile<R, V, k + 1>(s, out);
  }
}

// The code sums of R rows against V vectors over the first `blocks` blocks
// of decode_blocks' bytes (q[i] at the slice's start), to `out`. The
// unroll pragmas keep acc in registers: GCC replaces an array by scalars
// only where every index is a constant, and it does so before its own
// complete unrolling.
template <int R, int V>
void byte_tile(const uint8_t* codes, const int8_t* const* q, int64_t blocks, const TileOut& out) {
  __m512i acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int i = 0; i < V; ++i) acc[r][i] = _mm512_setzero_si512();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i x[V];
#pragma GCC unroll 8
    for (int i = 0; i < V; ++i) x[i] = _mm512_loadu_si512(q[i] + 64 * b);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i c = _mm512_load_si512(codes + 64 * (4 * b + r));
#pragma GCC unroll 8
      for (int i = 0; i < V; ++i) dpbusd(acc[r][i], c, x[i]);
    }
  }
  __m512i s[4 * V];  // [v][4]: each vector's rows in one 128-bit lane of the sums
#pragma GCC unroll 8
  for (int i = 0; i < V; ++i)
#pragma GCC unroll 8
    for (int r = 0; r < 4; ++r) s[4 * i + r] = r < R ? acc[r][i] : _mm512_setzero_si512();
  finish_tile<R, V>(s, out);
}

using ByteTile = void (*)(const uint8_t*, const int8_t* const*, int64_t blocks, const TileOut&);
template <int R, size_t... I>
constexpr std::array<ByteTile, sizeof...(I)> byte_tiles(std::index_sequence<I...>) {
  return {&byte_tile<R, int(I) + 1>...};
}
constexpr std::array<ByteTile, kByteVecs> kByteTiles[kRowGroup] = {
    byte_tiles<1>(std::make_index_sequence<kByteVecs>()), byte_tiles<2>(std::make_index_sequence<kByteVecs>()),
    byte_tiles<3>(std::make_index_sequence<kByteVecs>()), byte_tiles<4>(std::make_index_sequence<kByteVecs>())};

// Where decoded_group's sums go. Rows come in lines of up to 16 (one cache
// line of each vector's sums): a group writes its R columns of line[i][16]
// from column `col`, and the line's last group writes its own to sums[i *
// M + col] and copies the line's earlier columns there. Stored straight to
// sums, M int32 apart, each group's were a cache miss per vector (at M =
// 4096 one L1 set and four L2 sets hold them all).
struct SumLine {
  int32_t* line;  // [n][16]
  int32_t* sums;  // at the line's first row
  int64_t M;
  int col;
  bool last;
};

// The sums of the R rows of one group against n vectors, through the
// bytes: bytes holds a slice's (kSliceBlocks * 256), acc [n][4] the sums
// over the slices so far.
void decoded_group(const uint8_t* const* rows, int R, int64_t stride, int64_t K, bool base3, const int8_t* q,
                   int64_t n, const int32_t* qsum, const SumLine& out, uint8_t* bytes, int32_t* acc) {
  // Slices of equal length in whole chunks or groups, so that none is a
  // short remainder paying a tile's reductions for little work.
  const int64_t blocks = K / 64, unit = base3 ? 5 : 4, slices = (blocks + kSliceBlocks - 1) / kSliceBlocks;
  const int64_t step = ((blocks + slices - 1) / slices + unit - 1) / unit * unit;
  const __mmask16 earlier = __mmask16((1u << out.col) - 1);  // the line's columns before this group's
  for (int64_t b0 = 0; b0 < blocks; b0 += step) {
    const int64_t b1 = std::min(blocks, b0 + step);
    decode_blocks(rows, R, stride, K, base3, b0, b1, bytes);
    // Tiles of equal width (8 vectors: 4 + 4, not 6 + 2, whose narrow tile
    // loads a code per two vpdpbusd).
    for (int64_t i = 0, tiles = (n + kByteVecs - 1) / kByteVecs; i < n; --tiles) {
      const int V = int((n - i + tiles - 1) / tiles);
      const int8_t* qs[kByteVecs];
      for (int v = 0; v < V; ++v) qs[v] = q + (i + v) * K + 64 * b0;
      const TileOut to{acc + 4 * i, b0 == 0, b1 == blocks, qsum + i,
                       out.last ? out.sums + i * out.M + out.col : out.line + 16 * i + out.col,
                       out.last ? out.M : 16};
      kByteTiles[R - 1][size_t(V - 1)](bytes, qs, b1 - b0, to);
      if (b1 == blocks && out.last && out.col > 0)
        for (int v = 0; v < V; ++v)
          _mm512_mask_storeu_epi32(out.sums + (i + v) * out.M, earlier, _mm512_loadu_si512(out.line + 16 * (i + v)));
      i += V;
    }
  }
}

// sums[i * M + r] = code sum of row r against vector i minus qsum[i], for
// rows [r0, r1) and n vectors (q[i] at q + i K), through the bytes. packed:
// the prepared layout, or null to repack each group into `plain` (room
// for kRowGroup rows).
void byte_rows(const TernaryMatrix& w, CodeLayout layout, const uint8_t* packed, uint8_t* plain, const int8_t* q,
               int64_t n, const int32_t* qsum, int32_t* sums, int64_t r0, int64_t r1) {
  const int64_t K = w.cols, M = w.rows, row_bytes = code_row_bytes(layout, K);
  const bool base3 = layout == CodeLayout::Base3x64;
  const int64_t stride = packed ? kPackedUnitStride : kUnitBytes;
  // Slot 1 (avx512-amx's tiles, which it is done with when it calls here):
  // a slice's bytes, then acc [n][4] and line [n][16] int32.
  uint8_t* bytes = thread_scratch(1, size_t(kSliceBlocks * 256 + (4 + 16) * 4 * n));
  int32_t* acc = reinterpret_cast<int32_t*>(bytes + kSliceBlocks * 256);
  int32_t* line = acc + 4 * n;
  for (int64_t l0 = r0, l1; l0 < r1; l0 = l1) {
    l1 = std::min(r1, (l0 / 16 + 1) * 16);
    for (int64_t r = l0, next; r < l1; r = next) {
      next = std::min(l1, (r / kRowGroup + 1) * kRowGroup);
      const int R = int(next - r);
      const uint8_t* rows[kRowGroup];
      if (packed == nullptr) pack_code_rows(w, layout, r, next, plain);
      for (int g = 0; g < R; ++g) rows[g] = packed ? packed_row(packed, layout, K, r + g) : plain + g * row_bytes;
      // The next group's codes, one contiguous run, while this one's
      // tiles run: its decode would otherwise wait on DRAM once per group
      // (a group's tiles are too long apart for the hardware prefetcher).
      if (packed && next < r1) {
        const uint8_t* ahead = packed_row(packed, layout, K, next);
        for (int64_t o = 0; o < kRowGroup * row_bytes; o += 64) asm volatile("prefetcht1 %0" : : "m"(ahead[o]));
      }
      decoded_group(rows, R, stride, K, base3, q, n, qsum, {line, sums + l0, M, int(r - l0), next == l1}, bytes,
                    acc);
    }
  }
}

}  // namespace
}  // namespace tern::kernels_detail
