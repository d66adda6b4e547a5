// Group-scaled kernels (kernels.h GroupGemmI8 / GroupGemmF32) on PQ2_0 and
// Q2_0 rows: the codec round trip, the scalar set against the weights'
// values computed in double from the codes (code 3, +2d, included), the
// documented combination order reproduced independently, and every set's
// kernels against scalar bit for bit, on one group and many, one token and
// a batch of 1- to 3-digit tokens, and row ranges.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "tern/error.h"
#include "tern/kernels.h"
#include "tern/quant.h"
#include "tern/quant_group.h"

namespace tern {
namespace {

struct Group {
  GroupMatrix m;
  std::vector<int8_t> v;       // [rows][cols] values c - 1
  std::vector<float> d;        // [rows][cols / group] scales as stored
  std::vector<uint8_t> bytes;  // the blocks
};

Group make_group(gguf::TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(0, 3);
  std::uniform_real_distribution<float> sc(0.001f, 2.0f);
  Group g;
  const int group = group_size(type);
  const int64_t G = cols / group, rb = G * group_block_bytes(group);
  g.v.resize(size_t(rows * cols));
  g.bytes.resize(size_t(rows * rb));
  std::vector<uint16_t> h(static_cast<size_t>(G));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < cols; ++k) g.v[size_t(r * cols + k)] = int8_t(code(rng) - 1);
    for (int64_t j = 0; j < G; ++j) {
      h[size_t(j)] = f32_to_fp16(j == 1 ? 0.0f : sc(rng));  // a zero scale in every row that has two groups
      g.d.push_back(fp16_to_f32(h[size_t(j)]));
    }
    pack_q2_group_row(&g.v[size_t(r * cols)], cols, group, h.data(), &g.bytes[size_t(r * rb)]);
  }
  g.m = GroupMatrix{type, rows, cols, group, g.bytes.data()};
  return g;
}

TEST(GroupCodec, RoundTripsEveryCodeAndScale) {
  for (gguf::TensorType t : {gguf::TensorType::PQ2_0, gguf::TensorType::Q2_0}) {
    const Group g = make_group(t, 3, 256, 1);
    const int group = group_size(t);
    EXPECT_EQ(gguf::row_bytes(t, 256), uint64_t(256 / group * group_block_bytes(group)));
    std::vector<int8_t> v(256);
    std::vector<uint16_t> d(static_cast<size_t>(256 / group));
    std::vector<float> f(256);
    for (int64_t r = 0; r < 3; ++r) {
      const uint8_t* row = g.bytes.data() + r * int64_t(gguf::row_bytes(t, 256));
      unpack_q2_group_row(row, 256, group, v.data(), d.data());
      dequantize_q2_group_row(row, 256, group, f.data());
      for (int k = 0; k < 256; ++k) {
        ASSERT_EQ(v[size_t(k)], g.v[size_t(r * 256 + k)]);
        ASSERT_EQ(f[size_t(k)], float(v[size_t(k)]) * g.d[size_t(r * (256 / group) + k / group)]);
      }
    }
  }
  // The layout is ggml's block_q2_0: d first, weight j in bits 2(j % 4) of qs[j / 4].
  const int8_t v[64] = {-1, 0, 1, 2};
  const uint16_t d = 0x3c00;
  uint8_t b[18];
  pack_q2_group_row(v, 64, 64, &d, b);
  EXPECT_EQ(b[0], 0x00);
  EXPECT_EQ(b[1], 0x3c);
  EXPECT_EQ(b[2], 0b11100100);
  EXPECT_EQ(b[3], 0b01010101);
}

// PrismML's PTQ1_0 encoder (ggml-quants.c quantize_row_ptq1_0_ref), from
// trits t in {0, 1, 2}: bytes of 5 trits over 16 and then 8 positions
// (the first value the most significant digit), then qh, 4 trits and a
// zero digit, each byte ceil(v * 256 / 243).
BlockPTQ1_0 encode_ptq1_0(const uint8_t t[128], uint16_t d) {
  BlockPTQ1_0 b{};
  const uint8_t* x = t;
  size_t j = 0;
  for (size_t c : {16u, 8u}) {
    for (size_t m = 0; m < c; ++m) {
      unsigned q = 0;
      for (size_t n = 0; n < 5; ++n) q = q * 3 + x[m + n * c];
      b.qs[j + m] = uint8_t((q * 256 + 242) / 243);
    }
    j += c;
    x += 5 * c;
  }
  for (size_t h = 0; h < 2; ++h) {
    unsigned q = 0;
    for (size_t m = 0; m < 4; ++m) q = q * 3 + x[h + m * 2];
    b.qh[h] = uint8_t((q * 3 * 256 + 242) / 243);
  }
  b.d = d;
  return b;
}

TEST(GroupCodec, Ptq1_0DecodesPrismMLsEncoding) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> trit(0, 2);
  for (int rep = 0; rep < 200; ++rep) {
    uint8_t t[128];
    for (auto& x : t) x = uint8_t(rep == 0 ? 0 : rep == 1 ? 2 : trit(rng));  // all -1, all +1, random
    const BlockPTQ1_0 b = encode_ptq1_0(t, 0x3c00);
    uint8_t codes[128];
    ptq1_0_codes(b, codes);
    for (int e = 0; e < 128; ++e) ASSERT_EQ(codes[e], t[e]) << "element " << e << ", block " << rep;
  }
  // One byte by hand: trits 2,1,0,2,1 (most significant first) are 2*81 +
  // 27 + 0 + 6 + 1 = 196, stored as ceil(196 * 256 / 243) = 207.
  uint8_t t[128] = {};
  t[0] = 2, t[16] = 1, t[32] = 0, t[48] = 2, t[64] = 1;
  EXPECT_EQ(encode_ptq1_0(t, 0).qs[0], 207);
  // Every byte value decodes to trits 0..2: no PTQ1_0 byte is out of range.
  BlockPTQ1_0 any{};
  for (int v = 0; v < 256; ++v) {
    std::memset(any.qs, v, sizeof any.qs);
    std::memset(any.qh, v, sizeof any.qh);
    uint8_t codes[128];
    ptq1_0_codes(any, codes);
    for (uint8_t c : codes) ASSERT_LE(c, 2) << "byte " << v;
  }
}

TEST(GroupCodec, ConvertedTypesAreExactlyPq2_0) {
  std::mt19937 rng(8);
  std::uniform_int_distribution<int> trit(0, 2), bit(0, 1);
  const int64_t n = 384;  // three groups
  const uint16_t d[3] = {0x3c00, 0x2e66, 0xb800};
  std::vector<uint8_t> ptq(3 * sizeof(BlockPTQ1_0)), q1(3 * sizeof(BlockQ1_0));
  std::vector<int8_t> vt(n), vb(n);
  for (int g = 0; g < 3; ++g) {
    uint8_t t[128];
    BlockQ1_0 b{};
    b.d = d[g];
    for (int j = 0; j < 128; ++j) {
      t[j] = uint8_t(trit(rng));
      vt[size_t(g * 128 + j)] = int8_t(t[j] - 1);
      const int s = bit(rng);
      b.qs[j / 8] |= uint8_t(s << (j % 8));  // set: +d
      vb[size_t(g * 128 + j)] = int8_t(s ? 1 : -1);
    }
    const BlockPTQ1_0 p = encode_ptq1_0(t, d[g]);
    std::memcpy(ptq.data() + g * sizeof p, &p, sizeof p);
    std::memcpy(q1.data() + g * sizeof b, &b, sizeof b);
  }
  for (auto [type, src, want] : {std::tuple{gguf::TensorType::PTQ1_0, &ptq, &vt},
                                 std::tuple{gguf::TensorType::Q1_0, &q1, &vb}}) {
    ASSERT_TRUE(converts_to_pq2_0(type));
    EXPECT_EQ(gguf::row_bytes(type, uint64_t(n)), src->size());
    std::vector<uint8_t> pq(gguf::row_bytes(gguf::TensorType::PQ2_0, uint64_t(n)));
    convert_row_to_pq2_0(type, src->data(), n, pq.data());
    std::vector<int8_t> v(n);
    uint16_t dd[3];
    unpack_q2_group_row(pq.data(), n, 128, v.data(), dd);
    EXPECT_EQ(v, *want) << gguf::traits(type).name;
    for (int g = 0; g < 3; ++g) EXPECT_EQ(dd[g], d[g]);
    // A scale that is not finite is found where it is, d last or first.
    std::vector<uint8_t> bad = *src;
    const size_t at = type == gguf::TensorType::PTQ1_0 ? sizeof(BlockPTQ1_0) + 26 : sizeof(BlockQ1_0);
    bad[at] = 0x00, bad[at + 1] = 0x7c;  // +inf in group 1
    EXPECT_EQ(find_nonfinite(type, bad.data(), n), 128);
    EXPECT_EQ(find_nonfinite(type, src->data(), n), -1);
  }
  EXPECT_THROW(convert_row_to_pq2_0(gguf::TensorType::PQ2_0, ptq.data(), n, ptq.data()), Error);
}

// Token i's int8 digits and what they stand for.
struct Acts {
  std::vector<int8_t> q;  // [nq][cols]
  std::vector<int> digits;
  std::vector<float> scale;
  std::vector<double> value;  // [n][cols]
};
Acts make_acts(int64_t n, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> x(-127, 127);
  Acts a;
  for (int64_t i = 0; i < n; ++i) {
    const int d = 1 + int(i % 3);
    a.digits.push_back(d);
    a.scale.push_back(float(37 + i));
    std::vector<int64_t> num(static_cast<size_t>(cols), 0);
    for (int j = 0; j < d; ++j)
      for (int64_t k = 0; k < cols; ++k) {
        const int8_t q = int8_t(x(rng));
        a.q.push_back(q);
        num[size_t(k)] = 255 * num[size_t(k)] + q;
      }
    for (int64_t k = 0; k < cols; ++k) a.value.push_back(double(num[size_t(k)]) / a.scale.back());
  }
  return a;
}

TEST(GroupKernels, ScalarIsTheDocumentedArithmetic) {
  for (gguf::TensorType t : {gguf::TensorType::PQ2_0, gguf::TensorType::Q2_0}) {
    for (int64_t cols : {int64_t(group_size(t)), int64_t(1024)}) {
      const Group g = make_group(t, 9, cols, uint32_t(cols));
      const Acts a = make_acts(4, cols, 7);
      const int64_t M = 9, G = g.m.groups();
      std::vector<float> y(size_t(4 * M));
      scalar_kernels().group_gemm_i8(g.m, a.q.data(), 4, a.digits.data(), a.scale.data(), y.data(), M, 0, M);
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t r = 0; r < M; ++r) {
          // kernels.h's order, from the values the codes and digits stand for.
          double acc = 0, exact = 0;
          for (int64_t j = 0; j < G; ++j) {
            double v = 0;  // the group's integer sum, as a double: exact
            for (int64_t k = j * g.m.group; k < (j + 1) * g.m.group; ++k)
              v += g.v[size_t(r * cols + k)] * (a.value[size_t(i * cols + k)] * a.scale[size_t(i)]);
            v = std::round(v);
            acc = std::fma(v, double(g.d[size_t(r * G + j)]), acc);
            exact += v * g.d[size_t(r * G + j)];
          }
          EXPECT_EQ(y[size_t(i * M + r)], float(acc) * (1.0f / a.scale[size_t(i)])) << r;
          EXPECT_NEAR(y[size_t(i * M + r)], exact / a.scale[size_t(i)], 1e-6 * std::fabs(exact) / a.scale[size_t(i)] + 1e-6);
        }
      // Float activations: near the same map.
      std::vector<float> x(size_t(4 * cols));
      for (size_t k = 0; k < x.size(); ++k) x[k] = float(a.value[k]);
      scalar_kernels().group_gemm_f32(g.m, x.data(), 4, y.data(), M, 0, M);
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t r = 0; r < M; ++r) {
          double want = 0, mag = 0;
          for (int64_t k = 0; k < cols; ++k) {
            const double w = g.v[size_t(r * cols + k)] * double(g.d[size_t(r * G + k / g.m.group)]);
            want += w * x[size_t(i * cols + k)];
            mag += std::fabs(w * x[size_t(i * cols + k)]);
          }
          EXPECT_NEAR(y[size_t(i * M + r)], want, 1e-5 * mag + 1e-6);
        }
    }
  }
}

// Widths of one group, of partial blocks of eight groups, and (Q2_0) an
// odd number of groups; batches of more int8 vectors than a set takes at once.
TEST(GroupKernels, EverySetMatchesScalarBitForBit) {
  const std::pair<gguf::TensorType, int64_t> shapes[] = {
      {gguf::TensorType::PQ2_0, 128}, {gguf::TensorType::PQ2_0, 512}, {gguf::TensorType::PQ2_0, 1152},
      {gguf::TensorType::Q2_0, 64},   {gguf::TensorType::Q2_0, 320},  {gguf::TensorType::Q2_0, 1088}};
  int ran = 0;
  for (const auto& [type, cols] : shapes) {
    const Group g = make_group(type, 37, cols, uint32_t(cols));
    const Acts a = make_acts(5, cols, 9);  // 1 + 2 + 3 + 1 + 2 = 9 vectors
    std::vector<float> want(5 * 37), got(5 * 37, -1.0f);
    scalar_kernels().group_gemm_i8(g.m, a.q.data(), 5, a.digits.data(), a.scale.data(), want.data(), 37, 0, 37);
    for (const KernelSet* k : all_kernel_sets()) {
      if (!k->available(cpu_features())) continue;
      // In two row ranges, as threads split them.
      group_gemm_i8_of(*k)(g.m, a.q.data(), 5, a.digits.data(), a.scale.data(), got.data(), 37, 0, 13);
      group_gemm_i8_of(*k)(g.m, a.q.data(), 5, a.digits.data(), a.scale.data(), got.data(), 37, 13, 37);
      EXPECT_EQ(got, want) << k->name << " " << gguf::traits(type).name << " " << cols;
      // Each token alone (1, 2 and 3 digits: the decode kernels) gets what
      // it gets in the batch, over whole and split row ranges.
      const int8_t* q = a.q.data();
      for (int i = 0; i < 5; ++i) {
        std::vector<float> one(37, -1.0f);
        group_gemm_i8_of(*k)(g.m, q, 1, &a.digits[size_t(i)], &a.scale[size_t(i)], one.data(), 37, 0, 5);
        group_gemm_i8_of(*k)(g.m, q, 1, &a.digits[size_t(i)], &a.scale[size_t(i)], one.data(), 37, 5, 37);
        EXPECT_TRUE(std::equal(one.begin(), one.end(), want.begin() + 37 * i))
            << k->name << " " << gguf::traits(type).name << " " << cols << " token " << i;
        q += a.digits[size_t(i)] * cols;
      }
      ++ran;
    }
  }
  EXPECT_GE(ran, 6);
}

// Prompt batches (16+ tokens: the tiled kernels, which block rows by 32)
// over 70 rows split at 16 and 48, as the thread pool splits them, and
// numbers of int8 vectors that are not a multiple of a pass's six.
TEST(GroupKernels, PromptBatchesMatchScalarBitForBit) {
  const std::pair<gguf::TensorType, int64_t> shapes[] = {
      {gguf::TensorType::PQ2_0, 128}, {gguf::TensorType::PQ2_0, 1152}, {gguf::TensorType::Q2_0, 64},
      {gguf::TensorType::Q2_0, 1088}};
  const int64_t M = 70;
  for (const auto& [type, cols] : shapes)
    for (int64_t n : {16, 23}) {
      const Group g = make_group(type, M, cols, uint32_t(cols + n));
      const Acts a = make_acts(n, cols, uint32_t(n));
      std::vector<float> want(size_t(n * M)), got(size_t(n * M), -1.0f);
      scalar_kernels().group_gemm_i8(g.m, a.q.data(), n, a.digits.data(), a.scale.data(), want.data(), M, 0, M);
      for (const KernelSet* k : all_kernel_sets()) {
        if (!k->available(cpu_features())) continue;
        for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, 16}, {16, 48}, {48, M}})
          group_gemm_i8_of(*k)(g.m, a.q.data(), n, a.digits.data(), a.scale.data(), got.data(), M, r0, r1);
        EXPECT_EQ(got, want) << k->name << " " << gguf::traits(type).name << " " << cols << " tokens " << n;
      }
    }
}

// The largest sums the format allows: every code 3 (+2d) against digits of
// +-127, so every int32 lane and every group sum is at its bound.
TEST(GroupKernels, ExtremeCodesAndDigitsStayExact) {
  for (gguf::TensorType type : {gguf::TensorType::PQ2_0, gguf::TensorType::Q2_0}) {
    const int64_t rows = 9, cols = 1024;
    Group g = make_group(type, rows, cols, 3);
    const int group = group_size(type);
    const int64_t bb = group_block_bytes(group);
    for (int64_t b = 0; b < int64_t(g.bytes.size()) / bb; ++b)
      std::memset(&g.bytes[size_t(b * bb + 2)], 0xff, size_t(group / 4));  // code 3 everywhere
    for (int sign : {1, -1})
      for (int nd = 1; nd <= 3; ++nd) {
        std::vector<int8_t> q(size_t(nd * cols), int8_t(127 * sign));
        const float scale = 1.0f;
        std::vector<float> want(rows), got(rows, -1.0f);
        scalar_kernels().group_gemm_i8(g.m, q.data(), 1, &nd, &scale, want.data(), rows, 0, rows);
        for (const KernelSet* k : all_kernel_sets()) {
          if (!k->available(cpu_features())) continue;
          group_gemm_i8_of(*k)(g.m, q.data(), 1, &nd, &scale, got.data(), rows, 0, rows);
          EXPECT_EQ(got, want) << k->name << " " << gguf::traits(type).name << " digits " << nd;
        }
      }
    // The same as batches (the prompt kernels, short and tiled): tokens of
    // 1, 2 and 3 digits.
    for (int n : {3, 18}) {
      std::vector<int> digits;
      for (int i = 0; i < n; ++i) digits.push_back(1 + i % 3);
      const std::vector<float> scales(size_t(n), 1.0f);
      std::vector<int8_t> q(size_t(2 * n * cols));
      for (size_t j = 0; j < q.size(); ++j) q[j] = int8_t(j / cols % 2 ? -127 : 127);
      std::vector<float> want(size_t(n * rows)), got(size_t(n * rows), -1.0f);
      scalar_kernels().group_gemm_i8(g.m, q.data(), n, digits.data(), scales.data(), want.data(), rows, 0, rows);
      for (const KernelSet* k : all_kernel_sets()) {
        if (!k->available(cpu_features())) continue;
        group_gemm_i8_of(*k)(g.m, q.data(), n, digits.data(), scales.data(), got.data(), rows, 0, rows);
        EXPECT_EQ(got, want) << k->name << " " << gguf::traits(type).name << " batch of " << n;
      }
    }
  }
}

TEST(GroupKernels, BadCallsAreErrors) {
  Group g = make_group(gguf::TensorType::Q2_0, 4, 128, 5);
  const Acts a = make_acts(1, 128, 1);
  std::vector<float> y(4);
  const auto call = [&](const GroupMatrix& m, int64_t r1) {
    scalar_kernels().group_gemm_i8(m, a.q.data(), 1, a.digits.data(), a.scale.data(), y.data(), 4, 0, r1);
  };
  EXPECT_THROW(call(g.m, 5), Error);
  GroupMatrix wrong = g.m;
  wrong.group = 128;  // Q2_0 is 64
  EXPECT_THROW(call(wrong, 4), Error);
  wrong = g.m;
  wrong.cols = 96;
  EXPECT_THROW(call(wrong, 4), Error);
}

}  // namespace
}  // namespace tern
