#include "tern/aligned_buffer.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <cstdlib>
#include <new>
#include <string>

#include "tern/error.h"
#include "tern/input_file.h"

namespace tern {

void AlignedFree::operator()(uint8_t* p) const { ::operator delete(p, std::align_val_t(align)); }

AlignedBuffer alloc_aligned(size_t bytes, const char* what) {
  const size_t align = bytes >= kHugePageBytes ? kHugePageBytes : kCacheLineBytes;
  const size_t total = bytes == 0 ? align : (bytes + align - 1) / align * align;
  if (total < bytes) throw Error("cannot allocate " + byte_size(bytes) + " for " + what);
  void* mem = ::operator new(total, std::align_val_t(align), std::nothrow);
  if (mem == nullptr) throw Error("cannot allocate " + byte_size(total) + " for " + what);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (align == kHugePageBytes) madvise(mem, total, MADV_HUGEPAGE);
#endif
  return AlignedBuffer(static_cast<uint8_t*>(mem), AlignedFree{align});
}

void ZeroedFree::operator()(uint8_t* p) const {
#if defined(__linux__)
  if (mapped) {
    munmap(p, bytes);
    return;
  }
#endif
  std::free(p);
}

ZeroedBuffer alloc_zeroed(size_t bytes, bool huge) {
  if (bytes == 0) return ZeroedBuffer();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (huge && bytes >= kHugePageBytes) {
    const size_t total = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    if (total < bytes || total + kHugePageBytes < total) throw std::bad_alloc();
    // One huge page more than needed, then the ends trimmed so that the
    // rest starts on a 2 MiB boundary: every huge page maps whole.
    void* m = mmap(nullptr, total + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t at = reinterpret_cast<uintptr_t>(m);
    const uintptr_t start = (at + kHugePageBytes - 1) & ~uintptr_t(kHugePageBytes - 1);
    if (start > at) munmap(m, start - at);
    munmap(reinterpret_cast<void*>(start + total), at + kHugePageBytes - start);  // never empty
    madvise(reinterpret_cast<void*>(start), total, MADV_HUGEPAGE);
    return ZeroedBuffer(reinterpret_cast<uint8_t*>(start), ZeroedFree{total, true});
  }
#endif
  void* p = std::calloc(bytes, 1);
  if (p == nullptr) throw std::bad_alloc();
  return ZeroedBuffer(static_cast<uint8_t*>(p), ZeroedFree{bytes, false});
}

}  // namespace tern
