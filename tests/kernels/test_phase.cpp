// Fairy2i phase kernels (kernels.h PhaseGemm): the scalar set against the
// widely-linear map y_c = sum over stages of U x_c + W conj(x_c) computed in
// double from the codes, every other set with a Fairy2i path against scalar
// bit for bit, on one and many complex rows, widths that are one block, many
// blocks, and padded, one vector and a batch, row ranges, and edge codes
// (all one code, all zero activations). The int8 form (PhaseGemmI8) the
// same way: scalar against the map on the values its digits stand for,
// every other set against scalar bit for bit, on tokens of 1 to 3 digits.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../kernels/kernel_sets.h"
#include "tern/error.h"
#include "tern/kernels.h"
#include "tern/phase.h"
#include "tern/quant.h"

namespace tern {
namespace {

using cd = std::complex<double>;

struct Phase {
  int64_t n = 0, m = 0, cols = 0;  // complex rows, logical and padded complex columns
  int stages = 0;
  std::vector<uint8_t> u, w;       // [stages][n][m] codes 0..3
  std::vector<BlockPhase> blocks;
  std::vector<float> scales;
  PhaseMatrix pm;
};

// code -1: random; else every entry that code.
Phase make_phase(int64_t n, int64_t m, int stages, uint32_t seed, int code = -1) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> c(0, 3);
  std::uniform_real_distribution<float> sc(0.01f, 0.5f);
  Phase p;
  p.n = n, p.m = m, p.cols = phase_cols(m), p.stages = stages;
  const int64_t nb = p.cols / kPhaseBlock;
  p.blocks.assign(size_t(stages * n * nb), BlockPhase{0, 0, 0, 0});
  for (int st = 0; st < stages; ++st)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < p.cols; ++j) {
        // Padding columns get random codes too: zero activations must cancel them.
        const uint8_t cu = uint8_t(code < 0 ? c(rng) : code), cw = uint8_t(code < 0 ? c(rng) : code);
        if (j < m) p.u.push_back(cu), p.w.push_back(cw);
        BlockPhase& b = p.blocks[size_t((st * n + r) * nb + j / kPhaseBlock)];
        const uint64_t bit = uint64_t(1) << (j % kPhaseBlock);
        if (cu & 1) b.u_axis |= bit;
        if (cu & 2) b.u_sign |= bit;
        if (cw & 1) b.w_axis |= bit;
        if (cw & 2) b.w_sign |= bit;
      }
  for (int i = 0; i < 4 * stages; ++i) p.scales.push_back(sc(rng));
  p.pm = PhaseMatrix{n, p.cols, stages, reinterpret_cast<const uint8_t*>(p.blocks.data()), p.scales.data()};
  return p;
}

// Input vectors [count][2 * cols]: a then b, each zero past m.
std::vector<float> make_x(const Phase& p, int64_t count, uint32_t seed, bool zero = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> v(0.0f, 1.0f);
  std::vector<float> x(size_t(count * 2 * p.cols), 0.0f);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < p.m; ++j) {
      x[size_t(i * 2 * p.cols + j)] = zero ? 0.0f : v(rng);
      x[size_t(i * 2 * p.cols + p.cols + j)] = zero ? 0.0f : v(rng);
    }
  return x;
}

// The published form: complex codes times the axis scales, U x + W conj(x).
std::vector<double> widely_linear(const Phase& p, const float* x) {
  const cd unit[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
  std::vector<double> y(size_t(2 * p.n), 0.0);
  for (int st = 0; st < p.stages; ++st) {
    const float* s = &p.scales[size_t(4 * st)];
    for (int64_t r = 0; r < p.n; ++r) {
      cd acc = 0;
      for (int64_t j = 0; j < p.m; ++j) {
        const size_t k = size_t((st * p.n + r) * p.m + j);
        const cd xc(x[j], x[p.cols + j]);
        const cd u = unit[p.u[k]] * cd(p.u[k] & 1 ? s[kUim] : s[kUre], 0);
        const cd w = unit[p.w[k]] * cd(p.w[k] & 1 ? s[kWim] : s[kWre], 0);
        acc += u * xc + w * std::conj(xc);
      }
      y[size_t(r)] += acc.real();
      y[size_t(p.n + r)] += acc.imag();
    }
  }
  return y;
}

// Outputs of `count` vectors, kOutStride apart (wider than the 2n outputs),
// filled with kUnwritten: a kernel must leave every value outside rows
// [r0, r1) and [n + r0, n + r1) as it was.
constexpr float kUnwritten = -7.0f;
int64_t out_stride(const Phase& p) { return 2 * p.n + 3; }
void expect_no_stray_writes(const Phase& p, const std::vector<float>& y, int64_t count, int64_t r0, int64_t r1) {
  const int64_t ldy = out_stride(p);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t r = 0; r < ldy; ++r) {
      const bool written = (r >= r0 && r < r1) || (r >= p.n + r0 && r < p.n + r1);
      if (!written) {
        EXPECT_EQ(y[size_t(i * ldy + r)], kUnwritten) << "stray write at vector " << i << " row " << r;
      }
    }
}

std::vector<float> run(PhaseGemm gemm, const Phase& p, const std::vector<float>& x, int64_t count, int64_t r0,
                       int64_t r1) {
  std::vector<float> y(size_t(count * out_stride(p)), kUnwritten);
  gemm(p.pm, x.data(), count, y.data(), out_stride(p), r0, r1);
  expect_no_stray_writes(p, y, count, r0, r1);
  return y;
}

std::vector<float> run(const KernelSet& ks, const Phase& p, const std::vector<float>& x, int64_t count,
                       int64_t r0, int64_t r1) {
  return run(ks.phase_gemm, p, x, count, r0, r1);
}

struct Shape {
  int64_t n, m;
  int stages;
};
const Shape kShapes[] = {{1, 64, 1}, {1, 40, 2}, {5, 54, 2}, {16, 128, 2}, {37, 200, 3}, {64, 256, 2}, {3, 1000, 1}};

TEST(PhaseScalar, MatchesTheWidelyLinearMap) {
  const KernelSet& ks = scalar_kernels();
  uint32_t seed = 1;
  for (const Shape& sh : kShapes) {
    const Phase p = make_phase(sh.n, sh.m, sh.stages, seed++);
    const int64_t count = 3;
    const std::vector<float> x = make_x(p, count, seed++);
    const std::vector<float> y = run(ks, p, x, count, 0, p.n);
    for (int64_t i = 0; i < count; ++i) {
      const std::vector<double> want = widely_linear(p, x.data() + i * 2 * p.cols);
      double scale = 0;
      for (double v : want) scale = std::max(scale, std::fabs(v));
      for (int64_t r = 0; r < 2 * p.n; ++r) {
        EXPECT_NEAR(y[size_t(i * out_stride(p) + r)], want[size_t(r)], 1e-5 * (scale + 1))
            << sh.n << "x" << sh.m << " stages " << sh.stages << " vector " << i << " row " << r;
      }
    }
  }
}

TEST(PhaseScalar, OneCodeEverywhereAndZeroInputs) {
  const KernelSet& ks = scalar_kernels();
  for (int code = 0; code < 4; ++code) {
    const Phase p = make_phase(4, 70, 2, 10 + code, code);
    const std::vector<float> x = make_x(p, 1, 20 + code);
    const std::vector<float> y = run(ks, p, x, 1, 0, p.n);
    const std::vector<double> want = widely_linear(p, x.data());
    for (int64_t r = 0; r < 2 * p.n; ++r) EXPECT_NEAR(y[size_t(r)], want[size_t(r)], 1e-4) << "code " << code;
    const std::vector<float> zero = run(ks, p, make_x(p, 1, 0, true), 1, 0, p.n);
    for (int64_t r = 0; r < 2 * p.n; ++r) EXPECT_EQ(zero[size_t(r)], 0.0f) << "code " << code;
  }
}

// The batch is the single vector repeated; a row range is that part of the whole.
TEST(PhaseScalar, BatchAndRowRangesAgreeWithSingleCalls) {
  const KernelSet& ks = scalar_kernels();
  const Phase p = make_phase(37, 200, 2, 3);
  const int64_t count = 4, ldy = out_stride(p);
  const std::vector<float> x = make_x(p, count, 4);
  const std::vector<float> all = run(ks, p, x, count, 0, p.n);
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<float> xi(x.begin() + i * 2 * p.cols, x.begin() + (i + 1) * 2 * p.cols);
    const std::vector<float> one = run(ks, p, xi, 1, 5, 30);
    for (int64_t r = 5; r < 30; ++r) {
      EXPECT_EQ(one[size_t(r)], all[size_t(i * ldy + r)]);
      EXPECT_EQ(one[size_t(p.n + r)], all[size_t(i * ldy + p.n + r)]);
    }
  }
}

TEST(PhaseScalar, BadCallsAreErrors) {
  const KernelSet& ks = scalar_kernels();
  Phase p = make_phase(4, 64, 1, 5);
  std::vector<float> x = make_x(p, 1, 6), y(64);
  EXPECT_THROW(ks.phase_gemm(p.pm, x.data(), 1, y.data(), 8, 0, 5), Error);   // past the rows
  EXPECT_THROW(ks.phase_gemm(p.pm, x.data(), 2, y.data(), 7, 0, 4), Error);   // stride below 2n
  PhaseMatrix bad = p.pm;
  bad.cols = 40;  // not whole blocks
  EXPECT_THROW(ks.phase_gemm(bad, x.data(), 1, y.data(), 8, 0, 4), Error);
  bad = p.pm;
  bad.stages = 0;
  EXPECT_THROW(ks.phase_gemm(bad, x.data(), 1, y.data(), 8, 0, 4), Error);
}

// Every other set with a Fairy2i path, and its unfused form where it has
// one (bench_phase's baseline): scalar's bits exactly (kernels.h fixes the
// order), so logits do not depend on the kernel.
TEST(PhaseKernels, EverySetMatchesScalarBitForBit) {
  int compared = 0;
  for (const KernelSet* ks : all_kernel_sets()) {
    if (!ks->phase_gemm || ks == &scalar_kernels() || !ks->available(cpu_features())) continue;
    uint32_t seed = 100;
    for (const Shape& sh : kShapes)
      for (int64_t count : {1, 3}) {
        const Phase p = make_phase(sh.n, sh.m, sh.stages, seed++);
        const std::vector<float> x = make_x(p, count, seed++);
        for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, p.n}, {p.n / 3, p.n - p.n / 4}}) {
          const std::vector<float> want = run(scalar_kernels(), p, x, count, r0, r1);
          const std::vector<float> got = run(*ks, p, x, count, r0, r1);
          ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
              << ks->name << " " << sh.n << "x" << sh.m << " stages " << sh.stages << " n " << count;
          if (PhaseGemm unfused = kernels_detail::unfused_phase_gemm(*ks)) {
            const std::vector<float> split = run(unfused, p, x, count, r0, r1);
            ASSERT_EQ(std::memcmp(split.data(), want.data(), split.size() * sizeof(float)), 0)
                << ks->name << " unfused " << sh.n << "x" << sh.m << " stages " << sh.stages << " n " << count;
          }
        }
      }
    ++compared;
  }
  std::printf("[measure] %d kernel sets besides scalar have a Fairy2i path on this CPU\n", compared);
}

// Int8 inputs: token i has digits[i] vectors of 2 * cols values in
// [-127, 127], the padding zero; extreme: every value +-127.
struct I8Input {
  std::vector<int8_t> q;
  std::vector<int> digits;
  std::vector<float> scale;
};

I8Input make_q(const Phase& p, const std::vector<int>& digits, uint32_t seed, bool extreme = false) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> v(-127, 127), sign(0, 1);
  std::uniform_real_distribution<float> sc(0.5f, 200.0f);
  I8Input in;
  in.digits = digits;
  for (int d : digits) {
    in.scale.push_back(sc(rng));
    for (int j = 0; j < d; ++j)
      for (int half = 0; half < 2; ++half)
        for (int64_t k = 0; k < p.cols; ++k)
          in.q.push_back(k >= p.m ? 0 : extreme ? int8_t(sign(rng) ? 127 : -127) : int8_t(v(rng)));
  }
  return in;
}

std::vector<float> run_i8(PhaseGemmI8 gemm, const Phase& p, const I8Input& in, int64_t r0, int64_t r1) {
  const int64_t n = int64_t(in.digits.size());
  std::vector<float> y(size_t(n * out_stride(p)), kUnwritten);
  gemm(p.pm, in.q.data(), n, in.digits.data(), in.scale.data(), y.data(), out_stride(p), r0, r1);
  expect_no_stray_writes(p, y, n, r0, r1);
  return y;
}

TEST(PhaseScalarI8, MatchesTheWidelyLinearMapOfItsDigits) {
  uint32_t seed = 300;
  for (const Shape& sh : kShapes) {
    const Phase p = make_phase(sh.n, sh.m, sh.stages, seed++);
    const I8Input in = make_q(p, {1, 2, 3}, seed++);
    const std::vector<float> y = run_i8(scalar_kernels().phase_gemm_i8, p, in, 0, p.n);
    const int64_t L = 2 * p.cols;
    const int8_t* q = in.q.data();
    for (size_t i = 0; i < in.digits.size(); ++i) {
      std::vector<float> x(static_cast<size_t>(L));  // what the digits stand for (exact in float below 2^24)
      for (int64_t k = 0; k < L; ++k) {
        double v = 0;
        for (int j = 0; j < in.digits[i]; ++j) v = 255 * v + q[j * L + k];
        x[size_t(k)] = float(v / in.scale[i]);
      }
      q += in.digits[i] * L;
      const std::vector<double> want = widely_linear(p, x.data());
      double scale = 0;
      for (double v : want) scale = std::max(scale, std::fabs(v));
      for (int64_t r = 0; r < 2 * p.n; ++r) {
        EXPECT_NEAR(y[size_t(int64_t(i) * out_stride(p) + r)], want[size_t(r)], 1e-5 * (scale + 1))
            << sh.n << "x" << sh.m << " stages " << sh.stages << " token " << i << " row " << r;
      }
    }
  }
}

TEST(PhaseScalarI8, BadDigitsAreErrors) {
  const Phase p = make_phase(4, 64, 1, 7);
  I8Input in = make_q(p, {1}, 8);
  std::vector<float> y(16);
  for (int d : {0, kMaxActDigits + 1, -1}) {
    in.digits = {d};
    EXPECT_THROW(scalar_kernels().phase_gemm_i8(p.pm, in.q.data(), 1, in.digits.data(), in.scale.data(), y.data(),
                                                8, 0, 4),
                 Error)
        << d << " digits";
  }
}

// Integer sums: every set equals scalar exactly, whatever its lanes and
// grouping of vectors; tokens of mixed digit counts make groups that
// straddle tokens, and +-127 everywhere is the largest sum.
TEST(PhaseKernelsI8, EverySetMatchesScalarBitForBit) {
  int compared = 0;
  for (const KernelSet* ks : all_kernel_sets()) {
    if (!ks->phase_gemm_i8 || ks == &scalar_kernels() || !ks->available(cpu_features())) continue;
    uint32_t seed = 500;
    for (const Shape& sh : kShapes)
      for (const std::vector<int>& digits : {std::vector<int>{1}, {2}, {3}, {1, 3, 2, 1, 1}}) {
        const Phase p = make_phase(sh.n, sh.m, sh.stages, seed++);
        for (bool extreme : {false, true}) {
          const I8Input in = make_q(p, digits, seed++, extreme);
          for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, p.n}, {p.n / 3, p.n - p.n / 4}}) {
            const std::vector<float> want = run_i8(scalar_kernels().phase_gemm_i8, p, in, r0, r1);
            const std::vector<float> got = run_i8(ks->phase_gemm_i8, p, in, r0, r1);
            ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
                << ks->name << " " << sh.n << "x" << sh.m << " stages " << sh.stages << " tokens "
                << digits.size() << (extreme ? " extreme" : "");
          }
        }
      }
    ++compared;
  }
  std::printf("[measure] %d kernel sets besides scalar have an int8 Fairy2i path on this CPU\n", compared);
}

}  // namespace
}  // namespace tern
