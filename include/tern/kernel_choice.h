// What --kernel auto chose at load (Model::kernel_choices): for each
// distinct shape of ternary linear, the time each candidate set took and
// the set every linear of the shape then runs on. `tern info` prints it.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "tern/gguf.h"
#include "tern/kernels.h"

namespace tern {

// A distinct shape of ternary linear, timed at load by --kernel auto: the
// time each candidate set took for one product over every row (one
// thread; one int8 vector, or two, a token's 16-bit digits, for a
// float-activation model; the best of repeated calls, round robin over the
// sets, each with the matrix flushed from the caches as a decode step finds
// it), and the one every linear of the shape then runs on. Decode times
// within kDisplaceMargin of the fastest are ties: sets that share a decode
// loop and differ in prompts (avx512-amx, avx512-vnni) time alike, and a
// shared machine's drift must not pick the one without tiles. The tied sets
// are then timed on kChoicePromptTokens tokens at once (prompt_seconds), and
// the choice is the first tied set in all_kernel_sets()' best-first order
// unless a later one is more than kDisplaceMargin faster there.
constexpr double kDisplaceMargin = 0.05;
constexpr int kChoicePromptTokens = 32;
struct KernelChoice {
  gguf::TensorType type = gguf::TensorType::TQ2_0;
  int64_t rows = 0, cols = 0;
  std::vector<std::pair<const KernelSet*, double>> seconds;         // candidates in all_kernel_sets() order
  std::vector<std::pair<const KernelSet*, double>> prompt_seconds;  // the tied ones, if more than one
  const KernelSet* chosen = nullptr;

  bool fits(const TernaryMatrix& w) const { return w.type == type && w.rows == rows && w.cols == cols; }
};

}  // namespace tern
