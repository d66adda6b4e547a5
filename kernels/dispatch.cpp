// Chooses the kernel set: the best one this CPU supports, unless the caller
// names one (a load option; tools/cli reads --kernel and TERN_KERNEL).
#include <array>
#include <iterator>
#include <string>

#include "kernel_sets.h"
#include "tern/quant_group.h"
#include "tern/error.h"
#include "tern/phase.h"
#include "tern/quant.h"

namespace tern {
namespace {

using SetAccessor = const KernelSet& (*)();

// Every kernel set compiled into this binary, best first. Scalar stays last:
// it runs everywhere, so "first available" always finds something. This is
// the only list to edit when an ISA file is added (see kernel_sets.h).
// TERN_KERNEL_* is defined by CMakeLists.txt for each ISA file it builds.
constexpr SetAccessor kSetTable[] = {
#if TERN_KERNEL_AVX512_AMX
    &kernels_detail::avx512_amx_kernels,
#endif
#if TERN_KERNEL_AVX512_VNNI
    &kernels_detail::avx512_vnni_kernels,
#endif
#if TERN_KERNEL_AVX512_PEXT
    &kernels_detail::avx512_pext_kernels,
#endif
#if TERN_KERNEL_AVX2_VNNI
    &kernels_detail::avx2_vnni_kernels,
#endif
#if TERN_KERNEL_AVX2
    &kernels_detail::avx2_kernels,
#endif
#if TERN_KERNEL_AVX2_TL1
    &kernels_detail::avx2_tl1_kernels,
#endif
#if TERN_KERNEL_NEON_SDOT
    &kernels_detail::neon_sdot_kernels,
#endif
#if TERN_KERNEL_NEON_TBL
    &kernels_detail::neon_tbl_kernels,
#endif
    &scalar_kernels,
};

bool supports(const KernelSet& s, ActMode mode, bool phase) {
  if (phase) return mode == ActMode::Float ? s.phase_gemm != nullptr : s.phase_gemm_i8 != nullptr;
  return mode == ActMode::Float ? s.gemm_f32 != nullptr : s.gemm_i8 != nullptr;
}

// Names of the sets built in; only_available: those this CPU runs; with a
// mode, only those that have its path.
std::string join_names(bool only_available, const ActMode* mode = nullptr, bool phase = false) {
  std::string out;
  for (const KernelSet* s : all_kernel_sets()) {
    if (only_available && !s->available(cpu_features())) continue;
    if (mode && !supports(*s, *mode, phase)) continue;
    if (!out.empty()) out += ", ";
    out += s->name;
  }
  return out;
}

const char* mode_name(ActMode mode) { return mode == ActMode::Float ? "float" : "int8"; }

const KernelSet& best_available(ActMode mode, bool phase) {
  for (const KernelSet* s : all_kernel_sets())
    if (s->available(cpu_features()) && supports(*s, mode, phase)) return *s;
  return scalar_kernels();  // unreachable while scalar is in the table
}

}  // namespace

std::span<const KernelSet* const> all_kernel_sets() {
  static const auto sets = [] {
    std::array<const KernelSet*, std::size(kSetTable)> a{};
    for (size_t i = 0; i < a.size(); ++i) a[i] = &kSetTable[i]();
    return a;
  }();
  return sets;
}

const KernelSet* find_kernel_set(std::string_view name, std::string_view source) {
  if (name.empty() || name == "auto") return nullptr;
  const std::string what = source.empty() ? "kernel " + std::string(name) : std::string(source);
  for (const KernelSet* s : all_kernel_sets()) {
    if (name != s->name) continue;
    if (!s->available(cpu_features()))
      throw Error(what + ": kernel not supported by this CPU (available: " + join_names(true) +
                  "; CPU has: " + cpu_features().summary() + ")");
    return s;
  }
  throw Error(what + ": unknown kernel (known: " + join_names(false) + ", auto)");
}

const KernelSet& select_kernels(std::string_view name, ActMode mode, bool phase, std::string_view why) {
  const KernelSet* want = find_kernel_set(name);
  if (want == nullptr) return best_available(mode, phase);
  if (!supports(*want, mode, phase))
    throw Error(std::string("kernel ") + want->name + " has no " +
                (phase ? std::string("Fairy2i") : std::string(mode_name(mode)) + "-activation") + " path" +
                (why.empty() ? std::string() : ": " + std::string(why)) + " (use one of: " +
                join_names(true, &mode, phase) + ")");
  return *want;
}

bool kernel_supports(const KernelSet& s, ActMode mode, bool phase) { return supports(s, mode, phase); }

namespace kernels_detail {

void throw_kernel_error(const char* message) { throw Error(message); }

void check_call(const TernaryMatrix& w, ActMode mode, int64_t n, int64_t r0, int64_t r1) {
  auto fail = [](const std::string& problem) { throw Error("ternary kernel call: " + problem); };
  if (!is_ternary_type(w.type))
    fail("weight type " + std::to_string(uint32_t(w.type)) + " is not TQ1_0 or TQ2_0");
  if (w.cols <= 0 || w.cols % QK != 0)
    fail("cols " + std::to_string(w.cols) + " is not a positive multiple of " + std::to_string(QK));
  if (w.rows < 0) fail("negative rows " + std::to_string(w.rows));
  // A prepared matrix may have let its stored bytes go (Model::load).
  if (w.data == nullptr && w.packed == nullptr && w.rows > 0) fail("matrix has no data");
  if (mode == ActMode::Float && w.row_scale == nullptr && w.rows > 0) fail("matrix has no row scales");
  if (n < 0) fail("negative vector count " + std::to_string(n));
  if (r0 < 0 || r0 > r1 || r1 > w.rows)
    fail("row range [" + std::to_string(r0) + ", " + std::to_string(r1) + ") outside [0, " +
         std::to_string(w.rows) + ")");
}

void check_group_call(const GroupMatrix& w, int64_t n, int64_t ldy, int64_t r0, int64_t r1) {
  auto fail = [](const std::string& problem) { throw Error("group-scaled kernel call: " + problem); };
  if (group_size(w.type) == 0 || group_size(w.type) != w.group)
    fail("weight type " + std::to_string(uint32_t(w.type)) + " with groups of " + std::to_string(w.group) +
         " is not PQ2_0 or Q2_0");
  if (w.cols <= 0 || w.cols % w.group != 0)
    fail("cols " + std::to_string(w.cols) + " is not a positive multiple of " + std::to_string(w.group));
  if (w.rows < 0 || (w.data == nullptr && w.rows > 0)) fail("matrix has no data");
  if (n < 0 || (n > 1 && ldy < r1)) fail("bad vector count or output stride");
  if (r0 < 0 || r0 > r1 || r1 > w.rows)
    fail("row range [" + std::to_string(r0) + ", " + std::to_string(r1) + ") outside [0, " +
         std::to_string(w.rows) + ")");
}

}  // namespace kernels_detail

GroupGemmI8 group_gemm_i8_of(const KernelSet& s) {
  return s.group_gemm_i8 ? s.group_gemm_i8 : scalar_kernels().group_gemm_i8;
}
GroupGemmF32 group_gemm_f32_of(const KernelSet& s) {
  return s.group_gemm_f32 ? s.group_gemm_f32 : scalar_kernels().group_gemm_f32;
}

int64_t dense_row_bytes(gguf::TensorType type, int64_t K) {
  if (!is_dense_type(type))
    throw Error("dense matrix: type " + std::to_string(uint32_t(type)) + " is not " + dense_type_names());
  const gguf::TypeTraits& t = gguf::traits(type);
  return K / t.block_size * t.type_size;
}

int64_t dense_stride(const DenseMatrix& m) {
  return m.row_stride > 0 ? m.row_stride : dense_row_bytes(m.type, m.cols);
}

namespace kernels_detail {

void check_phase_call(const PhaseMatrix& w, int64_t n, int64_t ldy, int64_t r0, int64_t r1) {
  auto fail = [](const std::string& problem) { throw Error("Fairy2i kernel call: " + problem); };
  if (w.rows < 0 || w.cols <= 0 || w.cols % kPhaseBlock != 0 || w.stages <= 0)
    fail("shape " + std::to_string(w.rows) + "x" + std::to_string(w.cols) + " complex, " +
         std::to_string(w.stages) + " stages (columns must be a positive multiple of " +
         std::to_string(kPhaseBlock) + ")");
  if ((w.data == nullptr || w.scales == nullptr) && w.rows > 0) fail("matrix has no data or scales");
  if (n < 0) fail("negative vector count " + std::to_string(n));
  if (r0 < 0 || r0 > r1 || r1 > w.rows)
    fail("row range [" + std::to_string(r0) + ", " + std::to_string(r1) + ") outside [0, " +
         std::to_string(w.rows) + ")");
  if (n > 1 && ldy < 2 * w.rows) fail("output stride " + std::to_string(ldy) + " below " + std::to_string(2 * w.rows));
}

int64_t check_phase_i8_call(const PhaseMatrix& w, const int8_t* xq, int64_t n, const int* digits,
                            const float* xscale, int64_t ldy, int64_t r0, int64_t r1) {
  check_phase_call(w, n, ldy, r0, r1);
  auto fail = [](const std::string& problem) { throw Error("Fairy2i int8 kernel call: " + problem); };
  if (n > 0 && (xq == nullptr || digits == nullptr || xscale == nullptr)) fail("no input, digits or scales");
  int64_t vectors = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (digits[i] < 1 || digits[i] > kMaxActDigits)
      fail("vector " + std::to_string(i) + " has " + std::to_string(digits[i]) + " digits (1 to " +
           std::to_string(kMaxActDigits) + ")");
    vectors += digits[i];
  }
  return vectors;
}

void check_dense_call(const DenseMatrix& w, int64_t n, int64_t ldy, int64_t r0, int64_t r1) {
  auto fail = [](const std::string& problem) { throw Error("dense kernel call: " + problem); };
  if (!is_dense_type(w.type))
    fail("weight type " + std::to_string(uint32_t(w.type)) + " is not " + dense_type_names());
  if (w.rows < 0 || w.cols <= 0 || w.cols % gguf::traits(w.type).block_size != 0)
    fail("shape " + std::to_string(w.rows) + "x" + std::to_string(w.cols));
  if (w.data == nullptr && w.rows > 0) fail("matrix has no data");
  if (w.row_stride != 0 && w.row_stride < dense_row_bytes(w.type, w.cols))
    fail("row stride " + std::to_string(w.row_stride) + " below the " +
         std::to_string(dense_row_bytes(w.type, w.cols)) + " bytes of a row");
  if (n < 0) fail("negative vector count " + std::to_string(n));
  if (r0 < 0 || r0 > r1 || r1 > w.rows)
    fail("row range [" + std::to_string(r0) + ", " + std::to_string(r1) + ") outside [0, " +
         std::to_string(w.rows) + ")");
  if (n > 1 && ldy < r1) fail("output stride " + std::to_string(ldy) + " below row " + std::to_string(r1));
}

PhaseGemm unfused_phase_gemm([[maybe_unused]] const KernelSet& s) {
#if TERN_KERNEL_AVX512_PEXT
  if (&s == &avx512_pext_kernels()) return avx512_unfused_phase_gemm();
#endif
  return nullptr;
}

}  // namespace kernels_detail
}  // namespace tern
