// avx512-amx: avx512-vnni, with prompt batches through AMX tiles.
//
// One tdpbsud multiplies a 16 x 64 tile of signed bytes by a 64 x 16 tile
// of unsigned bytes into 16 x 16 int32 sums: 16384 products, against 64 for
// a vpdpbusd. A (signed) is 16 tokens' int8 activations, read straight from
// q with a row stride of K; B (unsigned) is 16 weight rows' codes t + 1 in
// the layout the tile wants, 4 consecutive columns of one row per dword and
// the 16 rows side by side: B[kq][4o + b] = code(row o, column 4kq + b). So
// C[token][row] = sum (t + 1) q, and C starts at -sum q, as in the vnni
// kernels, which leaves the exact sum t q.
//
// The codes come from the avx512-vnni layouts (avx512_vnni.h), so the two
// sets share prepare() and decode (n = 1) stays the vnni loop. A TQ2_0
// Chunk64 unit holds 256 columns of a row, dword d carrying columns
// 64p + 4d .. 64p + 4d + 3 in bit pair p. Transposing the units of 16 rows
// as a 16 x 16 dword matrix gives, per d, the dwords of all 16 rows, and
// (x >> 2p) & 3 of that is row d of the B tile of columns 64p .. 64p + 63:
// 64 shuffles, 4 shifts and 4 ands per 1024 weights, decoded once per call
// into an L2-resident buffer that serves every token block. TQ1_0's base-3
// bytes are transposed the same way and decoded after (decode_base3).
//
// Tokens beyond a multiple of 16, rows beyond a multiple of 16, batches
// under 16 tokens and K above kMaxAmxK take the vnni loops, which give the
// same exact sums.
#include "avx512_transpose.h"
#include "avx512_vnni.h"

namespace tern::kernels_detail {
namespace {

constexpr int kTile = 16;  // tokens or rows per tile side
// int32 tile sums start at -sum q (|.| <= 128 K) and gather at most 256 K
// more: under 2^31 up to 2^22 columns.
constexpr int64_t kMaxAmxK = int64_t(1) << 22;

// ldtilecfg's 64-byte operand, palette 1.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads exactly 64 bytes");

// Tiles 0-3: C[token block i][row block j] at 2i + j; 4, 5: A of token
// blocks 0, 1; 6, 7: B of row blocks 0, 1. All 16 x 64 bytes.
void configure_tiles() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = kTile;
  }
  _tile_loadconfig(&c);
}

// B tiles of 16 rows (units `stride` bytes apart) over all K columns:
// tile g (columns 64g .. 64g + 63) at out + 1024 g.
void decode_chunk64(const uint8_t* const* rows, int64_t stride, int64_t K, uint8_t* out) {
  for (int64_t c = 0; c < K / 256; ++c) {
    __m512i r[16];
    for (int o = 0; o < kTile; ++o) r[o] = _mm512_load_si512(rows[o] + stride * c);
    transpose16(r);
    uint8_t* tiles = out + 4096 * c;
    for (int d = 0; d < kTile; ++d)
      for (int p = 0; p < 4; ++p)
        _mm512_store_si512(tiles + 1024 * p + 64 * d, chunk64_codes(r[d], p));
  }
}

// The same from Base3x64 groups (320 columns, 5 planes of 64). Every step
// of the base-3 decode is per byte (base3_codes), so it commutes with the
// transpose. The last group of a row holds (K % 320) / 64 planes.
void decode_base3(const uint8_t* const* rows, int64_t stride, int64_t K, uint8_t* out) {
  for (int64_t g = 0; g < (K + 319) / 320; ++g) {
    const int planes = g < K / 320 ? 5 : int(K % 320 / 64);
    __m512i r[16];
    for (int o = 0; o < kTile; ++o) r[o] = _mm512_load_si512(rows[o] + stride * g);
    transpose16(r);
    uint8_t* tiles = out + 5 * 1024 * g;
    for (int d = 0; d < kTile; ++d) {
      __m512i b = r[d];
      for (int n = 0; n < planes; ++n, b = next_base3(b)) _mm512_store_si512(tiles + 1024 * n + 64 * d, base3_codes(b));
    }
  }
}

// C tile rows: token t's row is -qsum[t] in all 16 lanes.
void fill_start(const int32_t* qsum, int32_t* start) {
  for (int t = 0; t < kTile; ++t)
    _mm512_store_si512(start + kTile * t, _mm512_set1_epi32(-qsum[t]));
}

// sums[t][rows] for TB token blocks (16 tokens each, from q, K apart) and
// RB row blocks whose B tiles are b[0], b[1] (K / 64 tiles each).
template <int TB, int RB>
void tile_block(const int8_t* q, int64_t K, const int32_t* qsum, const uint8_t* const* b,
                int32_t* sums, int64_t M) {
  alignas(64) int32_t start[2][kTile * kTile];
  for (int i = 0; i < TB; ++i) fill_start(qsum + kTile * i, start[i]);
  _tile_loadd(0, start[0], 64);
  if constexpr (RB == 2) _tile_loadd(1, start[0], 64);
  if constexpr (TB == 2) {
    _tile_loadd(2, start[1], 64);
    if constexpr (RB == 2) _tile_loadd(3, start[1], 64);
  }
  for (int64_t g = 0; g < K / 64; ++g) {
    _tile_loadd(4, q + 64 * g, K);
    _tile_loadd(6, b[0] + 1024 * g, 64);
    _tile_dpbsud(0, 4, 6);
    if constexpr (RB == 2) {
      _tile_loadd(7, b[1] + 1024 * g, 64);
      _tile_dpbsud(1, 4, 7);
    }
    if constexpr (TB == 2) {
      _tile_loadd(5, q + kTile * K + 64 * g, K);
      _tile_dpbsud(2, 5, 6);
      if constexpr (RB == 2) _tile_dpbsud(3, 5, 7);
    }
  }
  const int64_t ld = 4 * M;
  _tile_stored(0, sums, ld);
  if constexpr (RB == 2) _tile_stored(1, sums + kTile, ld);
  if constexpr (TB == 2) {
    _tile_stored(2, sums + kTile * M, ld);
    if constexpr (RB == 2) _tile_stored(3, sums + kTile * M + kTile, ld);
  }
}

using TileBlock = void (*)(const int8_t*, int64_t, const int32_t*, const uint8_t* const*, int32_t*,
                           int64_t);
constexpr TileBlock kTileBlock[2][2] = {{&tile_block<1, 1>, &tile_block<1, 2>},
                                        {&tile_block<2, 1>, &tile_block<2, 2>}};

// Rows [r0, r0 + 16 * blocks) against tokens [0, 16 * tblocks) through the tiles.
void amx_rows(const TernaryMatrix& w, CodeLayout layout, const uint8_t* packed, const int8_t* q,
              int64_t tblocks, const int32_t* qsum, int32_t* sums, int64_t r0, int64_t blocks) {
  const int64_t K = w.cols, M = w.rows;
  const auto decode = layout == CodeLayout::Chunk64 ? &decode_chunk64 : &decode_base3;
  const int64_t row_bytes = code_row_bytes(layout, K);
  uint8_t* tiles = thread_scratch(1, size_t(2 * kTile * K));  // B tiles of two row blocks
  uint8_t* plain = packed ? nullptr : thread_scratch(0, size_t(2 * kTile * row_bytes));
  const int64_t stride = packed ? kPackedUnitStride : kUnitBytes;
  configure_tiles();
  for (int64_t j = 0; j < blocks; j += 2) {
    const int RB = int(std::min<int64_t>(2, blocks - j));
    const int64_t r = r0 + kTile * j;
    if (plain) pack_code_rows(w, layout, r, r + kTile * RB, plain);
    const uint8_t* b[2] = {tiles, tiles + kTile * K};
    for (int h = 0; h < RB; ++h) {
      const uint8_t* rows[kTile];
      for (int o = 0; o < kTile; ++o) {
        const int64_t row = r + kTile * h + o;
        rows[o] = packed ? packed_row(packed, layout, K, row) : plain + (row - r) * row_bytes;
      }
      decode(rows, stride, K, tiles + h * kTile * K);
    }
    for (int64_t i = 0; i < tblocks; i += 2) {
      const int TB = int(std::min<int64_t>(2, tblocks - i));
      kTileBlock[TB - 1][RB - 1](q + i * kTile * K, K, qsum + i * kTile, b,
                                 sums + i * kTile * M + r, M);
    }
  }
  _tile_release();
}

void gemm_i8_amx(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
                 int64_t r1) {
  check_call(w, ActMode::Int8, n, r0, r1);
  const int64_t K = w.cols, M = w.rows;
  const int64_t tblocks = n / kTile, blocks = (r1 - r0) / kTile;
  if (tblocks == 0 || blocks == 0 || K > kMaxAmxK) return gemm_i8_checked(w, q, n, sums, r0, r1);
  const CodeLayout layout = default_layout(w);
  const uint8_t* packed = layout_body(w, layout);
  const int64_t r_amx = r0 + blocks * kTile, n_amx = tblocks * kTile;
  // Every vector's sum once, for the tiles and both tails. Its own slot:
  // amx_rows and vnni_rows hold slot 0 (rows repacked on the fly) and 1.
  int32_t* qsum = reinterpret_cast<int32_t*>(thread_scratch(2, size_t(4 * n)));
  for (int64_t i = 0; i < n; ++i) qsum[i] = activation_sum(q + i * K, K);
  amx_rows(w, layout, packed, q, tblocks, qsum, sums, r0, blocks);
  if (n_amx < n)
    vnni_rows(w, layout, packed, q + n_amx * K, n - n_amx, qsum + n_amx, sums + n_amx * M, r0,
              r_amx);
  if (r_amx < r1) vnni_rows(w, layout, packed, q, n, qsum, sums, r_amx, r1);
}

bool available_amx(const CpuFeatures& c) {
  return available(c) && c.amx_tile && c.amx_int8 && c.os_amx;
}

}  // namespace

const KernelSet& avx512_amx_kernels() {
  static const KernelSet set{
      "avx512-amx", &available_amx,  nullptr, &gemm_i8_amx,      &dense_gemm_avx512,
      &prepare,     &prepared_bytes, nullptr, &quantize_i8_avx2, &phase_gemm_i8_avx512,
      "avx512-vnni",  // below kTile vectors, gemm_i8_checked
      &silu_glu_avx512, &relu2_glu_avx512, &group_gemm_i8_avx512<GroupDpbusd512>};
  return set;
}

}  // namespace tern::kernels_detail
