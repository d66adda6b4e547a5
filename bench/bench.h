// Shared by the kernel benchmark's translation units: the weight matrices
// (warm: one; DRAM-cold: a rotation over distinct copies) and the read roof.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tern/aligned_buffer.h"
#include "tern/kernels.h"
#include "tern/thread_pool.h"

namespace benchmark {
class State;
}

namespace tern::bench {

// L3 size in bytes: TERN_BENCH_L3_BYTES (e.g. "32M") if set, else
// sysconf(_SC_LEVEL3_CACHE_SIZE), else /sys/.../cpu0/cache/index3/size,
// else 32 MiB. `source` says which one was used.
int64_t l3_bytes(std::string* source = nullptr);
// A working set this large cannot stay in any cache: 4 x L3.
inline int64_t cold_bytes() { return 4 * l3_bytes(); }

// Weight copies come from tern::alloc_aligned, as the prepared layouts and
// the roof's buffer do: from 2 MiB up on transparent huge pages, so a kernel
// that reads the GGUF layout in place is timed on the same page size as the
// roof beside it (with THP in madvise mode, copies from plain malloc were on
// 4 KiB pages; the in-place avx2 kernel's cold figures rose 1-3 points of
// roof, see git show d2934d8:docs/PERFORMANCE.md, "Kernel benchmark").

// Throws tern::Error if `extra` more bytes would leave too little memory for
// the rest of the machine (the box is shared); `what` names the allocation.
void check_fits(int64_t extra, const char* what);

// The matrices one benchmark cycles through. `next` is shared by every
// benchmark on the same copies, so a cold rotation always continues with the
// least recently touched copy, even across Google Benchmark's repeated calls.
struct Rotation {
  std::vector<TernaryMatrix> mats;  // 1 (warm) or enough to exceed cold_bytes()
  int64_t read_bytes = 0;           // weight bytes one full GEMV reads
  bool packed = false;              // read_bytes is the prepare()d layout's size
  size_t* next = nullptr;
  // The matrix the next timed call uses; it is the copy least recently used.
  const TernaryMatrix& advance() {
    const TernaryMatrix& w = mats[*next];
    *next = (*next + 1) % mats.size();
    return w;
  }
  // The copy advance() will return last: touching it now keeps the others cold.
  const TernaryMatrix& last() const { return mats[(*next + mats.size() - 1) % mats.size()]; }
};

// The engine's thread pool with `threads` threads, one per count, kept for
// the program's life, so a benchmark's threads are the forward pass's.
ThreadPool& pool(int threads);
// f(r0, r1) over the rows [0, rows) in chunks the pool's threads claim,
// as src/model's linears split rows (row_chunk). False if f threw.
template <class F>
bool for_rows(int threads, int64_t rows, F&& f) {
  ThreadPool& p = pool(threads);
  const int64_t chunk = row_chunk(rows, p.size());
  try {
    p.run([&](int) { p.for_chunks(rows, chunk, f); }, ThreadPool::Split::Claimed);
  } catch (...) {
    return false;
  }
  return true;
}

// Y[n][M] = X[n][K] T^T over `threads` threads as for_rows splits it, each
// chunk a call of the set's GEMM for `mode` (x read in float mode, q in
// int8 mode; y or sums written). Returns false if a kernel threw.
bool split_rows(const KernelSet& set, ActMode mode, const TernaryMatrix& w, const float* x, const int8_t* q,
                int64_t n, float* y, int32_t* sums, int threads);

// Random ternary weights [M x K] of `type` (fixed seed), in distinct 64-byte
// aligned allocations, each prepared by set.prepare if the set has one. Copies are
// built once per (type, M, K) and reused by later calls with the same shape;
// a new shape frees the old copies. Throws tern::Error if the copies would
// not fit in available memory.
Rotation matrices(gguf::TensorType type, int64_t M, int64_t K, const KernelSet& set, bool cold);
void release_matrices();

// The read roof: a buffer of about cold_bytes(), read kRoofSlices-th at a
// time in rotation (so every slice is evicted before it comes round again,
// and a 0.1 s run still gets several iterations), summed with the widest
// vector loads the CPU has over contiguous ranges, one per thread of
// pool(threads). `isa` names the code path.
constexpr int kRoofSlices = 16;
struct RoofBuffer {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  size_t slice_bytes() const { return bytes / kRoofSlices; }
};
RoofBuffer roof_buffer();  // allocated and filled on first use; kept beside the matrices
void release_roof_buffer();
uint64_t read_slice(const RoofBuffer& b, int slice, int threads, const char** isa);
// Reads `bytes` (rounded down to 256) from `offset`, split over `threads`
// like a GEMV's rows: the roof paired with each cold GEMV call.
uint64_t read_range(const RoofBuffer& b, size_t offset, size_t bytes, int threads);

// A weight matrix's shape, rows x cols, and the thread counts every
// program runs.
struct Shape {
  int64_t M, K;
};
constexpr int kThreads[] = {1, 2};

// roof/read/threads:<T>: the read roof as a benchmark (GB/s counter).
void bm_roof(benchmark::State& st, int threads);
// Registers bm_roof for each of kThreads (every program reports its ratios
// against them).
void register_roofs();

// Each benchmark program's own: registers its benchmarks.
void register_all();
// Google Benchmark's main with a 0.1 s default --benchmark_min_time, around
// register_all (whose errors are printed as "program: message", exit 1).
int run_main(int argc, char** argv, const char* program);

}  // namespace tern::bench
