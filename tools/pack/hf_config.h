// The part of a Hugging Face config.json that packing needs, with the
// family (tern/family.h) its architecture selects.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "tern/family.h"

namespace tern::pack {

struct HfConfig {
  std::string architecture;  // architectures[0], or model_type when absent
  const Family* family = nullptr;
  uint32_t hidden_size = 0;
  uint32_t intermediate_size = 0;
  uint32_t n_layers = 0;
  uint32_t n_heads = 0;
  uint32_t n_kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t vocab_size = 0;
  uint32_t max_position_embeddings = 0;
  float rms_norm_eps = 0;
  float rope_theta = 10000.0f;
  // rope_scaling of type yarn: factor (> 1) and the trained context; the
  // betas when the config overrides transformers' 32 and 1.
  struct Yarn {
    double factor = 1;
    uint32_t original_ctx = 0;
    std::optional<double> beta_fast, beta_slow;
  };
  std::optional<Yarn> yarn;
  bool tie_word_embeddings = false;
  std::optional<uint32_t> bos_token_id, eos_token_id;
  std::string quant_method;  // quantization_config.quant_method, "" if none
  // How a packed weight_scale applies: quantization_config.linear_class
  // ("bitlinear" divides, "autobitlinear" multiplies), else the family's.
  ScaleConvention scale_convention = ScaleConvention::Divide;
  // quantization_config.use_rms_norm (Falcon-E): an RMSNorm with this eps on
  // the input of every ternary linear, weights <linear>.rms_norm.weight.
  std::optional<float> linear_norm_eps;

  bool is_bitnet() const { return quant_method == "bitnet"; }
  // BitNet b1.58 inference: int8 activations per token.
  bool int8_activations() const { return is_bitnet() || family->int8_activations; }
  uint32_t q_rows() const { return n_heads * head_dim; }
  uint32_t kv_rows() const { return n_kv_heads * head_dim; }
};

// Reads and validates config.json; throws tern::Error "path: problem".
HfConfig load_config(const std::string& path);

}  // namespace tern::pack
