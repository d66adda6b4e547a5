// The dense GEMM of the output head over a batch (perplexity scores every
// token; attention's query blocks are the same call on the KV cache): Y[n][M]
// = X[n][K] W^T for F16 and BF16 rows, every kernel set this CPU can run
// except scalar, one thread, each against its own n = 1 call (the decode
// GEMV) in the same run. Names:
//   dense/<set>/<F16|BF16>/<M>x<K>/n:<N>
// Counters: Gwt/s = 1e9 weight x vector products per second (M K n / time).
// M is a slice of a real head (4096 of its 32002 or 128256 rows): a thread's
// share of it, warm in L3 at n >= 16, where a call is compute-bound.
//
// Decode reads the whole head from DRAM once a token, so it has its own
// entries, DRAM-cold, with the paired roof of tern_bench_kernels:
//   dense/<set>/<F16|BF16>/<M>x<K>/n:1/threads:<T>/cold
// (whole heads of S and L; rows claimed in chunks by T threads of the
// engine's pool, as the forward pass splits them). Copies rotate (at least three,
// more than 4 x L3 in all); after each call the same number of threads
// reads another copy with the roof's loop, and pct_roof is that read's
// time over the GEMV's (100 = as fast as a plain read at that moment).
#include <benchmark/benchmark.h>


#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "bench.h"
#include "tern/aligned_buffer.h"
#include "tern/quant.h"

namespace tern::bench {
namespace {

using gguf::TensorType;

// bitnet_b1_58-large's F16 head, BitNet 2B-4T's BF16 one.
struct Head {
  TensorType type;
  Shape shape;
};
constexpr Head kHeads[] = {{TensorType::F16, {4096, 1536}}, {TensorType::BF16, {4096, 2560}}};
constexpr int kBatch[] = {1, 2, 4, 8, 16, 64, 256};
constexpr Head kWholeHeads[] = {{TensorType::F16, {32002, 1536}}, {TensorType::BF16, {128256, 2560}}};

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

// Finite values of every magnitude from 2^-15 to 2, both signs, distinct
// per copy (no page merging can alias copies).
void fill_head(uint16_t* w, size_t count, TensorType type, uint64_t seed) {
  uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < count; ++i) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    const uint16_t b = uint16_t(r >> 16);
    w[i] = type == TensorType::F16 ? uint16_t((b & 0x83FF) | ((0x02 + (b >> 10 & 0x0F)) << 10))
                                   : uint16_t((b & 0x807F) | ((0x70 + (b >> 7 & 0x0F)) << 7));
  }
}

void bm_dense_cold(benchmark::State& st, const KernelSet* set, TensorType type, Shape shape, int threads) {
  const int64_t M = shape.M, K = shape.K;
  const size_t head = size_t(M * K) * 2;
  const int copies = int(std::max<int64_t>(3, cold_bytes() / int64_t(head) + 1));
  AlignedBuffer buf;
  try {
    check_fits(int64_t(head) * copies, "dense head copies");
    buf = alloc_aligned(head * size_t(copies), "dense head copies");
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  uint8_t* base = buf.get();
  for (int c = 0; c < copies; ++c)
    fill_head(reinterpret_cast<uint16_t*>(base + head * size_t(c)), head / 2, type, uint64_t(c + 1));
  std::vector<float> x(static_cast<size_t>(K)), y(static_cast<size_t>(M));
  std::mt19937 rng(static_cast<uint32_t>(K));
  std::uniform_real_distribution<float> fx(-1.0f, 1.0f);
  for (auto& v : x) v = fx(rng);
  using clock = std::chrono::steady_clock;
  double kernel_s = 0, roof_s = 0;
  int at = 0;
  bool ok = true;
  for (auto _ : st) {
    const DenseMatrix m{type, M, K, base + head * size_t(at)};
    const auto t0 = clock::now();
    ok &= for_rows(threads, M, [&](int64_t r0, int64_t r1) { set->dense_gemm(m, x.data(), 1, y.data(), M, r0, r1); });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    const auto t1 = clock::now();
    // The copy read two calls from now is the least recently touched.
    const RoofBuffer other{base + head * size_t((at + 2) % copies), head};
    benchmark::DoNotOptimize(read_range(other, 0, head, threads));
    roof_s += std::chrono::duration<double>(clock::now() - t1).count();
    const double dt = std::chrono::duration<double>(t1 - t0).count();
    kernel_s += dt;
    st.SetIterationTime(dt);
    at = (at + 1) % copies;
  }
  if (!ok) {
    st.SkipWithError("a kernel threw during the timed loop");
    return;
  }
  using benchmark::Counter;
  const double bytes = double(st.iterations()) * double(head);
  st.counters["GB/s"] = Counter(bytes / kernel_s / 1e9);
  st.counters["roof_GB/s"] = Counter(bytes / roof_s / 1e9);
  st.counters["pct_roof"] = Counter(100.0 * roof_s / kernel_s);
  st.counters["copies"] = Counter(double(copies));
}

// "dense/<set>/<F16|BF16>/<M>x<K>", the start of every name here.
std::string head_name(const KernelSet& set, const Head& h) {
  return std::string("dense/") + set.name + "/" + (h.type == TensorType::F16 ? "F16/" : "BF16/") +
         std::to_string(h.shape.M) + "x" + std::to_string(h.shape.K);
}

// The sets timed here: every one this CPU runs but the scalar oracle.
std::vector<const KernelSet*> timed_sets() {
  std::vector<const KernelSet*> sets;
  for (const KernelSet* s : all_kernel_sets())
    if (s->available(cpu_features()) && s != &scalar_kernels()) sets.push_back(s);
  return sets;
}

}  // namespace

void register_all() {
  for (const Head& h : kHeads)
    for (const KernelSet* set : timed_sets())
      for (int n : kBatch)
        benchmark::RegisterBenchmark((head_name(*set, h) + "/n:" + std::to_string(n)).c_str(),
                                     [=](benchmark::State& st) { bm_dense(st, set, h.type, h.shape, n); })
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
  for (const Head& h : kWholeHeads)
    for (const KernelSet* set : timed_sets())
      for (int t : kThreads)
        benchmark::RegisterBenchmark((head_name(*set, h) + "/n:1/threads:" + std::to_string(t) + "/cold").c_str(),
                                     [=](benchmark::State& st) { bm_dense_cold(st, set, h.type, h.shape, t); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
  benchmark::AddCustomContext("tern_cpu", cpu_features().brand + " [" + cpu_features().summary() + "]");
}

}  // namespace tern::bench

int main(int argc, char** argv) { return tern::bench::run_main(argc, argv, "tern_bench_dense"); }
