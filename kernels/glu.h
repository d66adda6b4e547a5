// The FFN's gated activations (SwiGLU; BitNet 2B-4T's squared-ReLU GLU) as
// plain loops that GCC vectorizes at the width of the including file's -m
// flags: SSE2 at the x86-64 baseline (glu.cpp, the reference), AVX2 and
// AVX-512 in kernels/x86/glu_*.cpp. Every includer is compiled with
// -ffp-contract=off (CMakeLists.txt): with no fused multiply-adds, and only
// correctly rounded +, * and /, bit operations and exact conversions, a lane
// computes the same bits at any width, so every kernel set gives the
// reference's result. At the SSE2 baseline the SwiGLU loop cost 1.5 ns a
// value on Zen 5 (6% of a prompt at bitnet_b1_58-large's shape), 0.46 with
// AVX2 and 0.26-0.34 with AVX-512.
//
// Internal linkage and no std:: templates, for the reason kernel_sets.h
// gives.
#pragma once
#include <cstdint>

namespace tern::kernels_detail {
namespace {

// exp(x) in straight-line float code: libm's expf is a call per value.
// Cephes' expf: x = n ln2 + r with |r| <= ln2/2 (ln2 in two parts, the first
// exact times any n here), a degree-7 polynomial for e^r, about 2 ulp (the
// tests hold it to that against double exp). 2^n is applied as two factors
// so that exp overflows to inf above 88.72 and reaches 0 through the
// subnormals below -87.3 as libm's does (exp(-inf) = 0); NaN stays NaN.
inline float exp_poly(float x) {
  x = x < -104.0f ? -104.0f : x;  // NaN fails both tests and passes
  x = x > 89.0f ? 89.0f : x;
  const float round = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (x * 1.44269504088896341f + round) - round;
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // NaN would make the conversion undefined (UBSan's float-cast-overflow);
  // p is NaN then anyway.
  const int32_t k = int32_t(n == n ? n : 0.0f), k1 = k / 2, k2 = k - k1;  // each within [-75, 64]
  return p * __builtin_bit_cast(float, (k1 + 127) << 23) * __builtin_bit_cast(float, (k2 + 127) << 23);
}

inline void silu_glu_loop(float* gate, const float* up, int n) {
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + exp_poly(-g)) * up[i];
  }
}

// std::max(g, 0) was a branch, mispredicted on every other value (7% of a
// prompt), and GCC vectorizes no select of float products (they may trap).
// So g is zeroed on its bits when negative, -0 or -inf, and NaN kept, as
// std::max does: 0 * 0 * u is what -0 gives too.
inline void relu2_glu_loop(float* gate, const float* up, int n) {
  for (int i = 0; i < n; ++i) {
    const int32_t b = __builtin_bit_cast(int32_t, gate[i]);
    const bool negative = (b < 0) & ((b & 0x7fffffff) <= 0x7f800000);
    const float g = __builtin_bit_cast(float, b & (int32_t(negative) - 1));
    gate[i] = g * g * up[i];
  }
}

}  // namespace
}  // namespace tern::kernels_detail
