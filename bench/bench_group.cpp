// Group-scaled GEMV (PQ2_0, Q2_0: Ternary Bonsai) against TQ2_0's on the
// same shape, on one thread, warm (the matrix in L2/L3: what the kernel
// computes per weight, not what memory gives), every set this CPU runs.
// Names: group/<set>/<PQ2_0|Q2_0|TQ2_0>/<M>x<K>/vectors:<nq>, where nq is
// the int8 vectors per token (2: the int16 activations Bonsai runs on).
// Counter Gw/s: weights per second.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "bench.h"
#include "tern/quant.h"
#include "tern/quant_group.h"

namespace tern::bench {
namespace {

using gguf::TensorType;

// Bonsai 1.7B's attention, gate/up and down, and 8B's gate/up.
constexpr Shape kShapes[] = {{2048, 2048}, {6144, 2048}, {2048, 6144}, {12288, 4096}};

std::vector<uint8_t> group_bytes(TensorType t, int64_t M, int64_t K) {
  const int group = group_size(t);
  std::vector<uint8_t> b(size_t(M) * gguf::row_bytes(t, uint64_t(K)));
  std::mt19937 rng(uint32_t(M * 31 + K));
  std::vector<int8_t> v(static_cast<size_t>(K));
  std::vector<uint16_t> d(size_t(K / group));
  const int64_t rb = int64_t(gguf::row_bytes(t, uint64_t(K)));
  for (int64_t r = 0; r < M; ++r) {
    for (auto& x : v) x = int8_t(int(rng() % 3) - 1);
    for (auto& x : d) x = f32_to_fp16(0.01f + float(rng() % 100) / 1000);
    pack_q2_group_row(v.data(), K, group, d.data(), b.data() + r * rb);
  }
  return b;
}

void bm_group(benchmark::State& st, const KernelSet* set, TensorType t, Shape s, int nq) {
  const int64_t M = s.M, K = s.K;
  std::vector<int8_t> q(size_t(nq * K));
  std::mt19937 rng(7);
  for (auto& x : q) x = int8_t(int(rng() % 255) - 127);
  std::vector<float> y(static_cast<size_t>(M));
  if (t == TensorType::TQ2_0) {  // the same product on the TQ2_0 path: int sums, as the forward pass scales them
    Rotation rot = matrices(t, M, K, *set, false);
    std::vector<int32_t> sums(size_t(nq * M));
    for (auto _ : st) {
      set->gemm_i8(rot.mats[0], q.data(), nq, sums.data(), 0, M);
      benchmark::DoNotOptimize(sums.data());
    }
  } else {
    const std::vector<uint8_t> b = group_bytes(t, M, K);
    const GroupMatrix w{t, M, K, group_size(t), b.data()};
    const int digits[1] = {nq};
    const float scale[1] = {1.0f};
    const GroupGemmI8 f = group_gemm_i8_of(*set);
    for (auto _ : st) {
      f(w, q.data(), 1, digits, scale, y.data(), M, 0, M);
      benchmark::DoNotOptimize(y.data());
    }
  }
  st.counters["Gw/s"] = benchmark::Counter(double(st.iterations()) * double(M * K) / 1e9,
                                           benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

}  // namespace

void register_all() {
  for (const KernelSet* set : all_kernel_sets()) {
    if (!set->available(cpu_features()) || !set->gemm_i8) continue;
    for (const Shape& s : kShapes)
      for (TensorType t : {TensorType::PQ2_0, TensorType::Q2_0, TensorType::TQ2_0})
        for (int nq : {1, 2}) {
          const std::string name = std::string("group/") + set->name + "/" + gguf::traits(t).name + "/" +
                                   std::to_string(s.M) + "x" + std::to_string(s.K) + "/vectors:" + std::to_string(nq);
          benchmark::RegisterBenchmark(name.c_str(), bm_group, set, t, s, nq)->Unit(benchmark::kMicrosecond);
        }
  }
  benchmark::AddCustomContext("tern_cpu", cpu_features().brand + " [" + cpu_features().summary() + "]");
}

}  // namespace tern::bench

int main(int argc, char** argv) { return tern::bench::run_main(argc, argv, "tern_bench_group"); }
