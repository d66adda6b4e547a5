// Fairy2i phase codes (docs/FAIRY2I.md): a real linear A (2n x 2m) is the
// widely-linear map y_c = U x_c + W conj(x_c) of two complex n x m
// matrices, each entry of U and W one of {+1, +i, -1, -i} times a per-matrix
// scale (one for the real axis, one for the imaginary axis), summed over
// residual stages.
//
// The GGUF tensor type FAIRY2I (tern's own) stores one stage of one linear
// as bit planes, which is what a masked add/sub kernel consumes directly:
// per complex row and per 64 complex columns, whether each entry of U (and
// of W) lies on the imaginary axis and whether it is negative. A code is
// axis | sign << 1: 0 = +1, 1 = +i, 2 = -1, 3 = -i, so every 2-bit value is
// a valid code and a file cannot hold an invalid one.
#pragma once
#include <cstdint>

namespace tern {

constexpr int kPhaseBlock = 64;  // complex columns per block
// Residual stages a file may hold (Fairy2i-W2 has 2); packer, loader and
// command line share the bound.
constexpr int kMaxPhaseStages = 8;

// Complex columns m padded to whole blocks; the padding codes are 0 and the
// activations there are zero.
constexpr int64_t phase_cols(int64_t m) { return (m + kPhaseBlock - 1) / kPhaseBlock * kPhaseBlock; }

// Bit j (least significant first) describes complex column j of the block.
struct BlockPhase {
  uint64_t u_axis;  // U's entry is +i or -i (else +1 or -1)
  uint64_t u_sign;  // U's entry is -1 or -i
  uint64_t w_axis;  // the same for W
  uint64_t w_sign;
};
static_assert(sizeof(BlockPhase) == 32, "a FAIRY2I block must be 32 bytes");

// The four scales of a stage, in file order (tern.scale.<tensor> holds
// stages x 4 floats).
enum PhaseScale { kUre = 0, kUim = 1, kWre = 2, kWim = 3 };

}  // namespace tern
