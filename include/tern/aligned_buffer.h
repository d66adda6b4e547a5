// Buffers that are streamed from DRAM (prepared weights, benchmark copies,
// the read-roof buffer): one allocation rule for all of them, so a kernel
// and the roof it is compared with are read from the same kind of pages.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tern {

// From this size up a buffer starts on a 2 MiB boundary and asks for
// transparent huge pages before its first touch: the stream then crosses no
// 4 KiB page boundary, where the hardware prefetchers stop and restart
// (docs/PERFORMANCE.md: about 8% more bandwidth on one core). Advice only;
// without THP the pages are ordinary ones.
constexpr size_t kHugePageBytes = size_t(1) << 21;
constexpr size_t kCacheLineBytes = 64;

struct AlignedFree {
  size_t align;
  void operator()(uint8_t* p) const;
};
using AlignedBuffer = std::unique_ptr<uint8_t[], AlignedFree>;

// `bytes` rounded up to whole units of the alignment: 64 bytes below
// kHugePageBytes, 2 MiB (with the huge-page advice) from it. The memory is
// untouched, so no page is committed until written. Throws tern::Error
// ("cannot allocate 3.2 GiB for WHAT") if the allocation fails.
AlignedBuffer alloc_aligned(size_t bytes, const char* what);

}  // namespace tern
