// Buffers that are streamed from DRAM (prepared weights, benchmark copies,
// the read-roof buffer): one allocation rule for all of them, so a kernel
// and the roof it is compared with are read from the same kind of pages.
// And zero-filled arrays that commit pages only as they are written (the
// KV cache).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tern {

// From this size up a buffer starts on a 2 MiB boundary and asks for
// transparent huge pages before its first touch: the stream then crosses no
// 4 KiB page boundary, where the hardware prefetchers stop and restart
// (git show d2934d8:docs/PERFORMANCE.md, "Kernel benchmark": about 8% more bandwidth on one
// core). Advice only;
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

struct ZeroedFree {
  size_t bytes = 0;     // of the mapping, when `mapped`
  bool mapped = false;  // an anonymous mapping of its own, else calloc's
  void operator()(uint8_t* p) const;
};
using ZeroedBuffer = std::unique_ptr<uint8_t[], ZeroedFree>;

// `bytes` of zeros on pages that commit no memory until written: calloc
// (whose large blocks are fresh mappings), or, with `huge` and from
// kHugePageBytes up, a mapping of its own on a 2 MiB boundary with the
// huge-page advice, for arrays whose pages fill in order. Throws
// std::bad_alloc.
ZeroedBuffer alloc_zeroed(size_t bytes, bool huge);

}  // namespace tern
