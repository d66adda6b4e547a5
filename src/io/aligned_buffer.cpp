#include "tern/aligned_buffer.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

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

}  // namespace tern
