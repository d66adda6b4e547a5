// Internal to tern_kernels: what the kernel sets share.
//
// Adding a kernel set for a new ISA (say AVX2):
//  1. Write kernels/avx2.cpp defining `const KernelSet& avx2_kernels()`, whose
//     `available` checks every CPUID bit it uses *and* the OS state bits
//     (os_avx / os_avx512), and whose results match scalar_kernels() (exactly
//     for int8, within float reassociation error for float).
//  2. Give that file, and only it, the ISA's compiler flags in CMakeLists.txt
//     (set_source_files_properties(kernels/avx2.cpp PROPERTIES COMPILE_OPTIONS
//     "-mavx2;-mfma;...")): the rest of the binary must run on any x86-64, so
//     no inline function compiled with those flags may be shared with it.
//  3. Declare the accessor below and add it to kSetTable in dispatch.cpp,
//     keeping the table best first with scalar last.
#pragma once
#include <cstdint>

#include "tern/kernels.h"

namespace tern::kernels_detail {

// Throws tern::Error unless w is a well-formed ternary matrix (TQ1_0/TQ2_0,
// cols a positive multiple of 256, data set, row_scale set in Float mode),
// 0 <= r0 <= r1 <= rows and n >= 0. Kernels call it once per call, so a
// caller's mistake is an error message rather than a stray write.
void check_call(const TernaryMatrix& w, ActMode mode, int64_t n, int64_t r0, int64_t r1);

}  // namespace tern::kernels_detail
