// TQ2_0 / TQ1_0 packing and the half-precision conversions. Round trips alone
// would accept any self-consistent layout, so the layouts are also pinned by
// bytes derived by hand from llama.cpp's rules and by a dequantizer written
// here the way llama.cpp's dequantize_row_tq*_0 loops are.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tern/error.h"
#include "tern/quant.h"

using namespace tern;
using gguf::TensorType;

namespace {

std::vector<int8_t> random_trits(int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-1, 1);
  std::vector<int8_t> t(static_cast<size_t>(K));
  for (auto& v : t) v = int8_t(dist(rng));
  return t;
}

std::vector<uint8_t> pack(TensorType type, const std::vector<int8_t>& t, uint16_t d = 0x3c00) {
  std::vector<uint8_t> out(size_t(ternary_row_bytes(type, int64_t(t.size()))));
  pack_ternary_row(type, t.data(), int64_t(t.size()), d, out.data());
  return out;
}

// llama.cpp's TQ1_0 dequantize loops, element order given by the write order.
std::vector<float> llama_dequant_tq1(const uint8_t* x, int64_t K) {
  const uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
  std::vector<float> out;
  for (int64_t i = 0; i < K / 256; ++i) {
    const uint8_t* blk = x + 54 * i;
    const uint8_t* qs = blk;
    const uint8_t* qh = blk + 48;
    uint16_t dh;
    std::memcpy(&dh, blk + 52, 2);
    const float d = fp16_to_f32(dh);
    for (size_t j = 0; j < 32; j += 32)
      for (size_t n = 0; n < 5; ++n)
        for (size_t m = 0; m < 32; ++m) {
          uint8_t q = uint8_t(qs[j + m] * pow3[n]);
          int16_t xi = int16_t((uint16_t(q) * 3) >> 8);
          out.push_back(float(xi - 1) * d);
        }
    for (size_t j = 32; j < 48; j += 16)
      for (size_t n = 0; n < 5; ++n)
        for (size_t m = 0; m < 16; ++m) {
          uint8_t q = uint8_t(qs[j + m] * pow3[n]);
          int16_t xi = int16_t((uint16_t(q) * 3) >> 8);
          out.push_back(float(xi - 1) * d);
        }
    for (size_t n = 0; n < 4; ++n)
      for (size_t j = 0; j < 4; ++j) {
        uint8_t q = uint8_t(qh[j] * pow3[n]);
        int16_t xi = int16_t((uint16_t(q) * 3) >> 8);
        out.push_back(float(xi - 1) * d);
      }
  }
  return out;
}

// llama.cpp's TQ2_0 dequantize loops.
std::vector<float> llama_dequant_tq2(const uint8_t* x, int64_t K) {
  std::vector<float> out;
  for (int64_t i = 0; i < K / 256; ++i) {
    const uint8_t* qs = x + 66 * i;
    uint16_t dh;
    std::memcpy(&dh, qs + 64, 2);
    const float d = fp16_to_f32(dh);
    for (size_t j = 0; j < 64; j += 32)
      for (size_t l = 0; l < 4; ++l)
        for (size_t m = 0; m < 32; ++m) {
          int8_t q = int8_t((qs[j + m] >> (l * 2)) & 3);
          out.push_back(float(q - 1) * d);
        }
  }
  return out;
}

uint8_t ceil_fraction(unsigned v) { return uint8_t((v * 256 + 242) / 243); }

}  // namespace

TEST(TernaryPack, RoundTripBothFormats) {
  for (int64_t K : {256, 512, 2560}) {
    for (TensorType type : {TensorType::TQ2_0, TensorType::TQ1_0}) {
      const auto t = random_trits(K, uint32_t(K) * 7 + uint32_t(type));
      const auto bytes = pack(type, t, 0x1234);
      std::vector<int8_t> back(size_t(K), 9);
      unpack_ternary_row(type, bytes.data(), K, back.data());
      EXPECT_EQ(back, t) << "K=" << K << " type=" << uint32_t(type);
      std::vector<uint16_t> d(static_cast<size_t>(K / QK));
      row_block_scales(type, bytes.data(), K, d.data());
      for (uint16_t v : d) EXPECT_EQ(v, 0x1234);
    }
  }
}

TEST(TernaryPack, StructOverloadsMatchByteForm) {
  const int64_t K = 512;
  const auto t = random_trits(K, 5);
  std::vector<BlockTQ2> b2(2);
  std::vector<BlockTQ1> b1(2);
  pack_tq2_row(t.data(), K, 0x3c00, b2.data());
  pack_tq1_row(t.data(), K, 0x3c00, b1.data());
  EXPECT_EQ(0, std::memcmp(b2.data(), pack(TensorType::TQ2_0, t).data(), 132));
  EXPECT_EQ(0, std::memcmp(b1.data(), pack(TensorType::TQ1_0, t).data(), 108));
  EXPECT_EQ(b2[1].d, 0x3c00);
  EXPECT_EQ(b1[1].d, 0x3c00);
  std::vector<int8_t> back(static_cast<size_t>(K));
  unpack_tq2_row(b2.data(), K, back.data());
  EXPECT_EQ(back, t);
  unpack_tq1_row(b1.data(), K, back.data());
  EXPECT_EQ(back, t);
}

TEST(TernaryPack, RowBytes) {
  EXPECT_EQ(ternary_row_bytes(TensorType::TQ2_0, 2560), 660);
  EXPECT_EQ(ternary_row_bytes(TensorType::TQ1_0, 2560), 540);
  EXPECT_THROW(ternary_row_bytes(TensorType::TQ2_0, 300), Error);
  EXPECT_THROW(ternary_row_bytes(TensorType::TQ2_0, 0), Error);
  EXPECT_THROW(ternary_row_bytes(TensorType::Q8_0, 256), Error);
  EXPECT_TRUE(is_ternary_type(TensorType::TQ1_0));
  EXPECT_TRUE(is_ternary_type(TensorType::TQ2_0));
  EXPECT_FALSE(is_ternary_type(TensorType::F32));
}

// The one gate every decode switches on: the two formats, and an error for
// the types beside them (I2_S and IQ2_BN hold trits too, but in layouts no
// kernel decodes; the loader converts I2_S first).
TEST(TernaryPack, FormatOfEachType) {
  EXPECT_EQ(ternary_format(TensorType::TQ1_0), Ternary::TQ1);
  EXPECT_EQ(ternary_format(TensorType::TQ2_0), Ternary::TQ2);
  for (TensorType t : {TensorType::F32, TensorType::Q8_0, TensorType::I2_S, TensorType::IQ2_BN}) {
    EXPECT_FALSE(is_ternary_type(t));
    EXPECT_THROW(ternary_format(t), Error) << uint32_t(t);
    std::vector<int8_t> trits(256);
    std::vector<uint8_t> bytes(256);
    EXPECT_THROW(unpack_ternary_row(t, bytes.data(), 256, trits.data()), Error) << uint32_t(t);
  }
}

// qs[0] holds elements 0, 32, 64, 96, 128 (element 0 most significant);
// qs[37] holds elements 165, 181, 197, 213, 229.
TEST(TernaryPack, Tq1AllFiveTritPatterns) {
  for (unsigned v = 0; v < 243; ++v) {
    const unsigned c[5] = {v / 81, v / 27 % 3, v / 9 % 3, v / 3 % 3, v % 3};
    std::vector<int8_t> t(256, 0);
    for (int n = 0; n < 5; ++n) {
      t[size_t(32 * n)] = int8_t(c[n]) - 1;
      t[size_t(165 + 16 * n)] = int8_t(c[n]) - 1;
    }
    const auto b = pack(TensorType::TQ1_0, t);
    ASSERT_EQ(b[0], ceil_fraction(v)) << v;
    ASSERT_EQ(b[37], ceil_fraction(v)) << v;
    for (int n = 0; n < 5; ++n) {
      static const unsigned pow3[5] = {1, 3, 9, 27, 81};
      const unsigned q = uint8_t(b[0] * pow3[n]);
      ASSERT_EQ((q * 3) >> 8, c[n]) << "pattern " << v << " trit " << n;
    }
    std::vector<int8_t> back(256);
    unpack_ternary_row(TensorType::TQ1_0, b.data(), 256, back.data());
    ASSERT_EQ(back, t) << v;
  }
}

// qh[2] holds elements 242, 246, 250, 254, shifted up one trit.
TEST(TernaryPack, Tq1AllFourTritPatterns) {
  for (unsigned v = 0; v < 81; ++v) {
    const unsigned c[4] = {v / 27, v / 9 % 3, v / 3 % 3, v % 3};
    std::vector<int8_t> t(256, 0);
    for (int n = 0; n < 4; ++n) t[size_t(242 + 4 * n)] = int8_t(c[n]) - 1;
    const auto b = pack(TensorType::TQ1_0, t);
    ASSERT_EQ(b[48 + 2], ceil_fraction(v * 3)) << v;
    std::vector<int8_t> back(256);
    unpack_ternary_row(TensorType::TQ1_0, b.data(), 256, back.data());
    ASSERT_EQ(back, t) << v;
  }
}

TEST(TernaryPack, Tq2GoldenBytes) {
  std::vector<int8_t> t(512, 0);
  t[0] = 1;                     // qs[0] bits 0-1 = code 2
  t[32] = -1;                   // qs[0] bits 2-3 = code 0
  t[128 + 32 * 3 + 5] = 1;      // qs[32 + 5] bits 6-7 = code 2
  t[256 + 64 + 31] = -1;        // block 1, qs[31] bits 4-5 = code 0
  const auto b = pack(TensorType::TQ2_0, t, 0x3c00);
  ASSERT_EQ(b.size(), 132u);
  EXPECT_EQ(b[0], 0b01010010);
  EXPECT_EQ(b[1], 0b01010101);
  EXPECT_EQ(b[37], 0b10010101);
  EXPECT_EQ(b[64], 0x00);  // d = 1.0 little-endian
  EXPECT_EQ(b[65], 0x3c);
  EXPECT_EQ(b[66 + 31], 0b01000101);

  std::vector<int8_t> one(256, 0);
  one[0] = 1;
  EXPECT_EQ(pack(TensorType::TQ2_0, one)[0], 0b01010110);
}

TEST(TernaryPack, Tq1GoldenBytes) {
  std::vector<int8_t> t(256, 0);
  auto zero = pack(TensorType::TQ1_0, t, 0xabcd);
  // All zero: five codes 1 = 121 -> 128; qh: four codes 1 = 40, *3 = 120 -> 127.
  for (int i = 0; i < 48; ++i) EXPECT_EQ(zero[size_t(i)], 128) << i;
  for (int i = 48; i < 52; ++i) EXPECT_EQ(zero[size_t(i)], 127) << i;
  EXPECT_EQ(zero[52], 0xcd);
  EXPECT_EQ(zero[53], 0xab);

  t[0] = 1;     // qs[0]: codes 2,1,1,1,1 = 202 -> 213
  t[160] = -1;  // qs[32]: codes 0,1,1,1,1 = 40 -> 43
  t[255] = 1;   // qh[3]: codes 1,1,1,2 = 41, *3 = 123 -> 130
  t[240] = -1;  // qh[0]: codes 0,1,1,1 = 13, *3 = 39 -> 42
  const auto b = pack(TensorType::TQ1_0, t);
  EXPECT_EQ(b[0], 213);
  EXPECT_EQ(b[1], 128);
  EXPECT_EQ(b[32], 43);
  EXPECT_EQ(b[48], 42);
  EXPECT_EQ(b[51], 130);
}

TEST(TernaryPack, UnpackMatchesLlamaDequantOnArbitraryBytes) {
  std::mt19937 rng(42);
  for (int64_t K : {256, 768}) {
    for (TensorType type : {TensorType::TQ1_0, TensorType::TQ2_0}) {
      const int64_t block = type == TensorType::TQ1_0 ? 54 : 66;
      std::vector<uint8_t> bytes(static_cast<size_t>(K / 256 * block));
      for (auto& v : bytes) v = uint8_t(rng());
      // Finite, modest scales: 0x3c00 | random mantissa bits.
      for (int64_t i = 0; i < K / 256; ++i) {
        const uint16_t d = uint16_t(0x3c00 | (rng() & 0x3ff));
        std::memcpy(&bytes[size_t(i * block + block - 2)], &d, 2);
      }
      const auto ref = type == TensorType::TQ1_0 ? llama_dequant_tq1(bytes.data(), K)
                                                 : llama_dequant_tq2(bytes.data(), K);
      std::vector<int8_t> t(static_cast<size_t>(K));
      unpack_ternary_row(type, bytes.data(), K, t.data());
      std::vector<uint16_t> d(static_cast<size_t>(K / 256));
      row_block_scales(type, bytes.data(), K, d.data());
      for (int64_t k = 0; k < K; ++k)
        ASSERT_EQ(float(t[size_t(k)]) * fp16_to_f32(d[size_t(k / 256)]), ref[size_t(k)])
            << "K=" << K << " type=" << uint32_t(type) << " k=" << k;
    }
  }
}

TEST(TernaryPack, PackedRowsMatchLlamaDequant) {
  const int64_t K = 2560;
  const auto t = random_trits(K, 99);
  const auto ref1 = llama_dequant_tq1(pack(TensorType::TQ1_0, t).data(), K);
  const auto ref2 = llama_dequant_tq2(pack(TensorType::TQ2_0, t).data(), K);
  for (int64_t k = 0; k < K; ++k) {
    ASSERT_EQ(ref1[size_t(k)], float(t[size_t(k)])) << k;
    ASSERT_EQ(ref2[size_t(k)], float(t[size_t(k)])) << k;
  }
}

TEST(TernaryPack, RejectsNonTernaryValues) {
  std::vector<int8_t> t(512, 0);
  t[300] = 2;
  std::vector<uint8_t> out(132);
  try {
    pack_ternary_row(TensorType::TQ2_0, t.data(), 512, 0, out.data());
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "non-ternary value 2 at column 300");
  }
  t[300] = 0;
  t[7] = -128;
  try {
    pack_ternary_row(TensorType::TQ1_0, t.data(), 512, 0, out.data());
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "non-ternary value -128 at column 7");
  }
  t[7] = 0;
  EXPECT_THROW(pack_ternary_row(TensorType::TQ2_0, t.data(), 300, 0, out.data()), Error);
  EXPECT_THROW(pack_ternary_row(TensorType::F16, t.data(), 512, 0, out.data()), Error);
  EXPECT_THROW(unpack_ternary_row(TensorType::Q4_0, out.data(), 512, t.data()), Error);
}

TEST(TernaryPack, FindsInvalidTq2Codes) {
  const auto t = random_trits(512, 3);
  auto b = pack(TensorType::TQ2_0, t);
  EXPECT_EQ(find_invalid_tq2_code(b.data(), 512), -1);
  // Element 256 + 128 + 32*2 + 9 lives in block 1, qs[32 + 9], bits 4-5.
  b[66 + 32 + 9] |= 0b00110000;
  EXPECT_EQ(find_invalid_tq2_code(b.data(), 512), 256 + 128 + 64 + 9);
  b[5] |= 0b11000000;  // element 96 + 5 of block 0 comes first
  EXPECT_EQ(find_invalid_tq2_code(b.data(), 512), 101);
}

TEST(Fp16, RoundingCases) {
  EXPECT_EQ(f32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_fp16(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65519.99f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);  // tie, rounds to even = inf
  EXPECT_EQ(f32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_fp16(-1e10f), 0xfc00);
  EXPECT_EQ(f32_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f32_to_fp16(-std::numeric_limits<float>::infinity()), 0xfc00);
  const uint16_t nan = f32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  // A signalling NaN whose payload lives only in the low bits stays NaN.
  EXPECT_NE(f32_to_fp16(std::bit_cast<float>(0x7f800001u)) & 0x3ff, 0);
  EXPECT_EQ(f32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_fp16(1.0f + 0x1p-11f), 0x3c00);         // tie -> even
  EXPECT_EQ(f32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);     // tie -> even (up)
  EXPECT_EQ(f32_to_fp16(0x1p-24f), 0x0001);                // smallest subnormal
  EXPECT_EQ(f32_to_fp16(0x1p-25f), 0x0000);                // tie -> even 0
  EXPECT_EQ(f32_to_fp16(0x1.000002p-25f), 0x0001);         // just above the tie
  EXPECT_EQ(f32_to_fp16(3 * 0x1p-25f), 0x0002);            // 1.5 units -> 2
  EXPECT_EQ(f32_to_fp16(1023 * 0x1p-24f), 0x03ff);         // largest subnormal
  EXPECT_EQ(f32_to_fp16(0x1p-14f - 0x1p-25f), 0x0400);     // carries into normal
  EXPECT_EQ(f32_to_fp16(0x1p-14f), 0x0400);
  EXPECT_EQ(f32_to_fp16(-0x1p-24f), 0x8001);
  EXPECT_EQ(f32_to_fp16(1e-30f), 0x0000);
  EXPECT_EQ(f32_to_fp16(std::bit_cast<float>(0x00000001u)), 0x0000);  // f32 subnormal

  EXPECT_EQ(fp16_to_f32(0x0001), 0x1p-24f);
  EXPECT_EQ(fp16_to_f32(0x03ff), 1023 * 0x1p-24f);
  EXPECT_EQ(fp16_to_f32(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(fp16_to_f32(0xfc00)) && fp16_to_f32(0xfc00) < 0);
  EXPECT_TRUE(std::isnan(fp16_to_f32(0x7e00)));
  EXPECT_TRUE(std::signbit(fp16_to_f32(0x8000)));
}

TEST(Fp16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_f32(uint16_t(h));
    if (std::isnan(f)) {
      ASSERT_TRUE((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) << h;
      ASSERT_TRUE(std::isnan(fp16_to_f32(f32_to_fp16(f)))) << h;
      continue;
    }
    ASSERT_EQ(f32_to_fp16(f), h) << std::hex << h;
  }
}

// Every float to half, checked against the definition: the result is a
// nearest half (ties to even mantissa), or inf past 65520.
TEST(Fp16, NearestEvenOnAFloatSweep) {
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 40503) {
    const float f = std::bit_cast<float>(uint32_t(bits));
    if (std::isnan(f)) continue;
    const uint16_t h = f32_to_fp16(f);
    const double x = std::fabs(double(f));
    const uint16_t mag = h & 0x7fff;
    ASSERT_EQ(h >> 15, uint16_t(std::signbit(f))) << f;
    if (x >= 65520.0) {
      ASSERT_EQ(mag, 0x7c00) << f;
      continue;
    }
    ASSERT_LT(mag, 0x7c00) << f;
    const double got = std::fabs(double(fp16_to_f32(h)));
    const double err = std::fabs(got - x);
    if (mag > 0) {
      const double down = std::fabs(double(fp16_to_f32(uint16_t(mag - 1))) - x);
      ASSERT_LE(err, down) << f;
      if (err == down) {
        ASSERT_EQ(mag & 1, 0) << f;
      }
    }
    const double up = mag + 1 == 0x7c00 ? 65536.0 : double(fp16_to_f32(uint16_t(mag + 1)));
    ASSERT_LE(err, std::fabs(up - x)) << f;
    if (mag + 1 < 0x7c00 && err == std::fabs(up - x)) {
      ASSERT_EQ(mag & 1, 0) << f;
    }
  }
}

#if defined(__FLT16_MAX__)
// The compiler's own _Float16 conversions (libgcc soft-float) as an oracle.
#if defined(__aarch64__) && !defined(__clang__)
using CompilerHalf = __fp16;  // g++ 12 has _Float16 only in C on aarch64
#else
using CompilerHalf = _Float16;
#endif
TEST(Fp16, MatchesCompilerFloat16) {
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 65521) {
    const float f = std::bit_cast<float>(uint32_t(bits));
    if (std::isnan(f)) continue;
    const CompilerHalf ref = static_cast<CompilerHalf>(f);
    ASSERT_EQ(f32_to_fp16(f), std::bit_cast<uint16_t>(ref)) << f;
  }
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float ref = static_cast<float>(std::bit_cast<CompilerHalf>(uint16_t(h)));
    if (std::isnan(ref)) continue;
    ASSERT_EQ(std::bit_cast<uint32_t>(fp16_to_f32(uint16_t(h))), std::bit_cast<uint32_t>(ref)) << h;
  }
}
#endif

TEST(Bf16, Exact) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(bf16_to_f32(0x3eab), std::bit_cast<float>(0x3eab0000u));
  EXPECT_TRUE(std::isinf(bf16_to_f32(0x7f80)));
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7fc0)));
  EXPECT_TRUE(std::signbit(bf16_to_f32(0x8000)));
}

TEST(Bf16, RoundToNearestEven) {
  EXPECT_EQ(f32_to_bf16_rne(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_rne(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16_rne(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16_rne(std::bit_cast<float>(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(f32_to_bf16_rne(std::bit_cast<float>(0xbf807fffu)), 0xbf80);  // below the tie
  EXPECT_EQ(f32_to_bf16_rne(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // rounds to inf
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16_rne(std::bit_cast<float>(0x7f800001u)))));
  // Exact BF16 values come back unchanged, as truncation gives them.
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    if (!std::isnan(bf16_to_f32(uint16_t(h)))) {
      ASSERT_EQ(f32_to_bf16_rne(bf16_to_f32(uint16_t(h))), h) << h;
    }
  }
}

TEST(Q8_0, QuantizesAsLlamaCppReference) {
  std::mt19937 rng(3);
  std::normal_distribution<float> v(0.0f, 2.0f);
  std::vector<float> x(96);
  for (float& f : x) f = v(rng);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
  x[70] = -9.5f;                                       // the third block's absmax, negative
  std::vector<BlockQ8_0> q(3);
  quantize_q8_0_row(x.data(), 96, q.data());
  for (int b = 0; b < 3; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[size_t(b * 32 + j)]));
    const float d = amax / 127.0f;
    EXPECT_EQ(q[size_t(b)].d, f32_to_fp16(d)) << b;
    for (int j = 0; j < 32; ++j) {
      const float want = d != 0 ? std::round(x[size_t(b * 32 + j)] * (1.0f / d)) : 0.0f;
      EXPECT_EQ(q[size_t(b)].qs[j], int8_t(want)) << b << " " << j;
      // Within half a step of the value (plus the fp16 rounding of d).
      EXPECT_NEAR(q8_0_value(q.data(), b * 32 + j), x[size_t(b * 32 + j)], 0.5f * d + 127 * d / 1024)
          << b << " " << j;
    }
  }
  EXPECT_EQ(q[2].qs[70 - 64], -127);
  EXPECT_EQ(q[1].d, 0);
}

// Rows that are not whole blocks, and non-finite values, are errors.
template <class Block>
void refuses_bad_rows(void (*quantize)(const float*, int64_t, Block*), int64_t block) {
  std::vector<float> x(size_t(2 * block), 1.0f);
  std::vector<Block> q(2);
  EXPECT_THROW(quantize(x.data(), block + block / 2, q.data()), Error);
  EXPECT_THROW(quantize(x.data(), 0, q.data()), Error);
  x[size_t(block + 3)] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(quantize(x.data(), 2 * block, q.data()), Error);
  x[size_t(block + 3)] = std::nanf("");
  EXPECT_THROW(quantize(x.data(), 2 * block, q.data()), Error);
}

TEST(Q8_0, RefusesBadRows) { refuses_bad_rows(quantize_q8_0_row, QK8_0); }
TEST(Q6_K, RefusesBadRows) { refuses_bad_rows(quantize_q6_k_row, QK_K); }

TEST(Q8_0, ActivationsKeepTheirF32Scale) {
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 32) - 10.5f;
  x[40] = std::nanf("");  // a NaN activation becomes 0, not undefined behaviour
  std::vector<ActQ8> a(2);
  quantize_act_q8(x.data(), 64, a.data());
  EXPECT_EQ(a[0].d, 20.5f / 127.0f);  // f32, not rounded to fp16
  EXPECT_EQ(a[0].qs[31], 127);
  EXPECT_EQ(a[0].qs[0], int8_t(std::round(-10.5f * (1.0f / a[0].d))));
  for (int j = 0; j < 32; ++j) {
    EXPECT_GE(a[1].qs[j], -127);
    EXPECT_LE(a[1].qs[j], 127);
  }
  EXPECT_EQ(a[1].qs[8], 0);
}

// The Q6_K layout as llama.cpp's dequantize_row_q6_K walks it: per half of
// 128 values, four runs of 32 whose nibbles come from ql[l] (low, high) and
// ql[l + 32] (low, high) and whose top bits are qh[l]'s pairs 0-1, 2-3,
// 4-5, 6-7; the scale of value i is scales[i / 16].
TEST(Q6_K, CodesFollowLlamaCppLayout) {
  std::mt19937 rng(11);
  BlockQ6_K b;
  for (uint8_t& v : b.ql) v = uint8_t(rng());
  for (uint8_t& v : b.qh) v = uint8_t(rng());
  for (int8_t& v : b.scales) v = int8_t(rng());
  b.d = f32_to_fp16(0.03125f);
  for (int half = 0; half < 2; ++half)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* ql = b.ql + 64 * half;
      const uint8_t h = b.qh[32 * half + l];
      const int want[4] = {((ql[l] & 0xF) | ((h & 3) << 4)) - 32, ((ql[l + 32] & 0xF) | (((h >> 2) & 3) << 4)) - 32,
                           ((ql[l] >> 4) | (((h >> 4) & 3) << 4)) - 32, ((ql[l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32};
      for (int j = 0; j < 4; ++j) {
        const int i = 128 * half + 32 * j + l;
        ASSERT_EQ(q6_k_code(b, i), want[j]) << i;
        EXPECT_EQ(q6_k_value(&b, i), 0.03125f * float(b.scales[8 * half + 2 * j + l / 16] * want[j])) << i;
      }
    }
}

TEST(Q6_K, QuantizesWithinHalfAStepOfItsGroupScale) {
  std::mt19937 rng(5);
  std::normal_distribution<float> v(0.0f, 1.0f);
  std::vector<float> x(3 * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = v(rng) * (i < 256 ? 0.01f : 3.0f);
  std::fill(x.begin() + 256 + 32, x.begin() + 256 + 48, 0.0f);  // an all-zero group
  x[600] = -40.0f;                                                // one outlier
  std::vector<BlockQ6_K> q(3);
  quantize_q6_k_row(x.data(), int64_t(x.size()), q.data());
  double err2 = 0, x2 = 0;
  for (int64_t i = 0; i < int64_t(x.size()); ++i) {
    const BlockQ6_K& b = q[size_t(i / 256)];
    const float step = std::fabs(fp16_to_f32(b.d) * float(b.scales[(i % 256) / 16]));
    const float got = q6_k_value(q.data(), i);
    // Half a step, unless the code saturated at -32 or 31 (the group's
    // largest value, when its int8 scale was rounded down).
    const int code = q6_k_code(b, int(i % 256));
    if (code > -32 && code < 31) {
      EXPECT_LE(std::fabs(got - x[size_t(i)]), 0.5f * step * 1.001f + 1e-12f) << i;
    }
    err2 += double(got - x[size_t(i)]) * double(got - x[size_t(i)]);
    x2 += double(x[size_t(i)]) * double(x[size_t(i)]);
  }
  for (int i = 256 + 32; i < 256 + 48; ++i) EXPECT_EQ(q6_k_value(q.data(), i), 0.0f) << i;
  // 6 bits on Gaussian groups: a step of max/32, an RMS error of about 2%.
  EXPECT_LT(std::sqrt(err2 / x2), 0.03);
  EXPECT_NEAR(q6_k_value(q.data(), 600), -40.0f, 0.5f);
}

TEST(Q6_K, RowDequantizeEqualsElementValues) {
  // Random bytes: every code, scale sign and fp16 d (finite) the format holds.
  std::mt19937 rng(11);
  std::vector<BlockQ6_K> q(3);
  for (BlockQ6_K& b : q) {
    auto* p = reinterpret_cast<uint8_t*>(&b);
    for (size_t i = 0; i < sizeof b; ++i) p[i] = uint8_t(rng());
    b.d = uint16_t(rng() % 0x7C00);  // positive finite fp16
  }
  q[2].d = 0x8000 | q[2].d;  // a negative d too
  std::vector<float> out(3 * 256, -1.0f);
  dequantize_q6_k_row(q.data(), 3 * 256, out.data());
  for (int64_t i = 0; i < 3 * 256; ++i) EXPECT_EQ(out[size_t(i)], q6_k_value(q.data(), i)) << i;
}

TEST(DenseTypes, OneListNamesEveryHeadType) {
  EXPECT_EQ(dense_type_names(), "F32, F16, BF16, Q8_0 or Q6_K");
  for (gguf::TensorType t : kDenseTypes) EXPECT_TRUE(is_dense_type(t));
  for (gguf::TensorType t : {gguf::TensorType::TQ2_0, gguf::TensorType::TQ1_0, gguf::TensorType::Q4_K,
                             gguf::TensorType::Q8_K, gguf::TensorType::I2_S})
    EXPECT_FALSE(is_dense_type(t)) << gguf::traits(t).name;
}

TEST(Q6_K, ZeroBlockIsAllZero) {
  std::vector<float> x(256, 0.0f);
  BlockQ6_K q;
  std::memset(&q, 0xAB, sizeof q);
  quantize_q6_k_row(x.data(), 256, &q);
  EXPECT_EQ(q.d, 0);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(q6_k_value(&q, i), 0.0f);
}

TEST(Q6_K, ActivationsPer256Values) {
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 256) - 100.5f;
  x[300] = std::nanf("");
  std::vector<ActQ8K> a(2);
  quantize_act_q8k(x.data(), 512, a.data());
  EXPECT_EQ(a[0].d, 154.5f / 127.0f);
  EXPECT_EQ(a[0].qs[255], 127);
  EXPECT_EQ(a[0].qs[0], int8_t(std::round(-100.5f * (1.0f / a[0].d))));
  EXPECT_EQ(a[1].qs[300 - 256], 0);
}

// The load-time scan for infinities and NaNs: the first bad element, found
// at every position that matters to a blocked, vectorized scan (first and
// last of a block, either side of a block boundary, the tail of a length
// that is no multiple of the block), for each float type, and none in
// clean data of the same lengths.
TEST(FindNonfinite, FirstBadElementOfEachFloatType) {
  const float bad[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::quiet_NaN()};
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    const size_t es = t == TensorType::F32 ? 4 : 2;
    for (int64_t n : {1, 63, 1024, 1025, 3000}) {
      std::vector<uint8_t> data(size_t(n) * es);
      std::mt19937 rng{uint32_t(n)};
      std::uniform_real_distribution<float> u(-65000.0f, 65000.0f);  // finite in F16 too
      const auto put = [&](int64_t i, float v) {
        if (t == TensorType::F32) std::memcpy(&data[size_t(i) * es], &v, 4);
        else {
          const uint16_t h = t == TensorType::F16 ? f32_to_fp16(v) : f32_to_bf16_rne(v);
          std::memcpy(&data[size_t(i) * es], &h, 2);
        }
      };
      for (int64_t i = 0; i < n; ++i) put(i, u(rng));
      EXPECT_EQ(find_nonfinite(t, data.data(), n), -1) << gguf::traits(t).name << " n=" << n;
      for (int64_t at : {int64_t(0), int64_t(1023), int64_t(1024), n - 1}) {
        if (at >= n) continue;
        for (float b : bad) {
          const std::vector<uint8_t> clean = data;
          put(at, b);
          if (at + 1 < n) put(n - 1, b);  // a later one must not be reported first
          EXPECT_EQ(find_nonfinite(t, data.data(), n), at) << gguf::traits(t).name << " n=" << n << " at=" << at;
          data = clean;
        }
      }
    }
  }
}
