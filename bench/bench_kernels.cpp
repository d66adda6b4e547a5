// Decode-GEMV throughput of every kernel set this CPU can run, against the
// plain read-bandwidth roof measured by the same binary. Names:
//   gemv/<set>/<TQ2_0|TQ1_0>/<float|int8>/<M>x<K>/threads:<T>/<warm|cold>
//   roof/read/threads:<T>
// (Google Benchmark appends /real_time to the roof and /manual_time to the
// GEMVs: the work runs on the pool's threads, so wall time, not the main
// thread's CPU time, is what counts, and a cold GEMV's time excludes the
// paired roof read that follows it.)
// bench/README.md has the commands; bench/summarize.py turns --benchmark_format=json
// output into the markdown table of docs/PERFORMANCE.md.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "bench.h"
#include "tern/error.h"

namespace tern::bench {
namespace {

using gguf::TensorType;

// BitNet b1.58 2B-4T, bitnet_b1_58-large, Llama3-8B: attention, gate/up, down.
constexpr Shape kShapes[] = {
    {2560, 2560}, {640, 2560},  {6912, 2560}, {2560, 6912},   {1536, 1536},
    {4096, 1536}, {1536, 4096}, {4096, 4096}, {14336, 4096}, {4096, 14336},
};

struct Case {
  const KernelSet* set;
  TensorType type;
  ActMode mode;
  Shape shape;
  int threads;
  bool cold;
};

const char* type_name(TensorType t) { return t == TensorType::TQ2_0 ? "TQ2_0" : "TQ1_0"; }
const char* mode_name(ActMode m) { return m == ActMode::Float ? "float" : "int8"; }

void bm_gemv(benchmark::State& st, const Case& c) {
  const int64_t M = c.shape.M, K = c.shape.K;
  Rotation rot;
  try {
    rot = matrices(c.type, M, K, *c.set, c.cold);
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  std::mt19937 rng(static_cast<uint32_t>(K));
  const auto uK = static_cast<size_t>(K), uM = static_cast<size_t>(M);
  std::vector<float> x(uK), y(uM);
  std::vector<int8_t> q(uK);
  std::vector<int32_t> sums(uM);
  std::uniform_real_distribution<float> fx(-1.0f, 1.0f);
  std::uniform_int_distribution<int> iq(-127, 127);
  for (auto& v : x) v = fx(rng);
  for (auto& v : q) v = int8_t(iq(rng));

  // One untimed call, on the copy the rotation reaches last, so that a
  // kernel that rejects its input shows up as an error, not as a time.
  try {
    if (c.mode == ActMode::Float) c.set->gemm_f32(rot.last(), x.data(), 1, y.data(), 0, M);
    else c.set->gemm_i8(rot.last(), q.data(), 1, sums.data(), 0, M);
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  // Cold calls are paired with a plain read of as many bytes from the roof
  // buffer, on as many threads, right after each call: this machine's
  // bandwidth drifts with its neighbours by up to 2x within minutes, so a
  // roof measured once per run is no yardstick; the paired one sees the same
  // conditions as the call it follows.
  RoofBuffer roof;
  if (c.cold) {
    try {
      roof = roof_buffer();
    } catch (const std::exception& e) {
      st.SkipWithError(e.what());
      return;
    }
  }
  const size_t span = roof.bytes > size_t(rot.read_bytes) ? roof.bytes - size_t(rot.read_bytes) : 0;
  static size_t roof_at = 0;  // rotates through the buffer across calls
  using clock = std::chrono::steady_clock;
  double kernel_s = 0, roof_s = 0;
  bool ok = true;
  for (auto _ : st) {
    const auto t0 = clock::now();
    ok &= split_rows(*c.set, c.mode, rot.advance(), x.data(), q.data(), 1, y.data(), sums.data(), c.threads);
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(sums.data());
    benchmark::ClobberMemory();
    const auto t1 = clock::now();
    if (c.cold && span > 0) {
      roof_at = (roof_at + size_t(rot.read_bytes) + 4096) % span;
      benchmark::DoNotOptimize(read_range(roof, roof_at, size_t(rot.read_bytes), c.threads));
      roof_s += std::chrono::duration<double>(clock::now() - t1).count();
    }
    const double dt = std::chrono::duration<double>(t1 - t0).count();
    kernel_s += dt;
    st.SetIterationTime(dt);
  }
  if (!ok) {
    st.SkipWithError("a kernel threw during the timed loop");
    return;
  }
  using benchmark::Counter;
  const double iters = double(st.iterations()), bytes = iters * double(rot.read_bytes);
  st.counters["GB/s"] = Counter(bytes / kernel_s / 1e9);
  st.counters["Gw/s"] = Counter(iters * double(M) * double(K) / kernel_s / 1e9);
  if (roof_s > 0) {
    st.counters["roof_GB/s"] = Counter(bytes / roof_s / 1e9);  // the paired plain read
    st.counters["pct_roof"] = Counter(100.0 * roof_s / kernel_s);
  }
  st.counters["bytes"] = Counter(double(rot.read_bytes));  // weight bytes per GEMV
  st.counters["copies"] = Counter(double(rot.mats.size()));
  st.SetLabel(rot.packed ? "prepared layout" : "gguf layout");
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

void register_all() {
  register_roofs();
  std::vector<const KernelSet*> sets;
  std::vector<std::string> on, off;
  for (const KernelSet* s : all_kernel_sets()) {
    if (s->available(cpu_features())) {
      sets.push_back(s);
      on.emplace_back(s->name);
    } else {
      off.emplace_back(s->name);
    }
  }
  // Shape-major, so the sets that read the GGUF layout share one set of
  // copies per shape and every prepared set builds its own only once.
  for (TensorType type : {TensorType::TQ2_0, TensorType::TQ1_0})
    for (const Shape& shape : kShapes)
      for (const KernelSet* s : sets)
        for (ActMode mode : {ActMode::Float, ActMode::Int8}) {
          if (!kernel_supports(*s, mode)) continue;
          for (int t : kThreads)
            for (bool cold : {false, true}) {
              const Case c{s, type, mode, shape, t, cold};
              const std::string name = std::string("gemv/") + s->name + "/" + type_name(type) + "/" +
                                       mode_name(mode) + "/" + std::to_string(shape.M) + "x" +
                                       std::to_string(shape.K) + "/threads:" + std::to_string(t) +
                                       (cold ? "/cold" : "/warm");
              benchmark::RegisterBenchmark(name.c_str(), [c](benchmark::State& st) { bm_gemv(st, c); })
                  ->UseManualTime()
                  ->Unit(benchmark::kMicrosecond);
            }
        }
  std::string l3_source;
  const int64_t l3 = l3_bytes(&l3_source);
  benchmark::AddCustomContext("tern_cpu", cpu_features().brand + " [" + cpu_features().summary() + "]");
  benchmark::AddCustomContext("tern_l3_bytes", std::to_string(l3) + " (" + l3_source + ")");
  benchmark::AddCustomContext("tern_cold_bytes", std::to_string(4 * l3));
  benchmark::AddCustomContext("tern_kernel_sets", join(on));
  benchmark::AddCustomContext("tern_kernel_sets_unavailable", off.empty() ? "none" : join(off));
  benchmark::AddCustomContext("tern_available_cpus", std::to_string(ThreadPool::available_cpus()));
}

}  // namespace tern::bench

int main(int argc, char** argv) {
  return tern::bench::run_main(argc, argv, "tern_bench_kernels");
}
