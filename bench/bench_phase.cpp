// Fairy2i phase GEMV (docs/FAIRY2I.md) of every kernel set that has one
// (float, and int8 inputs of one or two digits), on
// LLaMA-2 7B's shapes, against four references measured by the same
// binary: the unfused scalar kernel (eight sub-GEMVs), the same SIMD
// kernel unfused where a set has that form (eight passes per row over the
// same planes, kernel_sets.h unfused_phase_gemm), the real ternary
// float and int8 kernels of the best set on the same real shape (TQ2_0, 2.06
// bits per weight against W2's 2.0), and the read roof. Names:
//   phase/<set>/W<stages>/<rows>x<cols>/threads:<T>/<warm|cold>
//   phase-unfused/<set>/W<stages>/<rows>x<cols>/threads:<T>/<warm|cold>
//   phase-i8/<set>/W<stages>/d<digits>/<rows>x<cols>/threads:<T>/<warm|cold>
//   ternary/<set>/TQ2_0/<float|int8>/<rows>x<cols>/threads:<T>/<warm|cold>
//   roof/read/threads:<T>
// rows x cols is the real matrix (2n x 2m). Cold calls rotate over copies
// totalling 4 x L3 and are each paired with a plain read of as many bytes
// (pct_roof), as in bench_kernels.cpp.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../kernels/kernel_sets.h"
#include "bench.h"
#include "tern/error.h"
#include "tern/phase.h"

namespace tern::bench {
namespace {

struct PhaseShape {
  int64_t rows, cols;  // real
};
// LLaMA-2 7B: q/k/v/o, gate/up, down.
constexpr PhaseShape kShapes[] = {{4096, 4096}, {11008, 4096}, {4096, 11008}};
constexpr int kStages = 2;

// Copies of a random W2 matrix: 1 (warm) or enough to exceed cold_bytes().
struct PhaseCopies {
  std::vector<AlignedBuffer> data;
  std::vector<float> scales;
  std::vector<PhaseMatrix> mats;
  int64_t bytes = 0;  // one matrix's planes
  size_t next = 0;
  // The least recently used copy (the only one when warm).
  const PhaseMatrix* advance() {
    const PhaseMatrix* w = &mats[next];
    next = (next + 1) % mats.size();
    return w;
  }
};

PhaseCopies make_copies(const PhaseShape& s, bool cold) {
  PhaseCopies c;
  const int64_t n = s.rows / 2, cols = phase_cols(s.cols / 2);
  c.bytes = kStages * n * (cols / kPhaseBlock) * int64_t(sizeof(BlockPhase));
  const int64_t count = cold ? std::max<int64_t>(2, cold_bytes() / c.bytes + 1) : 1;
  check_fits(count * c.bytes, "Fairy2i matrix copies");
  std::mt19937_64 rng(uint64_t(s.rows * 31 + s.cols));
  c.scales.assign(4 * kStages, 0.0f);
  for (float& v : c.scales) v = 0.01f + float(rng() % 1000) / 4000.0f;
  for (int64_t k = 0; k < count; ++k) {
    c.data.push_back(alloc_aligned(size_t(c.bytes), "a Fairy2i matrix copy"));
    auto* w = reinterpret_cast<uint64_t*>(c.data.back().get());
    for (size_t i = 0; i < size_t(c.bytes) / 8; ++i) w[i] = rng();
    c.mats.push_back(PhaseMatrix{n, cols, kStages, c.data.back().get(), c.scales.data()});
  }
  return c;
}

using clock_type = std::chrono::steady_clock;

struct Timing {
  double kernel_s = 0, roof_s = 0;
  bool ok = true;
};

// Each iteration: advance() picks the matrix (the least recently used copy
// when cold), then call(r0, r1) runs on the chunks of rows `threads`
// threads of the engine's pool claim (for_rows); a cold call is followed by a paired roof read of
// as many bytes.
template <class Advance, class Call>
Timing run_loop(benchmark::State& st, int threads, bool cold, int64_t rows, int64_t bytes, Advance advance,
                Call call) {
  Timing t;
  RoofBuffer roof;
  if (cold) roof = roof_buffer();
  const size_t span = roof.bytes > size_t(bytes) ? roof.bytes - size_t(bytes) : 0;
  static size_t roof_at = 0;
  for (auto _ : st) {
    advance();
    const auto t0 = clock_type::now();
    const bool ok = for_rows(threads, rows, call);
    benchmark::ClobberMemory();
    const auto t1 = clock_type::now();
    if (cold && span > 0) {
      roof_at = (roof_at + size_t(bytes) + 4096) % span;
      benchmark::DoNotOptimize(read_range(roof, roof_at, size_t(bytes), threads));
      t.roof_s += std::chrono::duration<double>(clock_type::now() - t1).count();
    }
    const double dt = std::chrono::duration<double>(t1 - t0).count();
    t.kernel_s += dt;
    st.SetIterationTime(dt);
    t.ok = t.ok && ok;
  }
  return t;
}

void report(benchmark::State& st, const Timing& t, int64_t bytes, int64_t weights) {
  using benchmark::Counter;
  if (!t.ok) {
    st.SkipWithError("a kernel threw during the timed loop");
    return;
  }
  const double iters = double(st.iterations());
  st.counters["GB/s"] = Counter(iters * double(bytes) / t.kernel_s / 1e9);
  st.counters["Gw/s"] = Counter(iters * double(weights) / t.kernel_s / 1e9);
  if (t.roof_s > 0) {
    st.counters["roof_GB/s"] = Counter(iters * double(bytes) / t.roof_s / 1e9);
    st.counters["pct_roof"] = Counter(100.0 * t.roof_s / t.kernel_s);
  }
  st.counters["bytes"] = Counter(double(bytes));
}

std::vector<float> random_input(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// The matrices (and for a cold run the roof's buffer), or false with the
// benchmark skipped when they do not fit.
bool setup(benchmark::State& st, const PhaseShape& s, bool cold, PhaseCopies& c) {
  try {
    c = make_copies(s, cold);
    if (cold) roof_buffer();
    return true;
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return false;
  }
}

void bm_phase(benchmark::State& st, PhaseGemm gemm, PhaseShape s, int threads, bool cold) {
  PhaseCopies c;
  if (!setup(st, s, cold, c)) return;
  std::vector<float> x = random_input(2 * c.mats[0].cols, 7), y(size_t(s.rows));
  const PhaseMatrix* w = &c.mats[0];
  const Timing t = run_loop(
      st, threads, cold, w->rows, c.bytes,
      [&] { w = c.advance(); },
      [&](int64_t r0, int64_t r1) { gemm(*w, x.data(), 1, y.data(), s.rows, r0, r1); });
  report(st, t, c.bytes, s.rows * s.cols);
}

// The int8 form on one token of `digits` int8 vectors (1: --float-act i8,
// 2: int16, as most tokens take).
void bm_phase_i8(benchmark::State& st, PhaseGemmI8 gemm, int digits, PhaseShape s, int threads, bool cold) {
  PhaseCopies c;
  if (!setup(st, s, cold, c)) return;
  const int64_t L = 2 * c.mats[0].cols;
  std::mt19937 rng(11);
  std::vector<int8_t> q(size_t(digits * L));
  for (int8_t& v : q) v = int8_t(int(rng() % 255) - 127);
  const float scale = 1.0f;
  std::vector<float> y(size_t(s.rows));
  const PhaseMatrix* w = &c.mats[0];
  const Timing t = run_loop(
      st, threads, cold, w->rows, c.bytes,
      [&] { w = c.advance(); },
      [&](int64_t r0, int64_t r1) { gemm(*w, q.data(), 1, &digits, &scale, y.data(), s.rows, r0, r1); });
  report(st, t, c.bytes, s.rows * s.cols);
}

void bm_ternary(benchmark::State& st, const KernelSet* set, ActMode mode, PhaseShape s, int threads, bool cold) {
  Rotation rot;
  try {
    rot = matrices(gguf::TensorType::TQ2_0, s.rows, s.cols, *set, cold);
    if (cold) roof_buffer();
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  std::vector<float> x = random_input(s.cols, 9), y(size_t(s.rows));
  std::vector<int8_t> q(size_t(s.cols), 3);
  std::vector<int32_t> sums(size_t(s.rows));
  const TernaryMatrix* w = &rot.last();
  const Timing t = run_loop(
      st, threads, cold, s.rows, rot.read_bytes, [&] { w = &rot.advance(); },
      [&](int64_t r0, int64_t r1) {
        if (mode == ActMode::Float) set->gemm_f32(*w, x.data(), 1, y.data(), r0, r1);
        else set->gemm_i8(*w, q.data(), 1, sums.data(), r0, r1);
      });
  report(st, t, rot.read_bytes, s.rows * s.cols);
}

std::string shape_name(PhaseShape s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

}  // namespace

void register_all() {
  register_roofs();
  const KernelSet* best_float = nullptr;
  const KernelSet* best_int8 = nullptr;
  for (const KernelSet* k : all_kernel_sets()) {
    if (!k->available(cpu_features())) continue;
    if (!best_float && kernel_supports(*k, ActMode::Float)) best_float = k;
    if (!best_int8 && kernel_supports(*k, ActMode::Int8)) best_int8 = k;
  }
  for (const PhaseShape& s : kShapes)
    for (int t : kThreads)
      for (bool cold : {false, true}) {
        std::string tail = "/";  // += avoids GCC 12's false -Wrestrict on "x" + string
        tail += shape_name(s);
        tail += "/threads:" + std::to_string(t);
        tail += cold ? "/cold" : "/warm";
        for (const KernelSet* k : all_kernel_sets()) {
          if (!k->available(cpu_features()) || !k->phase_gemm) continue;
          for (auto [kind, gemm] : {std::pair{"phase/", k->phase_gemm},
                                    std::pair{"phase-unfused/", kernels_detail::unfused_phase_gemm(*k)}}) {
            if (gemm == nullptr) continue;
            std::string name = kind;
            name += k->name;
            name += "/W" + std::to_string(kStages);
            name += tail;
            benchmark::RegisterBenchmark(name.c_str(),
                                         [=](benchmark::State& st) { bm_phase(st, gemm, s, t, cold); })
                ->UseManualTime()
                ->Unit(benchmark::kMicrosecond);
          }
        }
        for (const KernelSet* k : all_kernel_sets()) {
          if (!k->available(cpu_features()) || !k->phase_gemm_i8) continue;
          for (int digits : {1, 2}) {
            std::string name = "phase-i8/";
            name += k->name;
            name += "/W" + std::to_string(kStages) + "/d" + std::to_string(digits);
            name += tail;
            const PhaseGemmI8 gemm = k->phase_gemm_i8;
            benchmark::RegisterBenchmark(name.c_str(),
                                         [=](benchmark::State& st) { bm_phase_i8(st, gemm, digits, s, t, cold); })
                ->UseManualTime()
                ->Unit(benchmark::kMicrosecond);
          }
        }
        for (auto [k, mode] : {std::pair{best_float, ActMode::Float}, std::pair{best_int8, ActMode::Int8}}) {
          std::string name = "ternary/";
          name += k->name;
          name += mode == ActMode::Float ? "/TQ2_0/float" : "/TQ2_0/int8";
          name += tail;
          benchmark::RegisterBenchmark(name.c_str(),
                                       [=](benchmark::State& st) { bm_ternary(st, k, mode, s, t, cold); })
              ->UseManualTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
  benchmark::AddCustomContext("tern_cpu", cpu_features().brand + " [" + cpu_features().summary() + "]");
  benchmark::AddCustomContext("tern_cold_bytes", std::to_string(cold_bytes()));
}

}  // namespace tern::bench

int main(int argc, char** argv) {
  return tern::bench::run_main(argc, argv, "tern_bench_phase");
}
