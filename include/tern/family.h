// Model families as data. Each published ternary family is one entry: what
// selects it in a Hugging Face config.json, how its tensors are named, and
// the few ways its forward pass differs from a plain Llama block. The packer
// (HF checkpoint -> GGUF) and the loader (GGUF -> Model) read the same
// table, and the forward pass branches on these fields, never on names:
// adding a family is one entry here and its test.
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace tern {

enum class FfnAct { SiLU, ReLU2 };  // act(gate) * up: silu(g), or relu(g)^2

// How a file lays out each head's q/k rows for RoPE. Hugging Face
// checkpoints rotate halves (i, i + d/2); llama.cpp's `llama` architecture
// expects its converter's permutation to adjacent pairs (2i, 2i + 1).
enum class RopeStyle { Pairs, Halves };

// How a packed checkpoint's weight_scale enters y = W x: transformers'
// BitLinear divides (Falcon3-1.58bit, Llama3-8B-1.58), AutoBitLinear
// multiplies (BitNet b1.58 2B-4T).
enum class ScaleConvention { Divide, Multiply };

struct Family {
  std::string_view name = {};         // shown by `tern info`, e.g. "BitNet b1.58 (2B-4T)"
  std::string_view gguf_arch = {};    // general.architecture and hyperparameter key prefix
  std::string_view hf_arch = {};      // config.json architectures[0] that selects it
  std::string_view hf_act = {};       // hidden_act of its reference; config.json must agree
  FfnAct ffn_act = FfnAct::SiLU;
  RopeStyle rope = RopeStyle::Pairs;  // layout in the GGUF file (the packer permutes for Pairs)
  // Sub-norms: an RMSNorm of the attention output before o_proj, and of
  // act(gate) * up before down_proj. Empty: the family has none. The GGUF
  // names are llama.cpp's blk.N.attn_sub_norm / blk.N.ffn_sub_norm.
  std::string_view hf_attn_sub_norm = {};  // under model.layers.N.
  std::string_view hf_ffn_sub_norm = {};
  // Per-head RMSNorms of q and k over head_dim, before RoPE (Qwen3), with
  // the model's eps. Empty: none. GGUF blk.N.attn_q_norm / attn_k_norm.
  std::string_view hf_q_norm = {};  // under model.layers.N.
  std::string_view hf_k_norm = {};
  // Float linears are latent weights ternarized by absmean per tensor at
  // pack time, as the reference does in every forward (1bitLLM). Otherwise
  // float linears must already be ternary per row (TriLM), unless
  // quantization_config says bitnet.
  bool latent_weights = false;
  bool int8_activations = false;  // per-token absmax int8 inputs, unless the file says otherwise
  ScaleConvention default_scale = ScaleConvention::Divide;  // when quantization_config names no linear_class
  // Fairy2i: every linear and the head are widely-linear complex maps in
  // phase codes (include/tern/phase.h), quantized from a float checkpoint
  // by `tern pack --fairy2i`, never selected by config.json alone.
  bool phase_linears = false;
  // Its float inputs stay exact unless the user asks for int16 or int8
  // (LoadOptions::float_acts). Fairy2i: the published model computes in
  // float, and its int8 kernels are not on every instruction set.
  bool exact_float_acts = false;

  bool has_sub_norms() const { return !hf_attn_sub_norm.empty(); }
  bool has_qk_norms() const { return !hf_q_norm.empty(); }
};

std::span<const Family> families();
// By GGUF general.architecture; null if none.
const Family* family_by_gguf_arch(std::string_view arch);
// By config.json architectures[0] (or model_type when it has none); null if
// none. Never a phase_linears family: those are asked for by name.
const Family* family_by_hf_arch(std::string_view arch);
// "LlamaForCausalLM, BitnetForCausalLM, ..." for error messages.
std::string supported_hf_archs();
// The Fairy2i family (tern pack --fairy2i).
const Family& fairy2i_family();
std::string supported_gguf_archs();

}  // namespace tern
