// What is particular to the AVX-512 kernel sets (avx512-vnni, avx512-pext):
// exact int8 sums past float's mantissa and across segments, their layouts'
// refusals, the default choice and TQ2_0's code 3. Shapes, ranges, batches,
// prepared and unprepared, against the scalar oracle are the shared suite's
// (test_every_set.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../../kernels/code_layout.h"
#include "tern/error.h"
#include "tern/kernels.h"
#include "tern/quant.h"
#include "kernel_test_util.h"

using namespace tern;
using namespace tern::test;
using gguf::TensorType;

namespace {

void prepare(Matrix& m, const KernelSet& ks) {
  ASSERT_NE(ks.prepare, nullptr) << ks.name;
  m.packed = ks.prepare(m.w);
  m.w.packed = m.packed.get();
}

// The set, or a skip when this build or CPU cannot run it.
#define REQUIRE_SET(var, name)                                                          \
  const KernelSet* var = find_set(name);                                                \
  if (var == nullptr) GTEST_SKIP() << name << " is not built for this architecture";   \
  if (!var->available(cpu_features())) GTEST_SKIP() << "CPU lacks " << name << ": " \
                                                    << cpu_features().summary()

constexpr TensorType kTypes[] = {TensorType::TQ2_0, TensorType::TQ1_0};
constexpr const char* kSets[] = {"avx512-vnni", "avx512-pext"};

}  // namespace

// Sums past 2^24 in magnitude: float accumulation would round them, so the
// pext set's int8 path must sum such rows in exact segments.
TEST(Avx512, Int8ExactBeyondFloatMantissa) {
  const int64_t K = 132352;  // 517 blocks; 127 * K > 2^24
  std::vector<int8_t> q(static_cast<size_t>(K), 127);
  q[5] = 126;  // an odd total, not representable as a float
  int ran = 0;
  for (const char* name : kSets) {
    const KernelSet* ks = find_set(name);
    if (ks == nullptr || !ks->available(cpu_features())) continue;
    for (TensorType type : kTypes) {
      Matrix m = make_matrix(type, 2, K, Rows::Plus, 9);  // all +1
      prepare(m, *ks);
      int32_t s[2] = {0, 0};
      ks->gemm_i8(m.w, q.data(), 1, s, 0, 2);
      EXPECT_EQ(s[0], 127 * K - 1) << name;
      EXPECT_EQ(s[1], 127 * K - 1) << name;
      ++ran;
    }
  }
  if (ran == 0) GTEST_SKIP() << "no AVX-512 kernel set available here";
}

// The VNNI loops sum in int32 lanes that would wrap on long rows, so they
// work in segments (8192 chunks of TQ2_0, 1024 groups of TQ1_0); a row of
// 2^21 + 768 columns crosses segment ends in both layouts, with sums near
// the int32 limit of the scalar oracle's range.
TEST(Avx512, VnniExactAcrossSegments) {
  REQUIRE_SET(vnni, "avx512-vnni");
  const int64_t K = (int64_t(1) << 21) + 768, M = 5;
  for (TensorType type : kTypes)
    for (Rows rows : {Rows::Plus, Rows::Minus, Rows::Mixed}) {
      Matrix m = make_matrix(type, M, K, rows, 21);
      prepare(m, *vnni);
      for (int fill : {127, -128, 0}) {
        auto q = fill ? std::vector<int8_t>(size_t(K), int8_t(fill)) : random_int8(K, 22);
        std::vector<int32_t> want(static_cast<size_t>(M)), got(static_cast<size_t>(M));
        scalar_kernels().gemm_i8(m.w, q.data(), 1, want.data(), 0, M);
        vnni->gemm_i8(m.w, q.data(), 1, got.data(), 0, M);
        EXPECT_EQ(got, want) << "type " << int(type) << " rows " << int(rows) << " q " << fill;
      }
      // Prompt batches take the other loop of each layout.
      const auto q2 = random_int8(2 * K, 23);
      std::vector<int32_t> want(static_cast<size_t>(2 * M)), got(static_cast<size_t>(2 * M));
      scalar_kernels().gemm_i8(m.w, q2.data(), 2, want.data(), 0, M);
      vnni->gemm_i8(m.w, q2.data(), 2, got.data(), 0, M);
      EXPECT_EQ(got, want) << "type " << int(type) << " rows " << int(rows) << " n 2";
    }
}

// Decode on a prepared matrix sums whole row groups in one loop when a row
// is one segment: the longest such rows (2^21 columns of TQ2_0, 1024
// groups of TQ1_0), all extremes, over two whole groups and a range that
// starts and ends inside one.
TEST(Avx512, VnniDecodeExactOnTheLongestOneSegmentRows) {
  REQUIRE_SET(vnni, "avx512-vnni");
  const int64_t M = 10;
  for (auto [type, K] : {std::pair{TensorType::TQ2_0, int64_t(1) << 21}, {TensorType::TQ1_0, int64_t(1024 * 320)}})
    for (Rows rows : {Rows::Plus, Rows::Minus, Rows::Mixed}) {
      Matrix m = make_matrix(type, M, K, rows, 24);
      prepare(m, *vnni);
      for (int fill : {127, -128, 0}) {
        auto q = fill ? std::vector<int8_t>(size_t(K), int8_t(fill)) : random_int8(K, 25);
        for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, M}, {3, 9}}) {
          std::vector<int32_t> want(size_t(M), -7), got(size_t(M), -7);
          scalar_kernels().gemm_i8(m.w, q.data(), 1, want.data(), r0, r1);
          vnni->gemm_i8(m.w, q.data(), 1, got.data(), r0, r1);
          EXPECT_EQ(got, want) << "type " << int(type) << " rows " << int(rows) << " q " << fill << " from "
                               << r0;
        }
      }
    }
}

TEST(Avx512, RejectsForeignPreparedLayout) {
  REQUIRE_SET(vnni, "avx512-vnni");
  const KernelSet* pext = find_set("avx512-pext");
  Matrix m = make_matrix(TensorType::TQ2_0, 4, 512, Rows::Mixed, 1);
  std::vector<int8_t> q(512, 1);
  std::vector<int32_t> s(4);
  // Prepared for a different shape.
  Matrix other = make_matrix(TensorType::TQ2_0, 5, 512, Rows::Mixed, 1);
  prepare(other, *vnni);
  m.w.packed = other.packed.get();
  EXPECT_THROW(vnni->gemm_i8(m.w, q.data(), 1, s.data(), 0, 4), Error);
  if (pext && pext->available(cpu_features())) {
    prepare(m, *pext);  // pext's layout handed to vnni
    EXPECT_THROW(vnni->gemm_i8(m.w, q.data(), 1, s.data(), 0, 4), Error);
    prepare(m, *vnni);
    EXPECT_THROW(pext->gemm_i8(m.w, q.data(), 1, s.data(), 0, 4), Error);
  }
  EXPECT_THROW(vnni->gemm_i8(m.w, q.data(), 1, s.data(), 0, 5), Error);  // bad range
}

TEST(Avx512, DefaultSelection) {
  REQUIRE_SET(vnni, "avx512-vnni");
  REQUIRE_SET(pext, "avx512-pext");
  const KernelSet* amx = find_set("avx512-amx");
  const bool tiles = amx && amx->available(cpu_features());
  EXPECT_STREQ(select_kernels("", ActMode::Int8).name, tiles ? "avx512-amx" : "avx512-vnni");
  EXPECT_STREQ(select_kernels("auto", ActMode::Float).name, "avx512-pext");
}

// avx512-vnni reads TQ1_0 in base 3 only: a TQ1_0 matrix repacked to 2-bit
// codes is another arrangement, refused with both named (layout.h).
TEST(Avx512, Tq1InTwoBitCodesIsRefused) {
  REQUIRE_SET(vnni, "avx512-vnni");
  Matrix m = make_matrix(TensorType::TQ1_0, 33, 256, Rows::Mixed, 3);
  m.packed = kernels_detail::pack_codes(m.w, kernels_detail::CodeLayout::Chunk64);
  m.w.packed = m.packed.get();
  std::vector<int32_t> out(33);
  const auto q = random_int8(256, 4);
  try {
    vnni->gemm_i8(m.w, q.data(), 1, out.data(), 0, 33);
    ADD_FAILURE() << "a chunk64 layout was read as base 3";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds a chunk64 layout for 33x256 TQ1_0; this kernel reads base3x64"),
              std::string::npos)
        << e.what();
  }
  // Base 3 has no room for TQ2_0's code 3, so it is refused for TQ2_0.
  const Matrix t2 = make_matrix(TensorType::TQ2_0, 2, 256, Rows::Mixed, 1);
  EXPECT_THROW(kernels_detail::pack_codes(t2.w, kernels_detail::CodeLayout::Base3x64), Error);
}

// TQ2_0's non-trit code 3 (loaders reject it) reads as +2 in scalar; the
// VNNI set agrees, since it multiplies codes and subtracts sum(q). The pext
// set counts it as +1 (its masks only know +1, 0 and -1) and is not checked.
TEST(Avx512, VnniTq2CodeThreeCountsAsTwo) {
  REQUIRE_SET(vnni, "avx512-vnni");
  Matrix m = make_matrix(TensorType::TQ2_0, 5, 512, Rows::Mixed, 8);
  m.data[3] = 0xff;  // row 0: columns 3, 35, 67, 99 get code 3
  m.data[66 + 32 + 10] |= 0xc0;  // row 0, block 1, byte 10 of its second half: column 490
  const auto q = random_int8(512, 9);
  for (bool prepared : {true, false}) {
    if (prepared) prepare(m, *vnni);
    std::vector<int32_t> want(5), got(5);
    scalar_kernels().gemm_i8(m.w, q.data(), 1, want.data(), 0, 5);
    vnni->gemm_i8(m.w, q.data(), 1, got.data(), 0, 5);
    EXPECT_EQ(got, want) << (prepared ? "prepared" : "raw");
  }
}

// avx512-amx runs 16-token, 16-row blocks through the tiles and the rest
// through the vnni loops: ranges that start inside a block, token counts on
// and off multiples of 16, sums at both extremes, rows repacked on the fly,
// K = 1280 and 768 (TQ1_0's last base-3 group part full), and TQ2_0's code 3
// (which it decodes as 2, like scalar).
TEST(Avx512, AmxTilesMatchScalar) {
  REQUIRE_SET(amx, "avx512-amx");
  for (TensorType type : kTypes)
    for (int64_t K : {256, 768, 1280, 6912})
      for (Rows rows : {Rows::Mixed, Rows::Plus, Rows::Minus}) {
        const int64_t M = K > 1000 ? 40 : 70;
        Matrix m = make_matrix(type, M, K, rows, uint32_t(K) + int(rows));
        if (rows == Rows::Mixed && type == TensorType::TQ2_0)
          m.data[7] = 0xff;  // row 0: code 3 four times
        for (bool prepared : {true, false}) {
          if (prepared)
            prepare(m, *amx);
          else
            m.w.packed = nullptr;
          for (int64_t n : {16, 32, 37, 50})
            for (int fill : {0, 127, -128}) {
              auto q = fill ? std::vector<int8_t>(size_t(n * K), int8_t(fill))
                            : random_int8(n * K, uint32_t(n));
              std::vector<int32_t> want(size_t(n * M));
              scalar_kernels().gemm_i8(m.w, q.data(), n, want.data(), 0, M);
              for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, M}, {3, M - 2}, {16, 32}}) {
                const int32_t kSent = 0x5a5a5a5a;
                std::vector<int32_t> got(size_t(n * M), kSent);
                amx->gemm_i8(m.w, q.data(), n, got.data(), r0, r1);
                for (int64_t i = 0; i < n; ++i)
                  for (int64_t r = 0; r < M; ++r) {
                    const size_t at = size_t(i * M + r);
                    ASSERT_EQ(got[at], r >= r0 && r < r1 ? want[at] : kSent)
                        << "type " << int(type) << " K " << K << " rows " << int(rows)
                        << (prepared ? " prepared" : " raw") << " n " << n << " q " << fill
                        << " range [" << r0 << "," << r1 << ") vec " << i << " row " << r;
                  }
              }
            }
        }
      }
}

// The tiles sum a whole row in int32 (no segments, up to 2^22 columns):
// a row of 2^21 + 768 columns at the extremes stays exact.
TEST(Avx512, AmxExactOnLongRows) {
  REQUIRE_SET(amx, "avx512-amx");
  const int64_t K = (int64_t(1) << 21) + 768, M = 16, n = 16;
  for (TensorType type : kTypes)
    for (Rows rows : {Rows::Plus, Rows::Minus}) {
      Matrix m = make_matrix(type, M, K, rows, 31);
      prepare(m, *amx);
      for (int fill : {127, -128}) {
        const std::vector<int8_t> q(size_t(n * K), int8_t(fill));
        std::vector<int32_t> got(size_t(n * M));
        amx->gemm_i8(m.w, q.data(), n, got.data(), 0, M);
        const int64_t want = (rows == Rows::Plus ? 1 : -1) * int64_t(fill) * K;
        for (int32_t v : got) ASSERT_EQ(v, want) << "rows " << int(rows) << " q " << fill;
      }
    }
}
