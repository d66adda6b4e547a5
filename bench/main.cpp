// What both kernel benchmarks share: main() and the read roof's benchmark.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "bench.h"

namespace tern::bench {

void bm_roof(benchmark::State& st, int threads) {
  RoofBuffer b;
  try {
    b = roof_buffer();
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  const char* isa = "";
  // Persistent, like the cold GEMV rotation: Google Benchmark calls this
  // function several times, and each call must go on with the least recently
  // read slice. The untimed call starts the pool's threads on the slice the
  // rotation reaches last.
  static int slice = 0;
  read_slice(b, (slice + kRoofSlices - 1) % kRoofSlices, threads, &isa);
  for (auto _ : st) {
    uint64_t s = read_slice(b, slice, threads, &isa);
    benchmark::DoNotOptimize(s);
    slice = (slice + 1) % kRoofSlices;
  }
  const double iters = double(st.iterations());
  using benchmark::Counter;
  st.counters["GB/s"] = Counter(iters * double(b.slice_bytes()) / 1e9, Counter::kIsRate, Counter::kIs1000);
  st.counters["bytes"] = Counter(double(b.slice_bytes()));
  st.counters["slices"] = Counter(double(kRoofSlices));
  st.SetLabel(std::string(isa) + " loads");
}

void register_roofs() {
  for (int t : kThreads)
    benchmark::RegisterBenchmark(("roof/read/threads:" + std::to_string(t)).c_str(),
                                 [t](benchmark::State& st) { bm_roof(st, t); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
}

int run_main(int argc, char** argv, const char* program) {
  // A short default per benchmark keeps the full table to minutes; an
  // explicit --benchmark_min_time wins.
  std::vector<char*> args(argv, argv + argc);
  static char default_min_time[] = "--benchmark_min_time=0.1";
  bool has_min_time = false;
  for (int i = 1; i < argc; ++i) has_min_time |= std::strncmp(argv[i], "--benchmark_min_time", 20) == 0;
  if (!has_min_time) args.insert(args.begin() + 1, default_min_time);
  int n = int(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  try {
    register_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace tern::bench
