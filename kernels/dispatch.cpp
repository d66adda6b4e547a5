// Chooses the kernel set: the best one this CPU supports, unless TERN_KERNEL
// (read once, at the first active_kernels() call) or force_kernels() names one.
#include <array>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <string>

#include "kernel_sets.h"
#include "tern/error.h"
#include "tern/quant.h"

namespace tern {
namespace {

using SetAccessor = const KernelSet& (*)();

// Every kernel set compiled into this binary, best first. Scalar stays last:
// it runs everywhere, so "first available" always finds something. This is
// the only list to edit when an ISA file is added (see kernel_sets.h).
constexpr SetAccessor kSetTable[] = {
    &scalar_kernels,
};

std::string join_names(bool only_available) {
  std::string out;
  for (const KernelSet* s : all_kernel_sets()) {
    if (only_available && !s->available(cpu_features())) continue;
    if (!out.empty()) out += ", ";
    out += s->name;
  }
  return out;
}

const KernelSet& best_available() {
  for (const KernelSet* s : all_kernel_sets())
    if (s->available(cpu_features())) return *s;
  return scalar_kernels();  // unreachable while scalar is in the table
}

// `what` names the source of the request in the error ("TERN_KERNEL=foo").
const KernelSet& find_available(std::string_view name, const std::string& what) {
  if (name == "auto") return best_available();
  for (const KernelSet* s : all_kernel_sets()) {
    if (name != s->name) continue;
    if (!s->available(cpu_features()))
      throw Error(what + ": kernel not supported by this CPU (available: " + join_names(true) +
                  "; CPU has: " + cpu_features().summary() + ")");
    return *s;
  }
  throw Error(what + ": unknown kernel (known: " + join_names(false) + ", auto)");
}

const KernelSet& initial_choice() {
  const char* env = std::getenv("TERN_KERNEL");
  if (env == nullptr || *env == '\0') return best_available();
  return find_available(env, std::string("TERN_KERNEL=") + env);
}

std::atomic<const KernelSet*> g_forced{nullptr};

}  // namespace

std::span<const KernelSet* const> all_kernel_sets() {
  static const auto sets = [] {
    std::array<const KernelSet*, std::size(kSetTable)> a{};
    for (size_t i = 0; i < a.size(); ++i) a[i] = &kSetTable[i]();
    return a;
  }();
  return sets;
}

const KernelSet& active_kernels() {
  if (const KernelSet* f = g_forced.load(std::memory_order_acquire)) return *f;
  // If TERN_KERNEL is bad this throws and the static stays uninitialized, so
  // every call reports the error rather than silently falling back.
  static const KernelSet& chosen = initial_choice();
  return chosen;
}

void force_kernels(std::string_view name) {
  const KernelSet& s = find_available(name, "kernel " + std::string(name));
  g_forced.store(&s, std::memory_order_release);
}

namespace kernels_detail {

void check_call(const TernaryMatrix& w, ActMode mode, int64_t n, int64_t r0, int64_t r1) {
  auto fail = [](const std::string& problem) { throw Error("ternary kernel call: " + problem); };
  if (!is_ternary_type(w.type))
    fail("weight type " + std::to_string(uint32_t(w.type)) + " is not TQ1_0 or TQ2_0");
  if (w.cols <= 0 || w.cols % QK != 0)
    fail("cols " + std::to_string(w.cols) + " is not a positive multiple of " + std::to_string(QK));
  if (w.rows < 0) fail("negative rows " + std::to_string(w.rows));
  if (w.data == nullptr && w.rows > 0) fail("matrix has no data");
  if (mode == ActMode::Float && w.row_scale == nullptr && w.rows > 0) fail("matrix has no row scales");
  if (n < 0) fail("negative vector count " + std::to_string(n));
  if (r0 < 0 || r0 > r1 || r1 > w.rows)
    fail("row range [" + std::to_string(r0) + ", " + std::to_string(r1) + ") outside [0, " +
         std::to_string(w.rows) + ")");
}

}  // namespace kernels_detail
}  // namespace tern
