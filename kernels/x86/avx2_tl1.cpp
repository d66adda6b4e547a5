// AVX2 lookup-table kernels after bitnet.cpp's TL1 (seed 002): a pair of
// weights (t0, t1) is one of 9 combinations, stored as a 4-bit index
// 3(t0 + 1) + (t1 + 1); for each pair of activations (q0, q1) a 16-entry
// table holds t0*q0 + t1*q1 for every index, and vpshufb looks up 16 rows'
// indices in it at once. Tables are built per activation vector, per tile of
// K, by the kernel itself: nothing is generated per shape.
//
// Exactness (int8 mode): an entry is in [-256, 254], nine bits, so each table
// is kept as two byte tables, the low byte and the high (sign) byte of the
// int16 sum ("pack-and-unpack", bitnet.cpp's TL1_1); two lookups and a byte
// interleave give the exact int16 entry. An int16 accumulator sums 64 pairs
// per 256-element block (|sum| <= 64 * 256 = 16384) before being widened to
// int32, so nothing clips and the result equals scalar's for every input.
//
// Layout (tl1_layout.h): 4-bit pair indices, 16 rows per group, arranged
// so that one load, a mask and a shift give two index vectors whose low lane
// meets pair p's table and whose high lane meets pair p + 1's; the tables of
// consecutive pairs sit side by side, one 32-byte load. That is 2 bits per
// weight: for TQ2_0 the file's size, for TQ1_0 18.5% more than the file,
// which is inherent in TL1's 4-bit pair index (TL2's 5-bit triples would
// avoid it). The GGUF pages stay clean, so the OS can drop them.
#include <immintrin.h>

#include <cstdint>

#include "../kernel_sets.h"
#include "../layout.h"
#include "../tl1_layout.h"
#include "avx2_dense.h"
#include "avx2_group.h"
#include "avx2_group_gemv.h"
#include "avx2_quant.h"
#include "tern/quant.h"

namespace tern::kernels_detail {
namespace {

constexpr int64_t kGroup = kTl1Group;
constexpr int64_t kTileK = 512;       // columns per table tile: 256 pairs, 8 KiB of tables
constexpr int64_t kCoupleBytes = 64;  // lo/hi tables of two consecutive pairs

// Tables for the np pairs of q: per couple of pairs, 64 bytes: the low
// bytes of pair 2u's table, of pair 2u + 1's, then the high bytes of each.
// Index 3a + b (a, b in 0..2) holds (a - 1) q0 + (b - 1) q1, computed as
// int16 with vpsignw (q times -1, 0 or +1); indices 9..15 hold 0. A byte
// shuffle gathers each lane's low bytes then high bytes, and a qword
// permute lines up low table | high table.
void build_tables(const int8_t* q, int64_t np, uint8_t* tab) {
  const __m256i wa = _mm256_setr_epi16(-1, -1, -1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0);
  const __m256i wb = _mm256_setr_epi16(-1, 0, 1, -1, 0, 1, -1, 0, 1, 0, 0, 0, 0, 0, 0, 0);
  const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                         0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  for (int64_t p = 0; p < np; ++p) {
    const __m256i e = _mm256_add_epi16(_mm256_sign_epi16(_mm256_set1_epi16(q[2 * p]), wa),
                                       _mm256_sign_epi16(_mm256_set1_epi16(q[2 * p + 1]), wb));
    const __m256i t = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(e, split), 0xd8);  // lo | hi
    uint8_t* lo = tab + (p / 2) * kCoupleBytes + (p % 2) * 16;
    _mm_store_si128(reinterpret_cast<__m128i*>(lo), _mm256_castsi256_si128(t));
    _mm_store_si128(reinterpret_cast<__m128i*>(lo + 32), _mm256_extracti128_si256(t, 1));
  }
}

inline __m256i load32(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }

// One lookup of 16 rows x 2 pairs into the two int16 accumulators (rows
// 0..7 and 8..15; low lane for the even pair, high lane for the odd one).
inline void lookup(__m256i idx, const uint8_t* couple, __m256i& a, __m256i& b) {
  const __m256i lo = _mm256_shuffle_epi8(load32(couple), idx);
  const __m256i hi = _mm256_shuffle_epi8(load32(couple + 32), idx);
  a = _mm256_add_epi16(a, _mm256_unpacklo_epi8(lo, hi));
  b = _mm256_add_epi16(b, _mm256_unpackhi_epi8(lo, hi));
}

// Rows [r0, r1) of one vector, columns [k0, k0 + kt) whose tables are `tab`;
// the first tile stores, later ones add.
void tile_rows(const uint8_t* layout, int64_t K, const uint8_t* tab, int64_t k0, int64_t kt,
               int32_t* out, int64_t r0, int64_t r1) {
  const __m256i nib = _mm256_set1_epi8(0x0f);
  const int64_t gb = K * kTl1GroupColumnBytes;
  for (int64_t g = r0 / kGroup; g * kGroup < r1; ++g) {
    const uint8_t* wp = layout + g * gb + k0 / 8 * 32;
    __m256i lo8 = _mm256_setzero_si256(), hi8 = _mm256_setzero_si256();  // int32 rows 0..7, 8..15
    for (int64_t blk = 0; blk < kt; blk += QK) {
      __m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
      const uint8_t* cp = tab + blk / 2 / 2 * kCoupleBytes;
      for (int c = 0; c < QK / 8; ++c, wp += 32, cp += 2 * kCoupleBytes) {
        const __m256i v = load32(wp);
        lookup(_mm256_and_si256(v, nib), cp, a, b);
        lookup(_mm256_and_si256(_mm256_srli_epi16(v, 4), nib), cp + kCoupleBytes, a, b);
      }
      lo8 = _mm256_add_epi32(lo8, _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(a)),
                                                   _mm256_cvtepi16_epi32(_mm256_extracti128_si256(a, 1))));
      hi8 = _mm256_add_epi32(hi8, _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(b)),
                                                   _mm256_cvtepi16_epi32(_mm256_extracti128_si256(b, 1))));
    }
    alignas(32) int32_t s[kGroup];
    _mm256_store_si256(reinterpret_cast<__m256i*>(s), lo8);
    _mm256_store_si256(reinterpret_cast<__m256i*>(s + 8), hi8);
    const int64_t a = r0 > g * kGroup ? r0 : g * kGroup, z = r1 < (g + 1) * kGroup ? r1 : (g + 1) * kGroup;
    for (int64_t r = a; r < z; ++r)
      out[r] = k0 == 0 ? s[r - g * kGroup] : int32_t(uint32_t(out[r]) + uint32_t(s[r - g * kGroup]));
  }
}

void gemm_i8(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
             int64_t r1) {
  check_call(w, ActMode::Int8, n, r0, r1);
  const uint8_t* layout = layout_body(w, LayoutKind::Tl1Pairs);
  if (layout == nullptr) throw_kernel_error("avx2-tl1: matrix was not prepared by this kernel set");
  const int64_t K = w.cols, M = w.rows;
  alignas(64) uint8_t tab[kTileK / 4 * kCoupleBytes];
  for (int64_t i = 0; i < n && r0 < r1; ++i)
    for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
      const int64_t kt = K - k0 < kTileK ? K - k0 : kTileK;
      build_tables(q + i * K + k0, kt / 2, tab);
      tile_rows(layout, K, tab, k0, kt, sums + i * M, r0, r1);
    }
}

bool available(const CpuFeatures& f) { return f.avx2 && f.fma && f.f16c && f.os_avx; }

}  // namespace

const KernelSet& avx2_tl1_kernels() {
  static const KernelSet set{"avx2-tl1", &available, nullptr, &gemm_i8, &dense_gemm_x86, &tl1_prepare,
                             &tl1_prepared_bytes, nullptr, &quantize_i8_avx2, nullptr,
                             nullptr, &silu_glu_avx2, &relu2_glu_avx2, &group_gemm_i8_avx2_sets<GroupMaddubs>};
  return set;
}

}  // namespace tern::kernels_detail
