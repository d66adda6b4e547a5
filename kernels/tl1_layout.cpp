// Builds the avx2-tl1 layout described in tl1_layout.h.
#include "tl1_layout.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "layout.h"
#include "kernel_sets.h"
#include "tern/error.h"
#include "tern/quant.h"

namespace tern::kernels_detail {
int64_t tl1_prepared_bytes(const TernaryMatrix& w) {
  return (w.rows + kTl1Group - 1) / kTl1Group * w.cols * kTl1GroupColumnBytes;
}

std::shared_ptr<const void> tl1_prepare(const TernaryMatrix& w) {
  const int64_t K = w.cols, M = w.rows, groups = (M + kTl1Group - 1) / kTl1Group;
  const int64_t gb = K * kTl1GroupColumnBytes, rb = ternary_row_bytes(w.type, K);
  const size_t bytes = size_t(std::max<int64_t>(1, groups * gb));
  uint8_t* out = nullptr;
  std::shared_ptr<const void> owner = new_layout(w, LayoutKind::Tl1Pairs, int64_t(bytes), &out);
  std::memset(out, 0x44, bytes);  // index 4 = (0, 0) in both nibbles: padding rows add nothing
  std::vector<int8_t> t(static_cast<size_t>(K));
  for (int64_t r = 0; r < M; ++r) {
    unpack_ternary_row(w.type, w.data + r * rb, K, t.data());
    for (int64_t k = 0; k < K; ++k)
      if (t[size_t(k)] < -1 || t[size_t(k)] > 1)
        throw Error("avx2-tl1: weight row " + std::to_string(r) + " column " + std::to_string(k) +
                    " holds TQ2_0 code 3, which is not a trit");
    uint8_t* g = out + (r / kTl1Group) * gb;
    const int64_t j = r % kTl1Group;
    auto idx = [&](int64_t pair) {
      return uint8_t(3 * (t[size_t(2 * pair)] + 1) + t[size_t(2 * pair + 1)] + 1);
    };
    for (int64_t c = 0; c < K / 8; ++c) {
      g[c * 32 + j] = uint8_t(idx(4 * c) | idx(4 * c + 2) << 4);
      g[c * 32 + 16 + j] = uint8_t(idx(4 * c + 1) | idx(4 * c + 3) << 4);
    }
  }
  return owner;
}

}  // namespace tern::kernels_detail
