// Internal to tern_kernels: what the kernel sets share.
//
// Adding a kernel set for a new ISA (say AVX2):
//  1. Write kernels/x86/avx2.cpp defining `const KernelSet& avx2_kernels()`
//     in namespace tern::kernels_detail, whose
//     `available` checks every CPUID bit it uses *and* the OS state bits
//     (os_avx / os_avx512), and whose results match scalar_kernels() (exactly
//     for int8, within float reassociation error for float).
//  2. Give that file, and only it, the ISA's compiler flags with a
//     tern_isa_kernel(...) line in CMakeLists.txt: the rest of the binary must
//     run on any CPU of the architecture, so no inline function compiled with
//     those flags may be shared with it (the isa_units_define_no_weak_code
//     test lists any weak symbol the file defines).
//  3. Declare the accessor below and add it to kSetTable in dispatch.cpp under
//     its TERN_KERNEL_* define, keeping the table best first, scalar last.
#pragma once
#include <cstdint>

#include "tern/kernels.h"

namespace tern::kernels_detail {

// Throws tern::Error unless w is a well-formed ternary matrix (TQ1_0/TQ2_0,
// cols a positive multiple of 256, data set, row_scale set in Float mode),
// 0 <= r0 <= r1 <= rows and n >= 0. Kernels call it once per call, so a
// caller's mistake is an error message rather than a stray write.
void check_call(const TernaryMatrix& w, ActMode mode, int64_t n, int64_t r0, int64_t r1);
// The same for a Fairy2i matrix (ldy >= 2 * rows when n > 1).
void check_phase_call(const PhaseMatrix& w, int64_t n, int64_t ldy, int64_t r0, int64_t r1);
// The same for PhaseGemmI8's arguments (each token 1 to kMaxActDigits
// digits); returns the int8 vectors in xq.
int64_t check_phase_i8_call(const PhaseMatrix& w, const int8_t* xq, int64_t n, const int* digits,
                            const float* xscale, int64_t ldy, int64_t r0, int64_t r1);
// The same for a group-scaled matrix (PQ2_0 or Q2_0; ldy >= r1 when n > 1).
void check_group_call(const GroupMatrix& w, int64_t n, int64_t ldy, int64_t r0, int64_t r1);
// The same for a dense float matrix (F32, F16 or BF16; ldy >= r1 when n > 1).
void check_dense_call(const DenseMatrix& w, int64_t n, int64_t ldy, int64_t r0, int64_t r1);

// Throws tern::Error(message). The ISA files call this instead of throwing
// themselves: constructing an Error there would define its inline
// destructor as a weak symbol compiled with their -m flags, which the
// linker may pick for the whole binary (tests/tools/check_isa_symbols.sh).
[[noreturn]] void throw_kernel_error(const char* message);

// The gated activations at the x86 sets' widths (kernels/x86/glu_*.cpp).
void silu_glu_avx2(float* gate, const float* up, int n);
void relu2_glu_avx2(float* gate, const float* up, int n);
void silu_glu_avx512(float* gate, const float* up, int n);
void relu2_glu_avx512(float* gate, const float* up, int n);

// One accessor per ISA file (kernels/x86/*.cpp, kernels/arm/*.cpp); declared
// for all, defined only where CMakeLists.txt builds the file.
const KernelSet& avx512_amx_kernels();
const KernelSet& avx512_vnni_kernels();
const KernelSet& avx512_pext_kernels();
const KernelSet& avx2_vnni_kernels();
const KernelSet& avx2_kernels();
const KernelSet& avx2_tl1_kernels();
const KernelSet& neon_sdot_kernels();
const KernelSet& neon_tbl_kernels();

// avx512-pext's Fairy2i kernel unfused (eight passes per row, the same
// sums): what bench_phase measures the fusion gain against. Defined only
// where avx512_pext.cpp is built; reach it through unfused_phase_gemm.
PhaseGemm avx512_unfused_phase_gemm();
// The unfused form of set s's Fairy2i kernel, or null where s has none.
PhaseGemm unfused_phase_gemm(const KernelSet& s);

}  // namespace tern::kernels_detail
