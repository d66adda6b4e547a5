#include "pack/hf_config.h"

#include <cstring>
#include <cmath>
#include <nlohmann/json.hpp>

#include "tern/error.h"
#include "tern/input_file.h"

namespace tern::pack {

namespace {

using json = nlohmann::json;

// Dimensions beyond this are not a real model and would overflow the 32-bit
// GGUF hyperparameters and products of two of them.
constexpr uint64_t kMaxDim = 1u << 24;

struct Reader {
  const std::string& path;
  const json& j;

  Error bad(const std::string& what) const { return file_error(path, what); }

  uint32_t dim(const char* key, std::optional<uint32_t> dflt = std::nullopt) const {
    if (!j.contains(key) || j[key].is_null()) {
      if (dflt) return *dflt;
      throw bad(std::string("missing '") + key + "'");
    }
    const json& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 ||
        static_cast<uint64_t>(v.get<int64_t>()) > kMaxDim)
      throw bad(std::string("'") + key + "' must be a positive integer up to " +
                std::to_string(kMaxDim) + ", got " + v.dump());
    return static_cast<uint32_t>(v.get<int64_t>());
  }

  float positive_float(const char* key, std::optional<float> dflt = std::nullopt) const {
    if (!j.contains(key) || j[key].is_null()) {
      if (dflt) return *dflt;
      throw bad(std::string("missing '") + key + "'");
    }
    const json& v = j[key];
    // Checked as the f32 it becomes (fuzz_hf_config: an eps of 1e-205 is
    // positive as a double and 0 as a float, 1e39 is infinite).
    const float f = v.is_number() ? static_cast<float>(v.get<double>()) : 0.0f;
    if (!(f > 0) || !std::isfinite(f))
      throw bad(std::string("'") + key + "' must be a positive number that fits in f32, got " + v.dump());
    return f;
  }

  // Token ids may be an int or (Llama 3 style) a list whose first entry is
  // the primary one.
  std::optional<uint32_t> token_id(const char* key) const {
    if (!j.contains(key) || j[key].is_null()) return std::nullopt;
    json v = j[key];
    if (v.is_array() && !v.empty()) v = v[0];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      throw bad(std::string("'") + key + "' must be a token id, got " + j[key].dump());
    return static_cast<uint32_t>(v.get<int64_t>());
  }

  bool flag(const char* key, bool dflt) const {
    if (!j.contains(key) || j[key].is_null()) return dflt;
    if (!j[key].is_boolean()) throw bad(std::string("'") + key + "' must be true or false");
    return j[key].get<bool>();
  }
};


// rope_scaling: null, or YaRN as transformers reads it. Anything else
// (linear, dynamic, llama3, longrope, or a YaRN key that changes the
// arithmetic: attention_factor, mscale, truncate false) is refused rather
// than run wrong. With original_max_position_embeddings, the explicit
// factor wins over max_position_embeddings / original, as in current
// transformers and llama.cpp's converter.
std::optional<HfConfig::Yarn> rope_scaling(const Reader& r, uint32_t max_positions) {
  if (!r.j.contains("rope_scaling") || r.j["rope_scaling"].is_null()) return std::nullopt;
  const json& q = r.j["rope_scaling"];
  const auto unsupported = [&] { return r.bad("rope_scaling " + q.dump() + " is not supported (tern runs yarn)"); };
  if (!q.is_object()) throw unsupported();
  const json type = q.contains("rope_type") ? q["rope_type"] : q.contains("type") ? q["type"] : json();
  if (type == "default" && q.size() == 1) return std::nullopt;
  if (type != "yarn") throw unsupported();
  HfConfig::Yarn y;
  for (const auto& item : q.items()) {
    // Named copies: a lambda may not capture a structured binding (clang 14).
    const std::string key = item.key();
    const json& v = item.value();
    const auto number = [&](double lo) {
      const double d = v.is_number() ? v.get<double>() : NAN;
      if (!(d >= lo) || !std::isfinite(d) || d > 1e9)
        throw r.bad("rope_scaling." + key + " must be a number of at least " + std::to_string(lo) + ", got " + v.dump());
      return d;
    };
    if (key == "rope_type" || key == "type") continue;
    if (key == "factor") y.factor = number(1);
    else if (key == "original_max_position_embeddings") y.original_ctx = uint32_t(number(1));
    else if (key == "beta_fast") y.beta_fast = number(0);
    else if (key == "beta_slow") y.beta_slow = number(0);
    else if (key == "truncate" && v == true) continue;
    else if (key == "attention_factor" || key == "mscale" || key == "mscale_all_dim" || key == "truncate")
      throw r.bad("rope_scaling." + key + " " + v.dump() + " is not supported");
    else throw r.bad("rope_scaling." + key + " is not a YaRN key tern knows");
  }
  if (!q.contains("factor")) throw r.bad("rope_scaling of type yarn has no factor");
  if (y.original_ctx == 0) y.original_ctx = max_positions;
  if (y.beta_fast.value_or(32) < y.beta_slow.value_or(1) || y.beta_slow.value_or(1) <= 0)
    throw r.bad("rope_scaling: yarn needs beta_fast >= beta_slow > 0");
  return y;
}
}  // namespace

namespace {

// The architecture (the first of "architectures", else "model_type") and
// its family, with the settings its forward pass would get wrong refused.
void read_family(const Reader& r, const json& j, HfConfig& c) {
  if (j.contains("architectures") && j["architectures"].is_array())
    for (const auto& a : j["architectures"])
      if (a.is_string() && c.architecture.empty()) c.architecture = a.get<std::string>();
  if (c.architecture.empty() && j.contains("model_type") && j["model_type"].is_string())
    c.architecture = j["model_type"].get<std::string>();
  c.family = family_by_hf_arch(c.architecture);
  if (!c.family)
    throw r.bad("unsupported architecture '" + (c.architecture.empty() ? std::string("unknown") : c.architecture) +
                "' (tern packs " + supported_hf_archs() + ")");
  c.scale_convention = c.family->default_scale;
  if (r.flag("use_sliding_window", false)) throw r.bad("use_sliding_window is not supported");
  if (r.flag("attention_bias", false)) throw r.bad("attention_bias is not supported");
  if (r.flag("mlp_bias", false)) throw r.bad("mlp_bias is not supported");
  if (j.contains("hidden_act") && j["hidden_act"] != c.family->hf_act)
    throw r.bad("hidden_act " + j["hidden_act"].dump() + " is not supported (" + c.architecture + " uses " +
                std::string(c.family->hf_act) + ")");
}

// Sizes, RoPE, tying and special ids, and the head shape they imply.
void read_dims(const Reader& r, const json& j, HfConfig& c) {
  c.hidden_size = r.dim("hidden_size");
  c.intermediate_size = r.dim("intermediate_size");
  c.n_layers = r.dim("num_hidden_layers");
  c.n_heads = r.dim("num_attention_heads");
  c.n_kv_heads = r.dim("num_key_value_heads", c.n_heads);
  c.vocab_size = r.dim("vocab_size");
  c.max_position_embeddings = r.dim("max_position_embeddings");
  c.rms_norm_eps = r.positive_float("rms_norm_eps");
  c.rope_theta = r.positive_float("rope_theta", 10000.0f);
  c.yarn = rope_scaling(r, c.max_position_embeddings);
  c.tie_word_embeddings = r.flag("tie_word_embeddings", false);
  c.bos_token_id = r.token_id("bos_token_id");
  c.eos_token_id = r.token_id("eos_token_id");
  if (c.hidden_size % c.n_heads != 0 && !j.contains("head_dim"))
    throw r.bad("hidden_size " + std::to_string(c.hidden_size) + " is not divisible by num_attention_heads " +
                std::to_string(c.n_heads));
  c.head_dim = r.dim("head_dim", c.hidden_size / c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    throw r.bad("num_attention_heads " + std::to_string(c.n_heads) + " is not a multiple of num_key_value_heads " +
                std::to_string(c.n_kv_heads));
  // RoPE rotates pairs, and the q/k row permutation splits each head in halves.
  if (c.head_dim % 2 != 0) throw r.bad("head_dim " + std::to_string(c.head_dim) + " is odd");
  if (static_cast<uint64_t>(c.n_heads) * c.head_dim > kMaxDim) throw r.bad("num_attention_heads * head_dim is too large");
}

// BitNet's quantization_config: its method, how its packed scales divide
// or multiply, and the RMSNorm its BitLinear puts before each product.
void read_quantization(const Reader& r, const json& q, HfConfig& c) {
  if (q.contains("quant_method") && q["quant_method"].is_string()) c.quant_method = q["quant_method"].get<std::string>();
  if (!c.quant_method.empty() && c.quant_method != "bitnet")
    throw r.bad("quantization_config.quant_method '" + c.quant_method +
                "' is not supported (tern packs float or bitnet checkpoints)");
  if (q.contains("linear_class") && q["linear_class"].is_string()) {
    const std::string lc = q["linear_class"].get<std::string>();
    if (lc == "bitlinear") c.scale_convention = ScaleConvention::Divide;
    else if (lc == "autobitlinear") c.scale_convention = ScaleConvention::Multiply;
    else throw r.bad("quantization_config.linear_class '" + lc + "' is not supported");
  }
  if (q.contains("use_rms_norm") && q["use_rms_norm"] == true) {
    // transformers' BitNetQuantConfig default, as its BitLinear uses it.
    float eps = 1e-6f;
    if (q.contains("rms_norm_eps")) {
      eps = q["rms_norm_eps"].is_number() ? static_cast<float>(q["rms_norm_eps"].get<double>()) : 0.0f;
      if (!(eps > 0) || !std::isfinite(eps))
        throw r.bad("quantization_config.rms_norm_eps must be a positive number that fits in f32");
    }
    c.linear_norm_eps = eps;
  }
}

}  // namespace

HfConfig load_config(const std::string& path) {
  const std::string text = read_input_file(path, uint64_t(16) << 20, "a config.json");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw file_error(path, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) throw file_error(path, "not a JSON object");
  Reader r{path, j};
  HfConfig c;
  read_family(r, j, c);
  read_dims(r, j, c);
  if (j.contains("quantization_config") && j["quantization_config"].is_object())
    read_quantization(r, j["quantization_config"], c);
  return c;
}

}  // namespace tern::pack
