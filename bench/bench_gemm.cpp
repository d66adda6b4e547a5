// Batched ternary GEMM (prompts, perplexity): Y[n][M] = X[n][K] T^T for n
// activation vectors, every kernel set this CPU can run except scalar, each
// against its own n = 1 call in the same run (the decode GEMV). Names:
//   gemm/<set>/<TQ2_0|TQ1_0>/<float|int8>/<M>x<K>/n:<N>/threads:<T>
// Counters: Gwt/s = 1e9 weight-token products per second (M K n / time),
// GB/s = weight bytes per second (what one call reads, over its time). The
// weights stay warm (one matrix): at n >= 16 a call is compute-bound, and a
// 4 MiB matrix streams from L3 or DRAM at far more than it consumes.
#include <benchmark/benchmark.h>

#include <chrono>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "bench.h"

namespace tern::bench {
namespace {

using gguf::TensorType;

// bitnet_b1_58-large (attention, gate/up, down) and BitNet 2B-4T's FFN.
constexpr Shape kShapes[] = {{1536, 1536}, {4096, 1536}, {1536, 4096}, {6912, 2560}, {2560, 6912}};
constexpr int kBatch[] = {1, 2, 3, 4, 5, 6, 8, 16, 64};

struct Case {
  const KernelSet* set;
  TensorType type;
  ActMode mode;
  Shape shape;
  int n, threads;
};

void bm_gemm(benchmark::State& st, const Case& c) {
  const int64_t M = c.shape.M, K = c.shape.K, n = c.n;
  Rotation rot;
  try {
    rot = matrices(c.type, M, K, *c.set, false);
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  std::mt19937 rng(static_cast<uint32_t>(K + n));
  std::vector<float> x(size_t(n * K)), y(size_t(n * M));
  std::vector<int8_t> q(size_t(n * K));
  std::vector<int32_t> sums(size_t(n * M));
  std::uniform_real_distribution<float> fx(-1.0f, 1.0f);
  std::uniform_int_distribution<int> iq(-127, 127);
  for (auto& v : x) v = fx(rng);
  for (auto& v : q) v = int8_t(iq(rng));
  const TernaryMatrix& w = rot.advance();
  auto call = [&] { return split_rows(*c.set, c.mode, w, x.data(), q.data(), n, y.data(), sums.data(), c.threads); };
  if (!call()) {
    st.SkipWithError("the kernel threw");
    return;
  }
  using clock = std::chrono::steady_clock;
  double total = 0;
  bool ok = true;
  for (auto _ : st) {
    const auto t0 = clock::now();
    ok &= call();
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(sums.data());
    benchmark::ClobberMemory();
    const double dt = std::chrono::duration<double>(clock::now() - t0).count();
    total += dt;
    st.SetIterationTime(dt);
  }
  if (!ok) {
    st.SkipWithError("a kernel threw during the timed loop");
    return;
  }
  using benchmark::Counter;
  const double iters = double(st.iterations());
  st.counters["Gwt/s"] = Counter(iters * double(M * K * n) / total / 1e9);
  st.counters["GB/s"] = Counter(iters * double(rot.read_bytes) / total / 1e9);
  st.SetLabel(rot.packed ? "prepared layout" : "gguf layout");
}

}  // namespace

void register_all() {
  register_roofs();
  for (TensorType type : {TensorType::TQ2_0, TensorType::TQ1_0})
    for (const Shape& shape : kShapes)
      for (const KernelSet* s : all_kernel_sets()) {
        if (!s->available(cpu_features()) || s == &scalar_kernels()) continue;
        for (ActMode mode : {ActMode::Float, ActMode::Int8}) {
          if (!kernel_supports(*s, mode)) continue;
          for (int t : kThreads)
            for (int n : kBatch) {
              const Case c{s, type, mode, shape, n, t};
              const std::string name = std::string("gemm/") + s->name + "/" +
                                       (type == TensorType::TQ2_0 ? "TQ2_0/" : "TQ1_0/") +
                                       (mode == ActMode::Float ? "float/" : "int8/") +
                                       std::to_string(shape.M) + "x" + std::to_string(shape.K) +
                                       "/n:" + std::to_string(n) + "/threads:" + std::to_string(t);
              benchmark::RegisterBenchmark(name.c_str(), [c](benchmark::State& st) { bm_gemm(st, c); })
                  ->UseManualTime()
                  ->Unit(benchmark::kMicrosecond);
            }
        }
      }
  benchmark::AddCustomContext("tern_cpu", cpu_features().brand + " [" + cpu_features().summary() + "]");
}

}  // namespace tern::bench

int main(int argc, char** argv) { return tern::bench::run_main(argc, argv, "tern_bench_gemm"); }
