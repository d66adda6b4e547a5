// The rules are docs/FAIRY2I.md's, and tests/tools/fairy2i/quantize.py is
// their independent reference: the tests compare every code and scale.
#include "pack/fairy2i.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "tern/error.h"

namespace tern::pack {
namespace {

// The angle sector of (re, im) by comparisons only: half-open sectors, a
// tie going counterclockwise; (+-0, +-0) has angle 0 except (-0, -0),
// whose angle PyTorch's atan2 makes pi.
uint8_t sector(float re, float im) {
  if (re == 0 && im == 0) return std::signbit(re) && std::signbit(im) ? 2 : 0;
  if (im > 0 && -im < re && re <= im) return 1;
  if (re < 0 && re < im && im <= -re) return 2;
  if (im < 0 && im <= re && re < -im) return 3;
  return 0;
}

// One complex matrix through `stages` residual stages: codes and scales.
void quantize_complex(std::vector<float> re, std::vector<float> im, int stages, uint8_t* codes,
                      float* scales, int scale_offset) {
  const size_t N = re.size();
  for (int st = 0; st < stages; ++st) {
    uint8_t* c = codes + size_t(st) * N;
    double sum_re = 0, sum_im = 0;
    size_t n_re = 0, n_im = 0;
    for (size_t i = 0; i < N; ++i) {
      c[i] = sector(re[i], im[i]);
      if (c[i] & 1) sum_im += std::fabs(double(im[i])), ++n_im;
      else sum_re += std::fabs(double(re[i])), ++n_re;
    }
    // The mean over an axis's entries (zeros included), 0 for an empty
    // axis, then at least 1e-6: the published scales, in f32.
    const float s_re = std::max(n_re ? float(sum_re / double(n_re)) : 0.0f, 1e-6f);
    const float s_im = std::max(n_im ? float(sum_im / double(n_im)) : 0.0f, 1e-6f);
    scales[4 * st + scale_offset] = s_re;
    scales[4 * st + scale_offset + 1] = s_im;
    if (st + 1 == stages) break;
    for (size_t i = 0; i < N; ++i) {  // the residual, which the next stage quantizes
      const float q = c[i] & 2 ? -(c[i] & 1 ? s_im : s_re) : (c[i] & 1 ? s_im : s_re);
      (c[i] & 1 ? im[i] : re[i]) -= q;  // the other part loses 0: unchanged
    }
  }
}

}  // namespace

PhaseQuantized phase_quantize(const float* a, int64_t rows, int64_t cols, int stages) {
  if (rows <= 0 || cols <= 0 || rows % 2 || cols % 2)
    throw Error("Fairy2i needs a weight with even sides, not " + std::to_string(rows) + " x " +
                std::to_string(cols));
  if (stages < 1 || stages > kMaxPhaseStages)
    throw Error("Fairy2i stages must be 1 to " + std::to_string(kMaxPhaseStages) + ", not " + std::to_string(stages));
  PhaseQuantized q;
  q.n = rows / 2, q.m = cols / 2, q.stages = stages;
  const int64_t n = q.n, m = q.m;
  const size_t N = size_t(n * m);
  std::vector<float> u_re(N), u_im(N), w_re(N), w_im(N);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      const float a11 = a[i * cols + j], a12 = a[i * cols + m + j];
      const float a21 = a[(n + i) * cols + j], a22 = a[(n + i) * cols + m + j];
      const size_t k = size_t(i * m + j);
      u_re[k] = (a11 + a22) * 0.5f;
      u_im[k] = (a21 - a12) * 0.5f;
      w_re[k] = (a11 - a22) * 0.5f;
      w_im[k] = (a12 + a21) * 0.5f;
    }
  q.u_codes.resize(N * size_t(stages));
  q.w_codes.resize(N * size_t(stages));
  q.scales.assign(size_t(4 * stages), 0.0f);
  quantize_complex(std::move(u_re), std::move(u_im), stages, q.u_codes.data(), q.scales.data(), kUre);
  quantize_complex(std::move(w_re), std::move(w_im), stages, q.w_codes.data(), q.scales.data(), kWre);
  return q;
}

std::vector<uint8_t> phase_blocks(const PhaseQuantized& q) {
  const int64_t cols = phase_cols(q.m), nb = cols / kPhaseBlock;
  std::vector<BlockPhase> blocks(size_t(q.stages * q.n * nb), BlockPhase{0, 0, 0, 0});
  for (int st = 0; st < q.stages; ++st)
    for (int64_t r = 0; r < q.n; ++r)
      for (int64_t j = 0; j < q.m; ++j) {
        BlockPhase& b = blocks[size_t((st * q.n + r) * nb + j / kPhaseBlock)];
        const uint64_t bit = uint64_t(1) << (j % kPhaseBlock);
        const size_t k = size_t((st * q.n + r) * q.m + j);
        if (q.u_codes[k] & 1) b.u_axis |= bit;
        if (q.u_codes[k] & 2) b.u_sign |= bit;
        if (q.w_codes[k] & 1) b.w_axis |= bit;
        if (q.w_codes[k] & 2) b.w_sign |= bit;
      }
  const auto* p = reinterpret_cast<const uint8_t*>(blocks.data());
  return std::vector<uint8_t>(p, p + blocks.size() * sizeof(BlockPhase));
}

uint8_t phase_code(const uint8_t* data, int64_t n, int64_t cols, int st, int64_t row, int64_t col,
                   bool w_matrix) {
  const int64_t nb = cols / kPhaseBlock;
  BlockPhase b;
  std::copy_n(data + ((st * n + row) * nb + col / kPhaseBlock) * int64_t(sizeof b), sizeof b,
              reinterpret_cast<uint8_t*>(&b));
  const int j = int(col % kPhaseBlock);
  const uint64_t axis = w_matrix ? b.w_axis : b.u_axis, sign = w_matrix ? b.w_sign : b.u_sign;
  return uint8_t(((axis >> j) & 1) | ((sign >> j) & 1) << 1);
}

}  // namespace tern::pack
