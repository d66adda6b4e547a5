// The AVX2 sets' prepared layout (avx2_layout.h). Built without ISA flags;
// the conversion it calls is compiled with them in avx2.cpp.
#include "avx2_layout.h"

#include "../kernel_sets.h"
#include "../layout.h"
#include "tern/quant.h"

namespace tern::kernels_detail {

int64_t avx2_prepared_bytes(const TernaryMatrix& w) {
  switch (ternary_format(w.type)) {
    case Ternary::TQ1: return w.rows * (w.cols / QK) * (QK / 4);
    case Ternary::TQ2: return 0;
  }
  return 0;
}

std::shared_ptr<const void> avx2_prepare(const TernaryMatrix& w) {
  check_call(w, ActMode::Int8, 0, 0, w.rows);
  switch (ternary_format(w.type)) {
    case Ternary::TQ2: return nullptr;
    case Ternary::TQ1: break;
  }
  if (w.data == nullptr && w.rows > 0) throw_kernel_error("avx2 prepare: the matrix has no stored bytes left");
  const int64_t nb = w.cols / QK, rb = ternary_row_bytes(w.type, w.cols);
  uint8_t* body = nullptr;
  std::shared_ptr<const void> owner = new_layout(w, LayoutKind::Tq2Blocks, avx2_prepared_bytes(w), &body);
  for (int64_t r = 0; r < w.rows; ++r) tq1_blocks_to_tq2_codes(w.data + r * rb, nb, body + r * nb * (QK / 4));
  return owner;
}

}  // namespace tern::kernels_detail
