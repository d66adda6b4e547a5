// Int8 activations (quantize_act_i8 in quant.h) with AVX2 instructions, for
// every x86 set. The portable reference is compiled for baseline x86-64 and
// calls fmin, fmax and nearbyint per value (13% of a prompt's time on one
// thread); vector max, min and round-to-nearest-even give the same bytes:
//   max: vmaxps(a, acc) keeps acc when a is NaN, as std::max(acc, a) does;
//   clamp: vmaxps(v, -128) gives -128 for NaN, as fmax(NaN, -128) does, and
//     clamping before rounding equals rounding before, the bounds being
//     integers;
//   round: vcvtps2dq rounds by MXCSR, to nearest even unless a caller
//     changed the mode, which nearbyint would follow as well.
// The last n % 32 values go through the same code in a zero-padded copy
// (zeros change no maximum).
//
// Internal linkage for the reason avx2_common.h gives; no std:: calls.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "tern/quant.h"

namespace tern::kernels_detail {
namespace {

inline void quantize_i8_32(const float* x, __m256 s, int8_t* q) {
  const __m256 lo = _mm256_set1_ps(-128.0f), hi = _mm256_set1_ps(127.0f);
  __m256i v[4];
  for (int i = 0; i < 4; ++i)
    v[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), s), lo), hi));
  const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q),
                      _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

float quantize_i8_avx2(const float* x, int64_t n, int8_t* q) {
  const int64_t body = n / 32 * 32;
  alignas(32) float tail[32] = {};
  for (int64_t i = body; i < n; ++i) tail[i - body] = x[i];
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  for (int64_t i = 0; i < body; i += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), m);
  for (int i = 0; i < 32; i += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_load_ps(tail + i), abs_mask), m);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
  const float amax = _mm_cvtss_f32(h);
  const float s = act_i8_scale(amax);
  const __m256 vs = _mm256_set1_ps(s);
  for (int64_t i = 0; i < body; i += 32) quantize_i8_32(x + i, vs, q + i);
  if (body < n) {
    int8_t out[32];
    quantize_i8_32(tail, vs, out);
    for (int64_t i = body; i < n; ++i) q[i] = out[i - body];
  }
  return s;
}

}  // namespace
}  // namespace tern::kernels_detail
