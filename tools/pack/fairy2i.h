// Fairy2i-W2's phase quantization of one linear (docs/FAIRY2I.md), in f32:
// the packer writes its codes as FAIRY2I blocks and its scales as
// tern.scale.<tensor>; verify reads them back.
#pragma once
#include <cstdint>
#include <vector>

#include "tern/phase.h"

namespace tern::pack {

struct PhaseQuantized {
  int64_t n = 0, m = 0;  // complex rows and columns
  int stages = 0;
  // [stages][n][m] codes 0 = +1, 1 = +i, 2 = -1, 3 = -i (axis | sign << 1)
  std::vector<uint8_t> u_codes, w_codes;
  std::vector<float> scales;  // [stages][4] (PhaseScale order)
};

// A real (rows x cols) weight, row-major, both sides even. Throws
// tern::Error for odd sides or stages outside [1, 8].
PhaseQuantized phase_quantize(const float* a, int64_t rows, int64_t cols, int stages);

// The FAIRY2I bytes: [stages][n][phase_cols(m) / kPhaseBlock] blocks, the
// padding codes 0.
std::vector<uint8_t> phase_blocks(const PhaseQuantized& q);

// Code of U (w_matrix false) or W at complex (row, col) of stage `st` in a
// tensor's FAIRY2I bytes of n rows and `cols` padded complex columns.
uint8_t phase_code(const uint8_t* data, int64_t n, int64_t cols, int st, int64_t row, int64_t col,
                   bool w_matrix);

}  // namespace tern::pack
