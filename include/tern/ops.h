// The float operations of a Llama block, each on one token vector. They are
// small and obviously correct on purpose: tests compare them with naive
// versions, and the forward pass composes them.
#pragma once
#include <cstdint>
#include <vector>

namespace tern::ops {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]
void rmsnorm(float* out, const float* x, const float* w, int n, float eps);

// YaRN context extension (arXiv 2309.00071) as transformers'
// _compute_yarn_parameters and llama.cpp's rope_yarn compute it: a factor
// of 1 is plain RoPE.
struct Yarn {
  double factor = 1;       // rope_scaling.factor: how far the trained context is stretched
  int orig_ctx = 0;        // original_max_position_embeddings: the trained context
  double beta_fast = 32;   // rotations below which a frequency is interpolated
  double beta_slow = 1;    // ... and above which it is kept (extrapolated)
};
// RoPE's frequency per angle i < head_dim/2 and the scale of its cosines
// and sines; computed once per model.
struct RopeTable {
  std::vector<double> freq;  // [head_dim/2] theta^(-2i/head_dim), YaRN-blended
  double mscale = 1;         // YaRN's 0.1 ln(factor) + 1 on cos and sin; 1 without
};
RopeTable rope_table(int head_dim, double theta, const Yarn& yarn = {});
// The cosine and sine of position pos's angles pos * freq[i], times
// mscale: cs[2i], cs[2i+1]. A token's angles are the same in every layer
// and for q and k, so the forward pass computes them once per token.
void rope_angles(float* cs, int pos, const RopeTable& t);
// Plain RoPE: rope_angles of rope_table(head_dim, theta).
void rope_angles(float* cs, int head_dim, int pos, float theta);
// Rotates adjacent pairs (x[2i], x[2i+1]) of every head by angle i of cs:
// llama.cpp's "normal" RoPE, which the packer's q/k row permutation targets.
void rope(float* x, int n_heads, int head_dim, const float* cs);
// The same rotation on pairs (x[i], x[i + head_dim/2]): Hugging Face's
// rotate_half, which GGUF files of the `bitnet` architectures keep.
void rope_halves(float* x, int n_heads, int head_dim, const float* cs);

// In place, numerically stable (subtracts the max).
void softmax(float* x, int n);

// One query position attending causally over positions 0..n_pos-1 of the
// cache. q: [n_heads][head_dim]; keys/values: [n_pos][n_kv_heads*head_dim];
// out: [n_heads][head_dim]; scratch: [n_pos]. Head h reads KV head
// h / (n_heads / n_kv_heads) (grouped-query attention). Only heads
// [h0, h1) are computed (all when h1 < 0), so threads can share one token.
void attention(float* out, const float* q, const float* keys, const float* values, int n_pos,
               int n_heads, int n_kv_heads, int head_dim, float* scratch, int h0 = 0,
               int h1 = -1);

// gate[i] = silu(gate[i]) * up[i]. Both GLUs are the kernels' references
// (kernels/glu.h); the forward pass calls its kernel set's copies, which
// give the same bits at their vector width.
void swiglu(float* gate, const float* up, int n);
// gate[i] = relu(gate[i])^2 * up[i] (BitNet b1.58 2B-4T's relu2 GLU)
void relu2_glu(float* gate, const float* up, int n);

// Float dot product in eight interleaved partial sums, in a fixed order
// (attention scores, the float output head).
float dot(const float* a, const float* b, int n);

}  // namespace tern::ops
