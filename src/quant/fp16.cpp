// IEEE half and bfloat16 conversions in portable integer code: one binary
// must run on CPUs without F16C, and the results must not depend on the
// compiler's choice of instructions.
#include <bit>
#include <cstdint>

#include "tern/quant.h"

namespace tern {

float fp16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float v = float(mant) * 0x1p-24f;
    return std::bit_cast<float>(std::bit_cast<uint32_t>(v) | sign);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t f32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;

  if (ax > 0x7f800000u) {
    // NaN: keep the top payload bits and force the quiet bit so the result
    // can never collapse into an infinity.
    return uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  // 65520 is halfway between 65504 (largest half) and 65536; ties-to-even
  // goes up there, so everything from 65520 on (and inf) becomes inf.
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);

  if (ax < 0x38800000u) {
    // Below 2^-14: the result is a half subnormal (units of 2^-24) or zero.
    const uint32_t e = ax >> 23;
    const int shift = 126 - int(e);  // value = m * 2^(e - 150) = (m >> shift) * 2^-24
    if (shift > 24) return sign;     // < 2^-25 (or exactly it: tie to even 0)
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;  // may carry into the smallest normal
    return uint16_t(sign | q);
  }

  // Normal: rebias the exponent (127 -> 15) and round away 13 mantissa bits;
  // a carry out of the mantissa correctly bumps the exponent.
  uint32_t h = (ax - 0x38000000u) >> 13;
  const uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return uint16_t(sign | h);
}

float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

uint16_t f32_to_bf16(float f) { return uint16_t(std::bit_cast<uint32_t>(f) >> 16); }

}  // namespace tern
