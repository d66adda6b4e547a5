// The prepared-layout header and its checks (layout.h).
#include "layout.h"

#include <cstring>
#include <mutex>
#include <string>

#include "kernel_sets.h"
#include "tern/aligned_buffer.h"
#include "tern/error.h"

namespace tern::kernels_detail {
namespace {

constexpr uint64_t kMagic = 0x32594c504e5254ull;  // "TRNPLY2"

struct Header {
  uint64_t magic;
  LayoutKind kind;
  gguf::TensorType type;
  int64_t rows, cols;
};
static_assert(sizeof(Header) <= kLayoutHeaderBytes, "the header must fit before the aligned body");

// A layout of 2 MiB or more gets its own huge-page-aligned buffer
// (tern/aligned_buffer.h). Smaller layouts (bitnet_b1_58-large's
// 1536 x 1536 matrices are 0.6 MB) would each get 4 KiB pages of their own,
// and decode at that shape ran about 4-5% slower for it
// (git show d2934d8:docs/PERFORMANCE.md, "Small layouts on huge
// pages"). From kSlabMin up they are cut from shared
// huge-page slabs instead; below it a matrix is too small for its pages to
// matter, and a slab's first touch (2 MiB zeroed) would cost more than the
// matrix.
constexpr size_t kSlabMin = size_t(64) << 10;
constexpr size_t kSlabBytes = size_t(32) << 20;
constexpr size_t kSlabStep = 4096;  // each layout starts on its own page

std::shared_ptr<void> alloc_shared(size_t bytes) {
  AlignedBuffer buf = alloc_aligned(bytes, "a prepared weight layout");
  const AlignedFree free = buf.get_deleter();
  return std::shared_ptr<void>(buf.release(), free);
}

// Layouts cut from a slab share its ownership (shared_ptr's aliasing
// constructor), so the slab is freed with the last of them. The allocator
// keeps only a weak reference to the slab it is filling: it holds no
// memory of its own once every model is gone. Layers prepare in parallel,
// hence the lock; it is taken once per matrix.
class SlabAllocator {
 public:
  std::shared_ptr<void> alloc(size_t bytes) {
    const size_t need = (bytes + kSlabStep - 1) / kSlabStep * kSlabStep;
    const std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<void> slab = slab_.lock();
    if (!slab || used_ + need > kSlabBytes) {
      slab = alloc_shared(kSlabBytes);
      slab_ = slab;
      used_ = 0;
    }
    void* p = static_cast<uint8_t*>(slab.get()) + used_;
    used_ += need;
    return std::shared_ptr<void>(std::move(slab), p);
  }

 private:
  std::mutex mu_;
  std::weak_ptr<void> slab_;
  size_t used_ = 0;
};

std::string type_name(gguf::TensorType t) {
  return gguf::known_type(uint32_t(t)) ? gguf::traits(t).name : "type " + std::to_string(uint32_t(t));
}

std::string describe(LayoutKind kind, gguf::TensorType type, int64_t rows, int64_t cols) {
  return std::string(layout_kind_name(kind)) + " layout for " + std::to_string(rows) + "x" +
         std::to_string(cols) + " " + type_name(type);
}

}  // namespace

const char* layout_kind_name(LayoutKind kind) {
  switch (kind) {
    case LayoutKind::Chunk64: return "chunk64";
    case LayoutKind::Linear: return "linear";
    case LayoutKind::Base3x64: return "base3x64";
    case LayoutKind::Tl1Pairs: return "tl1-pairs";
    case LayoutKind::NeonTbl: return "neon-tbl";
    case LayoutKind::Tq2Blocks: return "tq2-blocks";
  }
  return "unknown";
}

std::shared_ptr<void> alloc_layout(size_t bytes) {
  if (bytes >= kHugePageBytes || bytes < kSlabMin) return alloc_shared(bytes);
  static SlabAllocator slabs;
  return slabs.alloc(bytes);
}

std::shared_ptr<const void> new_layout(const TernaryMatrix& w, LayoutKind kind, int64_t body_bytes,
                                       uint8_t** body) {
  check_call(w, ActMode::Int8, 0, 0, w.rows);
  if (body_bytes < 0) throw Error("ternary kernel prepare: negative layout size");
  std::shared_ptr<void> owner = alloc_layout(size_t(kLayoutHeaderBytes + body_bytes));
  const Header h{kMagic, kind, w.type, w.rows, w.cols};
  std::memcpy(owner.get(), &h, sizeof h);
  *body = static_cast<uint8_t*>(owner.get()) + kLayoutHeaderBytes;
  return owner;
}

const uint8_t* layout_body(const TernaryMatrix& w, LayoutKind kind) {
  if (w.packed == nullptr) return nullptr;
  Header h;
  std::memcpy(&h, w.packed, sizeof h);
  if (h.magic != kMagic)
    throw Error("ternary kernel call: matrix " + std::to_string(w.rows) + "x" + std::to_string(w.cols) +
                " holds no prepared layout (this kernel reads " + layout_kind_name(kind) + ")");
  if (h.kind != kind || h.type != w.type || h.rows != w.rows || h.cols != w.cols)
    throw Error("ternary kernel call: matrix " + std::to_string(w.rows) + "x" + std::to_string(w.cols) +
                " " + type_name(w.type) + " holds a " + describe(h.kind, h.type, h.rows, h.cols) +
                "; this kernel reads " + describe(kind, w.type, w.rows, w.cols));
  return static_cast<const uint8_t*>(w.packed) + kLayoutHeaderBytes;
}

}  // namespace tern::kernels_detail
