// The plain read-bandwidth roof every kernel is compared against: a buffer
// larger than 4 x L3 summed by tern::read_sum (kernels/read_roof.cpp). The
// roof is the fastest plain read found on the machines of
// docs/PERFORMANCE.md, so that no kernel looks better than it is: the buffer
// is on transparent huge pages (as the repacked weight layouts are) and the
// loop prefetches ahead; either one alone left 10-15% of the bandwidth
// unused on one core.

#include <cstdlib>
#include <cstring>
#include <memory>

#include "bench.h"
#include "tern/error.h"

namespace tern::bench {
namespace {

constexpr size_t kChunk = kReadChunk;

AlignedBuffer g_buf;
size_t g_bytes = 0;

}  // namespace

RoofBuffer roof_buffer() {
  if (!g_buf) {
    constexpr size_t kUnit = size_t(kRoofSlices) * kHugePageBytes;  // whole huge pages per slice
    const size_t bytes = (size_t(cold_bytes()) + kUnit - 1) / kUnit * kUnit;
    check_fits(int64_t(bytes), "read-roof buffer");
    g_buf = alloc_aligned(bytes, "the read-roof buffer");
    uint8_t* p = g_buf.get();
    g_bytes = bytes;
    // Distinct content per word: no zero-page or merged pages to read instead.
    uint64_t* w = reinterpret_cast<uint64_t*>(p);
    for (size_t i = 0; i < bytes / 8; ++i) w[i] = i * 0x9E3779B97F4A7C15ull;
  }
  return RoofBuffer{g_buf.get(), g_bytes};
}

void release_roof_buffer() {
  g_buf.reset();
  g_bytes = 0;
}

uint64_t read_range(const RoofBuffer& b, size_t offset, size_t bytes, int threads) {
  const size_t chunks = bytes / kChunk;
  const uint8_t* base = b.data + offset / kChunk * kChunk;
  std::vector<uint64_t> part(static_cast<size_t>(threads), 0);
  ThreadPool& p = pool(threads);
  const size_t nt = size_t(p.size());
  p.run([&](int t) {
    const size_t c0 = chunks * size_t(t) / nt, c1 = chunks * size_t(t + 1) / nt;
    if (c0 < c1) part[size_t(t)] = read_sum(base + c0 * kChunk, (c1 - c0) * kChunk);
  });
  uint64_t total = 0;
  for (uint64_t v : part) total += v;
  return total;
}

uint64_t read_slice(const RoofBuffer& b, int slice, int threads, const char** isa) {
  read_sum(b.data, 0, isa);
  return read_range(b, size_t(slice) * b.slice_bytes(), b.slice_bytes(), threads);
}

}  // namespace tern::bench
