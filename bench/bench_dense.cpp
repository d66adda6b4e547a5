// The dense GEMM of the output head over a batch (perplexity scores every
// token; attention's query blocks are the same call on the KV cache): Y[n][M]
// = X[n][K] W^T for F16 and BF16 rows, every kernel set this CPU can run
// except scalar, one thread, each against its own n = 1 call (the decode
// GEMV) in the same run. Names:
//   dense/<set>/<F16|BF16>/<M>x<K>/n:<N>
// Counters: Gwt/s = 1e9 weight x vector products per second (M K n / time).
// M is a slice of a real head (4096 of its 32002 or 128256 rows): a thread's
// share of it, warm in L3 at n >= 16, where a call is compute-bound.
#include <benchmark/benchmark.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "bench.h"
#include "tern/quant.h"

namespace tern::bench {
namespace {

using gguf::TensorType;

// bitnet_b1_58-large's F16 head, BitNet 2B-4T's BF16 one.
constexpr struct {
  TensorType type;
  Shape shape;
} kHeads[] = {{TensorType::F16, {4096, 1536}}, {TensorType::BF16, {4096, 2560}}};
constexpr int kBatch[] = {1, 4, 16, 64, 256};

void bm_dense(benchmark::State& st, const KernelSet* set, TensorType type, Shape shape, int n) {
  const int64_t M = shape.M, K = shape.K;
  std::mt19937 rng(uint32_t(K + n));
  std::uniform_real_distribution<float> fx(-1.0f, 1.0f);
  std::vector<uint16_t> w(size_t(M * K));
  for (auto& v : w) {
    const float f = fx(rng);
    v = type == TensorType::F16 ? f32_to_fp16(f) : f32_to_bf16_rne(f);
  }
  std::vector<float> x(size_t(n * K)), y(size_t(n * M));
  for (auto& v : x) v = fx(rng);
  DenseMatrix m{type, M, K, w.data()};
  using clock = std::chrono::steady_clock;
  double total = 0;
  for (auto _ : st) {
    const auto t0 = clock::now();
    set->dense_gemm(m, x.data(), n, y.data(), M, 0, M);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    const double dt = std::chrono::duration<double>(clock::now() - t0).count();
    total += dt;
    st.SetIterationTime(dt);
  }
  st.counters["Gwt/s"] = benchmark::Counter(double(st.iterations()) * double(M * K * n) / total / 1e9);
}

}  // namespace

void register_all() {
  for (const auto& h : kHeads)
    for (const KernelSet* s : all_kernel_sets()) {
      if (!s->available(cpu_features()) || s == &scalar_kernels()) continue;
      for (int n : kBatch) {
        const std::string name = std::string("dense/") + s->name + "/" +
                                 (h.type == TensorType::F16 ? "F16/" : "BF16/") + std::to_string(h.shape.M) +
                                 "x" + std::to_string(h.shape.K) + "/n:" + std::to_string(n);
        const KernelSet* set = s;
        const auto type = h.type;
        const Shape shape = h.shape;
        benchmark::RegisterBenchmark(name.c_str(),
                                     [=](benchmark::State& st) { bm_dense(st, set, type, shape, n); })
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  benchmark::AddCustomContext("tern_cpu", cpu_features().brand + " [" + cpu_features().summary() + "]");
}

}  // namespace tern::bench

int main(int argc, char** argv) { return tern::bench::run_main(argc, argv, "tern_bench_dense"); }
