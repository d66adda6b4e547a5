// Weight transforms of the packer: ternarization (BitNet absmean or exact
// per-row), llama.cpp's q/k row permutation, and lossless float narrowing.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tern::pack {

// BitNet b1.58 absmean scale of a whole tensor: max(mean|W|, 1e-5), the mean
// accumulated in double then rounded to float.
float absmean_scale(const float* w, uint64_t n);
// t = clamp(round_half_even(w * (1/s)), -1, 1), in float like torch.
void absmean_trits(const float* w, uint64_t n, float s, int8_t* trits);

// An already-ternary row: every nonzero |w| equals one value s, returned
// (0 for an all-zero row). On failure returns nullopt and fills `a`, `b`
// with two magnitudes that differ.
std::optional<float> exact_row_scale(const float* row, uint64_t n, float* a, float* b);
void sign_trits(const float* w, uint64_t n, int8_t* trits);

// Source row of each output row under llama.cpp's converter permutation
// (LlamaModel.permute): W.reshape(n_head, 2, rows/n_head/2, cols)
// .swapaxes(1, 2).reshape(rows, cols), which turns HF's rotate_half layout
// into interleaved RoPE pairs. Output row h*D + 2i + j comes from source row
// h*D + j*D/2 + i, D = rows / n_head.
std::vector<uint32_t> qk_row_permutation(uint32_t rows, uint32_t n_head);

// True when every value survives f32 -> fp16 -> f32 unchanged.
bool fits_f16_exactly(const float* w, uint64_t n);

// "%.9g": short for round numbers, enough digits to tell floats apart.
std::string fmt_float(double v);

}  // namespace tern::pack
