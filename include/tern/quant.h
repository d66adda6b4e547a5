// Ternary block formats, bit-exact with llama.cpp's TQ2_0 and TQ1_0
// (ggml-common.h), plus the half-precision conversions the formats need.
//
// A ternary weight t in {-1, 0, +1} is stored as the code t + 1 in {0, 1, 2}.
// Each 256-element block carries an fp16 scale d; tern writes d = fp16(row
// scale) in every block and keeps the exact f32 row scale in metadata.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "tern/gguf.h"

namespace tern {

constexpr int QK = 256;  // elements per block, both formats
// Stored width of a row of K weights: whole blocks, the tail zero-padded.
constexpr int64_t padded_cols(int64_t K) { return (K + QK - 1) / QK * QK; }

// 2 bits per weight. Byte m (m < 32) of each 32-byte half h (qs[32h + m])
// holds the codes of elements 128*h + 32*n + m in bits 2n..2n+1, n = 0..3.
// Code 3 is not a trit; llama.cpp dequantizes it as +2 and so does
// unpack_tq2_row, but tern never writes it (see find_invalid_tq2_code).
struct BlockTQ2 {
  uint8_t qs[QK / 4];
  uint16_t d;  // fp16
};
static_assert(sizeof(BlockTQ2) == 66, "TQ2_0 block must be 66 bytes");

// 1.6875 bits per weight. qs packs 5 codes per byte as a base-3 fixed-point
// fraction: v = sum_n code_n * 3^(4-n) (code 0 most significant), stored as
// byte = ceil(v * 256 / 243) = (v * 256 + 242) / 243, so code n comes back as
// ((uint8_t)(byte * 3^n) * 3) >> 8 (the uint8_t wrap drops the higher trits).
// qs[m], m < 32, holds elements m + 32n (n = 0..4)      -> elements 0..159;
// qs[32 + m], m < 16, holds elements 160 + m + 16n      -> elements 160..239;
// qh[j], j < 4, holds elements 240 + j + 4n (n = 0..3), its 4-trit number
// multiplied by 3 (a zero fifth trit) before the same ceiling step.
// Every byte value decodes to codes 0..2, so any block is a valid TQ1_0 block.
struct BlockTQ1 {
  uint8_t qs[(QK - 4 * QK / 64) / 5];
  uint8_t qh[QK / 64];
  uint16_t d;  // fp16
};
static_assert(sizeof(BlockTQ1) == 54, "TQ1_0 block must be 54 bytes");

float fp16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float f);  // round to nearest even; overflow -> inf; NaN stays NaN
float bf16_to_f32(uint16_t h);
// Truncates: exact for values that came from BF16, which is all tern uses it for.
uint16_t f32_to_bf16(float f);

// Round to nearest even (NaN stays NaN): pack's conversion when a float
// tensor is asked to become BF16 (--output-type bf16).
uint16_t f32_to_bf16_rne(float f);

// llama.cpp's Q8_0, for output heads and embeddings (--output-type q8_0):
// 32 values as d * q, d = max|x| / 127 stored as fp16, q = round(x / d).
constexpr int QK8_0 = 32;
struct BlockQ8_0 {
  uint16_t d;  // fp16
  int8_t qs[QK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must be 34 bytes");
// n a positive multiple of QK8_0 (else tern::Error). Quantizes as
// llama.cpp's reference quantize_row_q8_0 does (the f32 d divides, the
// fp16 d is stored), so llama-quantize and tern write the same bytes.
void quantize_q8_0_row(const float* x, int64_t n, BlockQ8_0* out);
// Element k of a Q8_0 row: fp16(d) * q, exact in f32.
inline float q8_0_value(const BlockQ8_0* row, int64_t k) {
  return fp16_to_f32(row[k / QK8_0].d) * float(row[k / QK8_0].qs[k % QK8_0]);
}

// Activations a Q8_0 head multiplies, as llama.cpp quantizes them for its
// Q8_0 dot product but with an f32 scale: per 32 values d = max|x| / 127,
// q = round(x / d) in [-127, 127] (NaN as 0). Every kernel set calls this
// one function, so the products are the same everywhere.
struct ActQ8 {
  float d;
  int8_t qs[QK8_0];
};
void quantize_act_q8(const float* x, int64_t n, ActQ8* out);  // n % QK8_0 == 0

// The types the dense kernels multiply (output heads, tied embeddings):
// the one list the loader, `tern pack --output-type` and the kernels'
// checks share, so a new head type is added here and nowhere else.
inline constexpr gguf::TensorType kDenseTypes[] = {gguf::TensorType::F32, gguf::TensorType::F16,
                                                   gguf::TensorType::BF16, gguf::TensorType::Q8_0,
                                                   gguf::TensorType::Q6_K};
constexpr bool is_dense_type(gguf::TensorType t) {
  for (gguf::TensorType d : kDenseTypes)
    if (d == t) return true;
  return false;
}
// "F32, F16, BF16, Q8_0 or Q6_K", for messages.
std::string dense_type_names();

// llama.cpp's Q6_K, the head type llama-quantize writes by default (and
// --output-type q6_k): 256 values in 16 groups of 16, value i =
// fp16(d) * scales[i / 16] * (q_i - 32), the 6-bit q_i split into a low
// nibble (ql) and a high pair of bits (qh). Within each half of 128
// values, value 32 * j + l (j < 4, l < 32) has its nibble in ql[64 * half +
// l + 32 * (j & 1)] (low nibble for j < 2, high for j >= 2) and its pair in
// bits 2j, 2j + 1 of qh[32 * half + l].
constexpr int64_t QK_K = 256;
struct BlockQ6_K {
  uint8_t ql[QK_K / 2];
  uint8_t qh[QK_K / 4];
  int8_t scales[QK_K / 16];
  uint16_t d;  // fp16
};
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block must be 210 bytes");
// q_i - 32, in [-32, 31].
inline int q6_k_code(const BlockQ6_K& b, int i) {
  const int half = i / 128, j = (i % 128) / 32, l = i % 32;
  const uint8_t lo = b.ql[64 * half + l + 32 * (j & 1)];
  const int nib = j < 2 ? lo & 0xF : lo >> 4;
  return (nib | (((b.qh[32 * half + l] >> (2 * j)) & 3) << 4)) - 32;
}
// Element k of a Q6_K row, exact in f32 (fp16 d times an int up to 4064).
inline float q6_k_value(const BlockQ6_K* row, int64_t k) {
  const BlockQ6_K& b = row[k / QK_K];
  return fp16_to_f32(b.d) * float(int(b.scales[(k % QK_K) / 16]) * q6_k_code(b, int(k % QK_K)));
}
// n a positive multiple of QK_K (else tern::Error, as for non-finite
// values). llama.cpp's reference algorithm: per group of 16 the scale
// that minimizes the x^2-weighted squared error over 19 candidate steps,
// the 16 scales then quantized to int8 against their largest.
void quantize_q6_k_row(const float* x, int64_t n, BlockQ6_K* out);
// The n values (n % QK_K == 0) of a row, each exactly q6_k_value.
void dequantize_q6_k_row(const BlockQ6_K* row, int64_t n, float* out);

// llama.cpp's Q4_K, the type llama-quantize gives the token embeddings of
// TQ1_0/TQ2_0 files by default: 256 values in 8 groups of 32, value =
// fp16(d) * sc * q - fp16(dmin) * m, q a nibble (values 64j .. 64j + 31 in
// the low nibbles of qs[32j ..], the next 32 in the high ones), the 6-bit
// sc and m of each group packed into `scales` as llama.cpp's
// get_scale_min_k4 unpacks them. tern reads it as an embedding only (a
// row per token), never as a head.
struct BlockQ4_K {
  uint16_t d, dmin;  // fp16
  uint8_t scales[12];
  uint8_t qs[QK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block must be 144 bytes");
// The n values (n % QK_K == 0) of a row, as llama.cpp's dequantize_row_q4_K
// computes them (the same f32 operations, so the same floats).
void dequantize_q4_k_row(const BlockQ4_K* row, int64_t n, float* out);

// Activations a K-quant head multiplies (llama.cpp's Q8_K with an f32
// scale): per 256 values d = max|x| / 127, q = round(x / d) in [-127, 127]
// (NaN as 0), computed by this one function for every kernel set.
struct ActQ8K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];  // sum of each 16 qs: a kernel that multiplies the
                             // unsigned codes q_i subtracts 32 * scale * bsum
};
void quantize_act_q8k(const float* x, int64_t n, ActQ8K* out);  // n % QK_K == 0

// Per-token absmax int8 activations as BitNet b1.58 trains them:
// s = 127 / max(max|x|, 1e-5), q = clamp(round_half_even(x * s), -128, 127),
// NaN to -128 (an overflowed activation must not reach a float-to-int
// cast). Returns s. The scalar reference; KernelSet::quantize_i8 computes
// the same bytes with vector instructions.
float quantize_act_i8(const float* x, int64_t n, int8_t* q);
// Its scale from max|x|: the one definition every quantize_i8 uses, so the
// vector sets cannot drift from the reference (out of line: the ISA
// translation units call it and must not define shared inline code).
float act_i8_scale(float amax);

// Wide activations for the float-activation families (TriLM), in a form
// the int8 kernels multiply: with d digits (2: 16 bits, 3: 24 bits),
// v = round_half_even(x * s), s = act_digits_max(d) / max(max|x|, 1e-30),
// so |v| <= act_digits_max(d) (NaN to -act_digits_max(d), as
// quantize_act_i8 bounds it; below the 1e-30 floor, x rounds to 0), written as balanced base-255 digits
// v = sum_j 255^(d-1-j) * q_j, each in [-127, 127] (the one such form).
// Digit j (most significant first) goes to q + j * stride. Returns s. A
// ternary row then gives W x = (sum_j 255^(d-1-j) * (W q_j)) / s from exact
// int8 dot products; each element of x is off by at most half a step,
// max|x| / (2 act_digits_max(d)), plus the float rounding of x * s
// (act_digits_max(d) 2^-24 steps: a quarter step at 24 bits).
constexpr int kMaxActDigits = 3;
constexpr int64_t act_digits_max(int d) { return d <= 1 ? 127 : 255 * act_digits_max(d - 1) + 127; }
static_assert(act_digits_max(2) == 32512 && act_digits_max(3) == 8290687);
float quantize_act_digits(const float* x, int64_t n, int digits, int8_t* q, int64_t stride);
// ||x - v / s|| / ||x|| of that quantization (0 when x is 0), in double.
double act_digits_rel_error(const float* x, int64_t n, int digits, const int8_t* q, int64_t stride,
                            float s);
// What the forward pass calls: 2 digits, or 3 when the 2-digit rounding's
// act_digits_rel_error is above max_rel_error (NaN counts as not above).
// The same digits and scale as quantize_act_digits with *digits digits;
// the error is summed in the rounding pass and max|x| found once.
float quantize_act_wide(const float* x, int64_t n, double max_rel_error, int8_t* q, int64_t stride, int* digits);

// Pack/unpack one row of K trits (K a positive multiple of QK, else
// tern::Error). `trits` values are -1, 0, +1; pack throws tern::Error
// "non-ternary value V at column C" on anything else. d goes in every block.
void pack_tq2_row(const int8_t* trits, int64_t K, uint16_t d, BlockTQ2* out);
void pack_tq1_row(const int8_t* trits, int64_t K, uint16_t d, BlockTQ1* out);
void unpack_tq2_row(const BlockTQ2* in, int64_t K, int8_t* trits);
void unpack_tq1_row(const BlockTQ1* in, int64_t K, int8_t* trits);

// Either format, by tensor type; row bytes = K / QK * block size.
void pack_ternary_row(gguf::TensorType t, const int8_t* trits, int64_t K, uint16_t d,
                      uint8_t* out);
void unpack_ternary_row(gguf::TensorType t, const uint8_t* in, int64_t K, int8_t* trits);
// The fp16 block scales of a row, in order (K / QK of them).
void row_block_scales(gguf::TensorType t, const uint8_t* in, int64_t K, uint16_t* d);
bool is_ternary_type(gguf::TensorType t);
// The ternary formats, for code that decodes them. Such code branches with
// a switch over this enum and no default, and the build makes a missing
// case an error (-Werror=switch), so a format added here cannot be decoded
// as another by falling through an if/else on the tensor type.
enum class Ternary { TQ1, TQ2 };
// The format of a ternary tensor type; throws tern::Error for any other.
Ternary ternary_format(gguf::TensorType t);
// Bytes of one row of K elements (66 or 54 per block); throws tern::Error if
// t is not TQ1_0/TQ2_0 or K is not a positive multiple of QK.
int64_t ternary_row_bytes(gguf::TensorType t, int64_t K);
// Column of the first TQ2_0 code 3 in a row, or -1 if every code is a trit.
// Loaders use it to reject such rows so that all kernels agree on them.
int64_t find_invalid_tq2_code(const uint8_t* in, int64_t K);

// Index of the first NaN or infinity among n values of a float tensor (F32,
// F16, BF16; for Q8_0 the element whose block scale is not finite), or -1.
// An integer test on the exponent bits, so it vectorizes and raises no
// floating-point exception; loaders run it on every norm and embedding.
int64_t find_nonfinite(gguf::TensorType t, const uint8_t* data, int64_t n);

// One row of bitnet.cpp's I2_S (K a multiple of 128; row r of a tensor
// starts at byte r * K / 4): codes 0, 1, 2 are -1, 0, +1. Returns the column
// of the first code 3, which is no trit (bitnet.cpp's dequantizer and its
// dot kernel disagree on it), or -1 when the row is valid.
int64_t unpack_i2s_row(const uint8_t* in, int64_t K, int8_t* trits);

}  // namespace tern
