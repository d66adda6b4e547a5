// Internal to tern_kernels: the one owner of every prepared weight layout
// (what KernelSet::prepare returns). Each starts with the same header, so a
// kernel handed a layout made for another arrangement, type or shape (a
// matrix prepared by another set, or a stale pointer after a reload) gets
// an error naming both, not a wrong answer. Kernels never read the header
// themselves: they ask layout_body for the kind they read.
//
// Plain declarations only: this header is included by translation units
// built with ISA flags (see avx2_common.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "tern/kernels.h"

namespace tern::kernels_detail {

// One value per arrangement of the weights, not per kernel set: two sets
// reading the same arrangement (avx2 and avx2-vnni) share its kind.
enum class LayoutKind : uint32_t {
  Chunk64 = 1,   // 2-bit codes, code_layout.h
  Linear = 2,    // 2-bit codes, code_layout.h
  Base3x64 = 3,  // 1.6-bit codes, code_layout.h
  Tl1Pairs = 4,  // 4-bit pair indices in 16-row groups, tl1_layout.h
  NeonTbl = 5,   // pair / triple indices in 16-row groups, arm/neon_tbl.cpp
  Tq2Blocks = 6, // TQ2_0's 64 code bytes per block, no scale, x86/avx2_layout.cpp
};
const char* layout_kind_name(LayoutKind kind);

// Bytes before the body: the body stays 64-byte aligned.
constexpr int64_t kLayoutHeaderBytes = 64;

// Memory for a layout: at least 64-byte aligned. From 2 MiB on it is 2 MiB
// aligned with transparent huge pages requested, so DRAM streams cross no
// 4 KiB page boundary; from 64 KiB it is a page-aligned piece of a shared
// huge-page slab, which the returned pointer keeps alive.
std::shared_ptr<void> alloc_layout(size_t bytes);

// A new layout of `kind` for w (validated with check_call first) with
// `body_bytes` of body, its header written; *body points at the body for
// the caller to fill. The result is what KernelSet::prepare returns.
std::shared_ptr<const void> new_layout(const TernaryMatrix& w, LayoutKind kind, int64_t body_bytes,
                                       uint8_t** body);

// The body of w.packed: nullptr if w.packed is null (the caller reads w.data
// or repacks on the fly); throws tern::Error ("ternary kernel call: matrix
// 64x512 TQ1_0 holds a tl1-pairs layout, this kernel reads chunk64") if the
// layout is of another kind or was made for another type or shape.
const uint8_t* layout_body(const TernaryMatrix& w, LayoutKind kind);

}  // namespace tern::kernels_detail
