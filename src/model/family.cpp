#include "tern/family.h"

#include <algorithm>
#include <array>
#include <vector>

#include "tern/error.h"

namespace tern {
namespace {

constexpr std::array kFamilies{
    // Llama blocks: TriLM/Spectra (float weights, ternary per row), and the
    // BitNet fine-tunes published as Llama checkpoints with
    // quantization_config bitnet (Falcon3-1.58bit, Llama3-8B-1.58, Falcon-E).
    Family{.name = "Llama", .gguf_arch = "llama", .hf_arch = "LlamaForCausalLM", .hf_act = "silu",
           .rope = RopeStyle::Pairs},
    // 1bitLLM bitnet_b1_58 (large, 3B): FP16 latent weights, sub-norms.
    // llama.cpp names the architecture `bitnet` and rotates halves.
    Family{.name = "BitNet b1.58 (1bitLLM)", .gguf_arch = "bitnet", .hf_arch = "BitnetForCausalLM",
           .hf_act = "silu", .rope = RopeStyle::Halves, .hf_attn_sub_norm = "self_attn.inner_attn_ln.weight",
           .hf_ffn_sub_norm = "mlp.ffn_layernorm.weight", .latent_weights = true, .int8_activations = true},
    // Microsoft's BitNet b1.58 2B-4T: sub-norms, squared ReLU, packed
    // weights with a multiplying scale (or BF16 latent weights); bitnet.cpp
    // names the architecture `bitnet-b1.58`.
    Family{.name = "BitNet b1.58 2B-4T", .gguf_arch = "bitnet-b1.58", .hf_arch = "BitNetForCausalLM",
           .hf_act = "relu2", .ffn_act = FfnAct::ReLU2, .rope = RopeStyle::Halves,
           .hf_attn_sub_norm = "self_attn.attn_sub_norm.weight", .hf_ffn_sub_norm = "mlp.ffn_sub_norm.weight",
           .latent_weights = true, .int8_activations = true, .default_scale = ScaleConvention::Multiply},
    // Qwen3 (PrismML's Ternary Bonsai): per-head q/k RMSNorms before NeoX
    // RoPE, an explicit head_dim, float activations (weights-only
    // quantization). llama.cpp's converter keeps HF's row order.
    Family{.name = "Qwen3", .gguf_arch = "qwen3", .hf_arch = "Qwen3ForCausalLM", .hf_act = "silu",
           .rope = RopeStyle::Halves, .hf_q_norm = "self_attn.q_norm.weight",
           .hf_k_norm = "self_attn.k_norm.weight"},
    // Fairy2i-W2 (PKULab1806): LLaMA-2 master weights, every linear (the
    // head too) phase-quantized at pack time. Halves: the complex split
    // reads rows in HF order, so q and k are not permuted.
    Family{.name = "Fairy2i (LLaMA-2)", .gguf_arch = "fairy2i", .hf_arch = "LlamaForCausalLM", .hf_act = "silu",
           .rope = RopeStyle::Halves, .phase_linears = true, .exact_float_acts = true},
};

// Each name once: Fairy2i shares Llama's config architecture.
std::string join(std::string_view Family::*field) {
  std::vector<std::string_view> seen;
  std::string s;
  for (const Family& f : kFamilies) {
    if (std::find(seen.begin(), seen.end(), f.*field) != seen.end()) continue;
    seen.push_back(f.*field);
    if (!s.empty()) s += ", ";
    s += f.*field;
  }
  return s;
}

}  // namespace

std::span<const Family> families() { return kFamilies; }

const Family* family_by_gguf_arch(std::string_view arch) {
  for (const Family& f : kFamilies)
    if (f.gguf_arch == arch) return &f;
  return nullptr;
}

const Family* family_by_hf_arch(std::string_view arch) {
  for (const Family& f : kFamilies)
    if (f.hf_arch == arch && !f.phase_linears) return &f;
  if (arch == "llama") return &kFamilies[0];  // model_type of exports without architectures
  return nullptr;
}

std::string supported_hf_archs() { return join(&Family::hf_arch); }

const Family& fairy2i_family() {
  for (const Family& f : kFamilies)
    if (f.phase_linears) return f;
  throw Error("no Fairy2i family in the table");
}
std::string supported_gguf_archs() { return join(&Family::gguf_arch); }

}  // namespace tern
