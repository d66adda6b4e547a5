// The dense (output head) kernels of every kernel set this CPU runs: the
// scalar one against a double-precision dot product (Q8_0, Q6_K: of the int8
// activations it multiplies, within their rounding of the floats), every other one
// against scalar bit for bit (kernels.h fixes the summation order, so the
// logits do not depend on the kernel), on F32, F16, BF16, Q8_0 and Q6_K, on widths that
// are and are not multiples of 16, one row and many, one vector and a batch.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "tern/error.h"
#include "tern/kernels.h"
#include "tern/quant.h"

namespace tern {
namespace {

using gguf::TensorType;

struct Dense {
  DenseMatrix m;
  std::vector<uint8_t> bytes;
  std::vector<double> exact;  // the stored values, widened
};

// Values of both signs over several magnitudes; F16 stays in its range.
Dense make_dense(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> v(0.0f, 1.0f);
  std::uniform_int_distribution<int> e(-6, 6);
  Dense d;
  const size_t n = size_t(rows * cols), elem = type == TensorType::F32 ? 4 : 2;
  d.exact.resize(n);
  if (type == TensorType::Q8_0) {  // random codes, scales over several magnitudes
    std::uniform_int_distribution<int> q(-128, 127);
    d.bytes.resize(n / QK8_0 * sizeof(BlockQ8_0));
    auto* blocks = reinterpret_cast<BlockQ8_0*>(d.bytes.data());
    for (size_t b = 0; b < n / QK8_0; ++b) {
      blocks[b].d = f32_to_fp16(std::ldexp(std::fabs(v(rng)) + 0.1f, e(rng) - 7));
      for (int j = 0; j < QK8_0; ++j) {
        blocks[b].qs[j] = int8_t(q(rng));
        d.exact[b * QK8_0 + size_t(j)] = double(fp16_to_f32(blocks[b].d)) * blocks[b].qs[j];
      }
    }
    d.m = DenseMatrix{type, rows, cols, d.bytes.data()};
    return d;
  }
  if (type == TensorType::Q6_K) {  // random codes and group scales over their whole ranges
    std::uniform_int_distribution<int> code(0, 63), scale(-128, 127);
    d.bytes.resize(n / QK_K * sizeof(BlockQ6_K));
    auto* blocks = reinterpret_cast<BlockQ6_K*>(d.bytes.data());
    for (size_t b = 0; b < n / QK_K; ++b) {
      BlockQ6_K& blk = blocks[b];
      std::memset(&blk, 0, sizeof blk);
      blk.d = f32_to_fp16(std::ldexp(std::fabs(v(rng)) + 0.1f, e(rng) - 12));
      for (int g = 0; g < 16; ++g) blk.scales[g] = int8_t(scale(rng));
      for (int i = 0; i < QK_K; ++i) {
        const int q = code(rng), half = i / 128, j = (i % 128) / 32, l = i % 32;
        blk.ql[64 * half + l + 32 * (j & 1)] |= uint8_t((q & 0xF) << (j < 2 ? 0 : 4));
        blk.qh[32 * half + l] |= uint8_t((q >> 4) << (2 * j));
        d.exact[b * QK_K + size_t(i)] = double(fp16_to_f32(blk.d)) * blk.scales[i / 16] * (q - 32);
      }
    }
    d.m = DenseMatrix{type, rows, cols, d.bytes.data()};
    return d;
  }
  d.bytes.resize(n * elem);
  for (size_t i = 0; i < n; ++i) {
    const float f = std::ldexp(v(rng), e(rng));
    if (type == TensorType::F32) {
      std::memcpy(d.bytes.data() + 4 * i, &f, 4);
      d.exact[i] = f;
    } else {
      uint16_t h;
      if (type == TensorType::F16) {
        h = f32_to_fp16(f);
        d.exact[i] = fp16_to_f32(h);
      } else {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        h = uint16_t(bits >> 16);  // truncation: any BF16 value will do
        d.exact[i] = bf16_to_f32(h);
      }
      std::memcpy(d.bytes.data() + 2 * i, &h, 2);
    }
  }
  d.m = DenseMatrix{type, rows, cols, d.bytes.data()};
  return d;
}

std::vector<float> random_vectors(int64_t n, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> v(0.0f, 1.0f);
  std::vector<float> x(size_t(n * cols));
  for (float& f : x) f = v(rng);
  return x;
}

constexpr TensorType kTypes[] = {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0,
                                 TensorType::Q6_K};
// Partial last groups of 1-15 values, odd and even, below and past 8.
constexpr int64_t kWidths[] = {1, 7, 15, 16, 17, 24, 41, 46, 100, 256, 1536, 2563};
constexpr int64_t kQ8Widths[] = {32, 64, 96, 256, 1536, 2560};
constexpr int64_t kQ6Widths[] = {256, 512, 1536, 2560};
// Q8_0 rows are whole 32-value blocks, Q6_K rows whole 256-value ones.
std::span<const int64_t> widths(TensorType t) {
  if (t == TensorType::Q8_0) return kQ8Widths;
  if (t == TensorType::Q6_K) return kQ6Widths;
  return kWidths;
}

// The activations a quantized head multiplies, as values and as the step
// of their rounding.
template <class Act, int64_t QK>
void int8_values(void (*quantize)(const float*, int64_t, Act*), const float* x, int64_t K,
                 std::vector<double>& xs, std::vector<double>& step) {
  std::vector<Act> a(size_t(K / QK));
  quantize(x, K, a.data());
  for (int64_t k = 0; k < K; ++k) {
    xs[size_t(k)] = double(a[size_t(k / QK)].d) * a[size_t(k / QK)].qs[k % QK];
    step[size_t(k)] = a[size_t(k / QK)].d;
  }
}

TEST(DenseScalar, MatchesDoublePrecision) {
  for (TensorType type : kTypes)
    for (int64_t K : widths(type)) {
      const int64_t M = 9, n = 3;
      const Dense d = make_dense(type, M, K, uint32_t(K));
      const std::vector<float> x = random_vectors(n, K, uint32_t(K) + 1);
      std::vector<float> y(size_t(n * M), NAN);
      scalar_kernels().dense_gemm(d.m, x.data(), n, y.data(), M, 0, M);
      for (int64_t i = 0; i < n; ++i) {
        // A Q8_0 (Q6_K) head multiplies the activations as quantize_act_q8
        // (q8k) makes them, which moves each product by at most |w| * d_x / 2.
        std::vector<double> xs(x.begin() + i * K, x.begin() + (i + 1) * K), step(size_t(K), 0.0);
        if (type == TensorType::Q8_0) int8_values<ActQ8, QK8_0>(quantize_act_q8, x.data() + i * K, K, xs, step);
        if (type == TensorType::Q6_K) int8_values<ActQ8K, QK_K>(quantize_act_q8k, x.data() + i * K, K, xs, step);
        for (int64_t r = 0; r < M; ++r) {
          double want = 0, mag = 0, exact = 0, bound = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double w = d.exact[size_t(r * K + k)];
            want += w * xs[size_t(k)];
            mag += std::fabs(w * xs[size_t(k)]);
            exact += w * double(x[size_t(i * K + k)]);
            bound += std::fabs(w) * step[size_t(k)] / 2;
          }
          const std::string what =
              "type " + std::to_string(int(type)) + " K " + std::to_string(K) + " row " + std::to_string(r);
          EXPECT_NEAR(y[size_t(i * M + r)], want, 1e-6 * mag + 1e-30) << what;
          EXPECT_NEAR(y[size_t(i * M + r)], exact, bound + 1e-6 * mag + 1e-30) << what;
        }
      }
    }
}

std::vector<std::string> available_sets() {
  std::vector<std::string> names;
  for (const KernelSet* s : all_kernel_sets())
    if (s->available(cpu_features())) names.emplace_back(s->name);
  return names;
}

class DenseSets : public ::testing::TestWithParam<std::string> {
 protected:
  const KernelSet& set() const {
    for (const KernelSet* s : all_kernel_sets())
      if (GetParam() == s->name) return *s;
    throw Error("no kernel set " + GetParam());
  }
};

TEST_P(DenseSets, EqualsScalarBitForBit) {
  ASSERT_NE(set().dense_gemm, nullptr);
  for (TensorType type : kTypes)
    for (int64_t K : widths(type))
      for (int64_t M : {1, 3, 4, 5, 13})
        for (int64_t n : {1, 2, 5, 8}) {
          const Dense d = make_dense(type, M, K, uint32_t(K * 31 + M));
          const std::vector<float> x = random_vectors(n, K, uint32_t(K + M + n));
          const int64_t ldy = M + 3;  // a stride wider than the rows
          std::vector<float> want(size_t(n * ldy), -1.0f), got(size_t(n * ldy), -1.0f);
          scalar_kernels().dense_gemm(d.m, x.data(), n, want.data(), ldy, 0, M);
          set().dense_gemm(d.m, x.data(), n, got.data(), ldy, 0, M);
          ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
              << "type " << int(type) << " M " << M << " K " << K << " n " << n;
        }
}

// Perplexity's head: batches of every count of vectors left over after
// the AVX-512 sets' 4-vector tiles, row ranges that start inside a 4-row
// tile, and (at K = 2563) more rows than one of their L2-sized blocks.
TEST_P(DenseSets, LargeBatchesEqualScalarBitForBit) {
  constexpr struct {
    int64_t K, n;
  } kCases[] = {{23, 67}, {23, 70}, {23, 129}, {23, 130}, {2563, 7}, {2563, 66}};
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16})
    for (const auto [K, n] : kCases) {
      const int64_t M = 139;
      const Dense d = make_dense(type, M, K, uint32_t(K + n));
      const std::vector<float> x = random_vectors(n, K, uint32_t(K * n));
      std::vector<float> want(size_t(n * M), -1.0f), got(size_t(n * M), -1.0f);
      scalar_kernels().dense_gemm(d.m, x.data(), n, want.data(), M, 0, M);
      for (int64_t r0 : {0, 3, 66})
        set().dense_gemm(d.m, x.data(), n, got.data(), M, r0, r0 == 0 ? 3 : r0 == 3 ? 66 : M);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
          << "type " << int(type) << " K " << K << " n " << n;
    }
}

TEST_P(DenseSets, RowRangesWriteOnlyTheirRows) {
  const int64_t M = 37, K = 300, n = 2;
  const Dense d = make_dense(TensorType::BF16, M, K, 5);
  const std::vector<float> x = random_vectors(n, K, 6);
  std::vector<float> whole(size_t(n * M)), parts(size_t(n * M), NAN);
  set().dense_gemm(d.m, x.data(), n, whole.data(), M, 0, M);
  // Ranges that start and end inside and on the edges of row tiles.
  const int64_t cuts[] = {0, 1, 5, 6, 17, 30, M};
  for (size_t c = 0; c + 1 < std::size(cuts); ++c)
    set().dense_gemm(d.m, x.data(), n, parts.data(), M, cuts[c], cuts[c + 1]);
  for (size_t i = 0; i < parts.size(); ++i)
    EXPECT_TRUE(std::memcmp(&parts[i], &whole[i], sizeof(float)) == 0) << i;
  // An empty range writes nothing.
  std::vector<float> untouched(size_t(n * M), 7.0f);
  set().dense_gemm(d.m, x.data(), n, untouched.data(), M, 4, 4);
  for (float f : untouched) EXPECT_EQ(f, 7.0f);
}

// A view of the first K columns of wider rows (the KV cache's transposed
// values: n_pos of max_seq columns) equals the same columns stored densely.
TEST_P(DenseSets, RowStrideViewsEqualDenseRows) {
  for (TensorType type : kTypes)
    for (int64_t K : widths(type)) {
      const int64_t M = 7, W = K + (type == TensorType::Q8_0 ? 64 : type == TensorType::Q6_K ? 256 : 19), n = 3;
      const Dense wide = make_dense(type, M, W, uint32_t(K + 3));
      const int64_t wide_rb = dense_row_bytes(type, W), rb = dense_row_bytes(type, K);
      std::vector<uint8_t> packed(size_t(M * rb));
      for (int64_t r = 0; r < M; ++r)
        std::memcpy(packed.data() + r * rb, wide.bytes.data() + r * wide_rb, size_t(rb));
      DenseMatrix view = wide.m, dense{type, M, K, packed.data()};
      view.cols = K;
      view.row_stride = wide_rb;
      const std::vector<float> x = random_vectors(n, K, uint32_t(K + 4));
      std::vector<float> want(size_t(n * M)), got(size_t(n * M));
      scalar_kernels().dense_gemm(dense, x.data(), n, want.data(), M, 0, M);
      set().dense_gemm(view, x.data(), n, got.data(), M, 0, M);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
          << "type " << int(type) << " K " << K;
    }
}

// Matrices and vectors that end where an unreadable page begins: a partial
// last group reads no byte past its row (the masked loads of the SIMD sets),
// or this test dies on SIGSEGV.
TEST_P(DenseSets, PartialGroupsReadNothingPastTheData) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16})
    for (int64_t K : {int64_t(1), int64_t(7), int64_t(9), int64_t(15), int64_t(41), int64_t(47)})
      for (int64_t n : {int64_t(1), int64_t(3)}) {
        const int64_t M = 5;
        const Dense d = make_dense(type, M, K, uint32_t(K * 7 + n));
        const std::vector<float> x = random_vectors(n, K, uint32_t(K + n));
        const size_t wbytes = d.bytes.size(), xbytes = x.size() * sizeof(float);
        const size_t body = (std::max(wbytes, xbytes) + page - 1) / page * page;
        auto* map = static_cast<uint8_t*>(
            mmap(nullptr, 2 * (body + page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        ASSERT_NE(map, MAP_FAILED);
        uint8_t* wend = map + body;                 // guard page [body, body + page)
        uint8_t* xend = map + 2 * body + page;      // guard page after x
        ASSERT_EQ(mprotect(wend, page, PROT_NONE), 0);
        ASSERT_EQ(mprotect(xend, page, PROT_NONE), 0);
        std::memcpy(wend - wbytes, d.bytes.data(), wbytes);
        std::memcpy(xend - xbytes, x.data(), xbytes);
        DenseMatrix m = d.m;
        m.data = wend - wbytes;
        std::vector<float> want(size_t(n * M)), got(size_t(n * M));
        scalar_kernels().dense_gemm(d.m, x.data(), n, want.data(), M, 0, M);
        set().dense_gemm(m, reinterpret_cast<const float*>(xend - xbytes), n, got.data(), M, 0, M);
        munmap(map, 2 * (body + page));
        ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
            << "type " << int(type) << " K " << K << " n " << n;
      }
}

// The model checks a head for NaN and infinities through its first product
// (Model::check_head): a non-finite value anywhere in a row must make that
// row's result non-finite for every vector, whatever the activations, and
// leave the other rows finite. Zero activations at the value's column, or
// everywhere, catch a kernel that would skip zero blocks (infinity times
// zero is NaN). Quantized types hold their non-finite values in scales.
TEST_P(DenseSets, NonFiniteValueMakesItsRowNonFinite) {
  const uint16_t kHalf[] = {0x7e00, 0x7c00, 0xfc00}, kBf16[] = {0x7fc0, 0x7f80, 0xff80};
  const float kF32[] = {std::nanf(""), INFINITY, -INFINITY};
  for (TensorType type : kTypes)
    for (int64_t K : {int64_t(256), int64_t(2560)})
      for (int v = 0; v < 3; ++v)
        for (int acts = 0; acts < 3; ++acts) {
          const int64_t M = 13, n = 5, bad = 6, col = K - 37;
          Dense d = make_dense(type, M, K, uint32_t(K + v));
          uint8_t* row = d.bytes.data() + bad * int64_t(gguf::row_bytes(type, uint64_t(K)));
          if (type == TensorType::F32) std::memcpy(row + 4 * col, &kF32[v], 4);
          if (type == TensorType::F16) std::memcpy(row + 2 * col, &kHalf[v], 2);
          if (type == TensorType::BF16) std::memcpy(row + 2 * col, &kBf16[v], 2);
          if (type == TensorType::Q8_0)
            std::memcpy(row + col / QK8_0 * int64_t(sizeof(BlockQ8_0)), &kHalf[v], 2);
          if (type == TensorType::Q6_K)
            std::memcpy(row + col / QK_K * int64_t(sizeof(BlockQ6_K)) + offsetof(BlockQ6_K, d), &kHalf[v], 2);
          std::vector<float> x = random_vectors(n, K, uint32_t(K * 7 + v));
          for (int64_t i = 0; i < n; ++i)
            for (int64_t k = 0; k < K; ++k)
              if (acts == 2 || (acts == 1 && k / QK_K == col / QK_K)) x[size_t(i * K + k)] = 0.0f;
          std::vector<float> y(size_t(n * M));
          set().dense_gemm(d.m, x.data(), n, y.data(), M, 0, M);
          for (int64_t i = 0; i < n; ++i)
            for (int64_t r = 0; r < M; ++r)
              EXPECT_EQ(std::isfinite(y[size_t(i * M + r)]), r != bad)
                  << "type " << int(type) << " K " << K << " value " << v << " acts " << acts << " vector " << i
                  << " row " << r << ": " << y[size_t(i * M + r)];
        }
}

TEST_P(DenseSets, BadCallsAreErrors) {
  const Dense d = make_dense(TensorType::F16, 4, 32, 1);
  std::vector<float> x(64), y(8);
  EXPECT_THROW(set().dense_gemm(d.m, x.data(), 1, y.data(), 4, 0, 5), Error);
  EXPECT_THROW(set().dense_gemm(d.m, x.data(), 1, y.data(), 4, 3, 2), Error);
  EXPECT_THROW(set().dense_gemm(d.m, x.data(), 2, y.data(), 3, 0, 4), Error);
  const Dense q = make_dense(TensorType::Q8_0, 2, 64, 2);
  DenseMatrix bad = q.m;
  bad.cols = 48;  // not whole Q8_0 blocks
  EXPECT_THROW(set().dense_gemm(bad, x.data(), 1, y.data(), 2, 0, 2), Error);
  const Dense q6 = make_dense(TensorType::Q6_K, 2, 512, 2);
  bad = q6.m;
  bad.cols = 384;  // not whole Q6_K blocks
  EXPECT_THROW(set().dense_gemm(bad, x.data(), 1, y.data(), 2, 0, 2), Error);
  bad = d.m;
  bad.type = TensorType::TQ2_0;
  EXPECT_THROW(set().dense_gemm(bad, x.data(), 1, y.data(), 4, 0, 4), Error);
  bad = d.m;
  bad.data = nullptr;
  EXPECT_THROW(set().dense_gemm(bad, x.data(), 1, y.data(), 4, 0, 4), Error);
  bad = d.m;
  bad.row_stride = 62;  // rows of 32 F16 values are 64 bytes
  EXPECT_THROW(set().dense_gemm(bad, x.data(), 1, y.data(), 4, 0, 4), Error);
}

INSTANTIATE_TEST_SUITE_P(Available, DenseSets, ::testing::ValuesIn(available_sets()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string s = p.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace tern
