#include "pack/plan.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "pack/fairy2i.h"
#include "pack/ternarize.h"
#include "tern/error.h"
#include "tern/phase.h"
#include "tern/quant.h"

namespace tern::pack {

namespace {

using gguf::TensorType;

std::string dims_string(const std::vector<uint64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// "ckpt/", "." and "a/../ckpt" all name the directory by its own name.
std::string basename_of(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

struct Expect {
  std::string src, name;
  Role role;
  std::vector<uint64_t> shape;  // HF order
  uint32_t permute_heads = 0;
};

std::vector<Expect> expected_tensors(const HfConfig& c, bool with_output) {
  const Family& fam = *c.family;
  const Role linear_role = fam.phase_linears ? Role::Phase : Role::Ternary;
  const uint64_t H = c.hidden_size, F = c.intermediate_size, V = c.vocab_size;
  const uint64_t Q = c.q_rows(), KV = c.kv_rows();
  // HF checkpoints rotate halves; a Pairs file gets llama.cpp's permutation.
  const bool permute = fam.rope == RopeStyle::Pairs;
  std::vector<Expect> e;
  e.push_back({"model.embed_tokens.weight", "token_embd.weight", Role::Embedding, {V, H}});
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const std::string s = "model.layers." + std::to_string(l) + ".";
    const std::string g = "blk." + std::to_string(l) + ".";
    // A linear, preceded by its input norm when the checkpoint has them
    // (use_rms_norm): blk.N.<linear>.rms_norm.weight, a tern-only name.
    auto linear = [&](const std::string& src, const std::string& name, uint64_t rows, uint64_t cols,
                      uint32_t heads = 0) {
      if (c.linear_norm_eps)
        e.push_back({s + src + ".rms_norm.weight", g + name + ".rms_norm.weight", Role::Norm, {cols}});
      e.push_back({s + src + ".weight", g + name + ".weight", linear_role, {rows, cols}, heads});
    };
    e.push_back({s + "input_layernorm.weight", g + "attn_norm.weight", Role::Norm, {H}});
    linear("self_attn.q_proj", "attn_q", Q, H, permute ? c.n_heads : 0);
    linear("self_attn.k_proj", "attn_k", KV, H, permute ? c.n_kv_heads : 0);
    linear("self_attn.v_proj", "attn_v", KV, H);
    if (fam.has_qk_norms()) {
      e.push_back({s + std::string(fam.hf_q_norm), g + "attn_q_norm.weight", Role::Norm, {c.head_dim}});
      e.push_back({s + std::string(fam.hf_k_norm), g + "attn_k_norm.weight", Role::Norm, {c.head_dim}});
    }
    if (fam.has_sub_norms())
      e.push_back({s + std::string(fam.hf_attn_sub_norm), g + "attn_sub_norm.weight", Role::Norm, {Q}});
    linear("self_attn.o_proj", "attn_output", H, Q);
    e.push_back({s + "post_attention_layernorm.weight", g + "ffn_norm.weight", Role::Norm, {H}});
    linear("mlp.gate_proj", "ffn_gate", F, H);
    linear("mlp.up_proj", "ffn_up", F, H);
    if (fam.has_sub_norms())
      e.push_back({s + std::string(fam.hf_ffn_sub_norm), g + "ffn_sub_norm.weight", Role::Norm, {F}});
    linear("mlp.down_proj", "ffn_down", H, F);
  }
  e.push_back({"model.norm.weight", "output_norm.weight", Role::Norm, {H}});
  // Fairy2i quantizes the head too; tied, from the embedding's values.
  if (fam.phase_linears)
    e.push_back({with_output ? "lm_head.weight" : "model.embed_tokens.weight", "output.weight", Role::Phase, {V, H}});
  else if (with_output)
    e.push_back({"lm_head.weight", "output.weight", Role::Embedding, {V, H}});
  return e;
}

// transformers' pack_weights: packed[p][k] holds, in bits 2i..2i+1, code
// (trit + 1) of row i * P + p, P = rows / 4.
constexpr uint64_t kPerByte = 4;

// A packed linear's one scale, as the value T multiplies.
float packed_scale(const Checkpoint& ckpt, const StTensor& s, ScaleConvention conv) {
  const std::vector<float> v = ckpt.read_f32(s);
  const float ws = v[0];
  if (!std::isfinite(ws) || !(ws > 0))
    throw file_error(s.file->path(), "tensor '" + s.name + "' is " + fmt_float(ws) +
                                         ", not a positive scale");
  return conv == ScaleConvention::Multiply ? ws : 1.0f / ws;
}

// PrismML's group size: Ternary Bonsai is ternary with one fp16 scale per
// 128 consecutive weights of a row.
constexpr uint64_t kGroup = 128;
// Every group of `group` weights of the row (the last may be shorter) one
// magnitude times {-1, 0, 1}; with fp16_scales, each magnitude exact in fp16.
bool ternary_per_group(const float* row, uint64_t n, uint64_t group, bool fp16_scales) {
  float a = 0, b = 0;
  for (uint64_t g = 0; g < n; g += group) {
    const auto s = exact_row_scale(row + g, std::min(group, n - g), &a, &b);
    if (!s || (fp16_scales && fp16_to_f32(f32_to_fp16(*s)) != *s)) return false;
  }
  return true;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

namespace {

// The flags and the input folder, before any file is read.
void check_pack_options(const PackOptions& o) {
  if (o.fairy2i_stages < 0 || o.fairy2i_stages > kMaxPhaseStages)
    throw Error("pack: --fairy2i-stages must be 1 to " + std::to_string(kMaxPhaseStages) + ", not " +
                std::to_string(o.fairy2i_stages));
  if (o.type != TensorType::TQ2_0 && o.type != TensorType::TQ1_0 && !is_group_type(o.type))
    throw Error("pack: output type must be TQ2_0, TQ1_0, PQ2_0 or Q2_0, not " +
                std::string(gguf::traits(o.type).name));
  struct stat st {};
  if (::stat(o.input_dir.c_str(), &st) != 0) throw file_error(o.input_dir, "no such directory");
  if (!S_ISDIR(st.st_mode)) throw file_error(o.input_dir, "not a directory");
  for (const auto& t : {o.output_type, o.embedding_type})
    if (t && !is_dense_type(*t))
      throw Error("pack: the head and embedding types are " + dense_type_names() + ", not " +
                  std::string(gguf::traits(*t).name));
}

// The vocabulary padded to config.json's size and the special ids, as
// llama.cpp's converter: the tokenizer's own ids first, config.json's
// where the tokenizer names none.
void resolve_special_tokens(PackInputs& in, const std::string& dir) {
  const HfConfig& c = in.cfg;
  if (c.vocab_size < in.tok.tokens.size())
    throw file_error(dir + "/config.json", "vocab_size " + std::to_string(c.vocab_size) + " is smaller than the " +
                                               std::to_string(in.tok.tokens.size()) + " tokens of the tokenizer");
  in.tok.pad_to(c.vocab_size);
  auto token = [&](std::optional<uint32_t> cfg_id, int32_t& id, const char* what, bool required) {
    if (id < 0 && cfg_id) id = static_cast<int32_t>(*cfg_id);
    if (id < 0 && required)
      throw file_error(dir, std::string("the tokenizer defines no ") + what + " token (nor does config.json)");
    if (id >= static_cast<int64_t>(c.vocab_size))
      throw file_error(dir + "/config.json", std::string(what) + " token id " +
                                                 std::to_string(id) + " is outside the vocabulary");
  };
  token(c.bos_token_id, in.tok.bos, "bos", in.tok.add_bos);
  token(c.eos_token_id, in.tok.eos, "eos", true);
  token(std::nullopt, in.tok.unk, "unk", false);
}

// A packed (uint8, four rows a byte) linear's shape and its one-float
// scale tensor, which `used` and `dtypes` record.
void plan_packed(const Expect& e, const PackInputs& in, PlanTensor& t, std::set<std::string>& used,
                 std::set<std::string>& dtypes) {
  const StTensor* st_t = t.src;
  const std::vector<uint64_t> want{t.rows / kPerByte, t.cols};
  if (t.rows % kPerByte != 0 || st_t->shape != want)
    throw file_error(st_t->file->path(), "tensor '" + e.src + "' has shape " + st_t->shape_string() + ", expected " +
                                             dims_string(want) + " (" + dims_string(e.shape) +
                                             " packed four rows per byte)");
  const std::string scale_name = e.src + "_scale";
  t.scale_src = in.ckpt.find(scale_name);
  if (!t.scale_src)
    throw file_error(in.ckpt.label(), "missing tensor '" + scale_name + "' (the scale of packed '" + e.src + "')");
  if (!is_float_dtype(t.scale_src->dtype) || t.scale_src->n_elements() != 1)
    throw file_error(t.scale_src->file->path(), "tensor '" + scale_name + "' has dtype " + t.scale_src->dtype +
                                                    " and shape " + t.scale_src->shape_string() +
                                                    ", expected one float");
  t.packed_scale = packed_scale(in.ckpt, *t.scale_src, in.cfg.scale_convention);
  used.insert(scale_name);
  dtypes.insert(t.scale_src->dtype);
}

// One expected tensor's plan: its source checked against the shape
// config.json gives, its stored type and dimensions.
PlanTensor plan_tensor(const Expect& e, const PackInputs& in, const PackOptions& o, std::set<std::string>& used,
                       std::set<std::string>& dtypes) {
  const StTensor* st_t = in.ckpt.find(e.src);
  if (!st_t) throw file_error(in.ckpt.label(), "missing tensor '" + e.src + "'");
  PlanTensor t;
  t.src_name = e.src;
  t.name = e.name;
  t.role = e.role;
  t.src = st_t;
  t.rows = e.shape.size() == 2 ? e.shape[0] : 1;
  t.cols = e.shape.back();
  const bool packed = e.role == Role::Ternary && st_t->dtype == "U8";
  if (e.role == Role::Phase && (e.shape[0] % 2 || e.shape[1] % 2))
    throw file_error(st_t->file->path(), "tensor '" + e.src + "' has shape " + dims_string(e.shape) +
                                             "; Fairy2i splits a linear into complex halves, so both sides must be even");
  if (packed) {
    plan_packed(e, in, t, used, dtypes);
  } else {
    if (!is_float_dtype(st_t->dtype))
      throw file_error(st_t->file->path(), "tensor '" + e.src + "' has unsupported dtype " + st_t->dtype);
    if (st_t->shape != e.shape)
      throw file_error(st_t->file->path(), "tensor '" + e.src + "' has shape " + st_t->shape_string() +
                                               ", expected " + dims_string(e.shape) + " (from config.json)");
  }
  if (e.role == Role::Ternary) {
    t.type = o.type;  // analyze() confirms it; the stored width depends on it
    if (const int group = group_size(o.type); group && t.cols % uint64_t(group) != 0)
      throw file_error(st_t->file->path(), "tensor '" + e.src + "' rows of " + std::to_string(t.cols) +
                                               " weights are not whole " + gguf::traits(o.type).name + " groups of " +
                                               std::to_string(group));
  }
  if (e.role == Role::Phase)  // [2 * padded complex columns, real rows, stages]
    t.dims = {2 * uint64_t(phase_cols(int64_t(t.cols / 2))), t.rows, uint64_t(in.phase_stages)};
  else
    t.dims = e.shape.size() == 2 ? std::vector<uint64_t>{t.stored_cols(), t.rows} : std::vector<uint64_t>{t.cols};
  if (e.permute_heads) t.perm = qk_row_permutation(static_cast<uint32_t>(t.rows), e.permute_heads);
  used.insert(e.src);
  dtypes.insert(st_t->dtype);
  return t;
}

// How the linears' scales are found: from the packed scale tensors,
// Fairy2i's phases, BitNet's absmean, or each row's (or, for the group
// types, each group's) exact magnitude.
ScaleRule choose_rule(const PackInputs& in, const PackOptions& o, size_t n_packed) {
  const HfConfig& c = in.cfg;
  const ScaleRule rule = in.phase_stages ? ScaleRule::Phase
                         : n_packed      ? ScaleRule::Packed
                         : (c.is_bitnet() || c.family->latent_weights || o.force_ternarize) ? ScaleRule::Absmean
                                                                                             : ScaleRule::PerRow;
  if (!is_group_type(o.type)) return rule;
  // One scale per tensor would fit a group type only where fp16 holds it
  // exactly; TQ2_0 keeps such scales exact, so those stay TQ types.
  if (rule != ScaleRule::PerRow)
    throw file_error(o.input_dir, std::string("--type ") + gguf::traits(o.type).name +
                                      " packs float checkpoints whose weights are ternary per group or per row; "
                                      "this one's are " + scale_rule_name(rule) + ": use tq2_0 or tq1_0");
  return ScaleRule::PerGroup;
}

}  // namespace

PackInputs load_inputs(const PackOptions& o) {
  check_pack_options(o);
  PackInputs in;
  in.chunk_floats = std::max<uint64_t>(1, o.chunk_floats);
  in.output_type = o.output_type;
  in.embedding_type = o.embedding_type;
  in.cfg = load_config(o.input_dir + "/config.json");
  if (o.fairy2i_stages) {
    // Fairy2i-W2 publishes LLaMA-2 master weights: a float Llama checkpoint.
    const std::string cfg_path = o.input_dir + "/config.json";
    if (in.cfg.family != family_by_hf_arch("LlamaForCausalLM") || in.cfg.is_bitnet() || in.cfg.linear_norm_eps)
      throw file_error(cfg_path, "--fairy2i needs a float LlamaForCausalLM checkpoint, not " + in.cfg.architecture +
                                     (in.cfg.is_bitnet() ? " with quantization_config bitnet" : ""));
    in.cfg.family = &fairy2i_family();
    in.phase_stages = o.fairy2i_stages;
  }
  in.tok = tok::load_checkpoint_tokenizer(o.input_dir);
  in.ckpt = Checkpoint::open(o.input_dir);
  in.name = basename_of(o.input_dir);
  const HfConfig& c = in.cfg;
  resolve_special_tokens(in, o.input_dir);

  in.tied = c.tie_word_embeddings || !in.ckpt.find("lm_head.weight");
  if (in.phase_stages && in.output_type)
    throw Error("pack: --output-type does not apply to --fairy2i, whose head is phase-quantized");
  if (in.tied && in.output_type && in.embedding_type && *in.output_type != *in.embedding_type)
    throw file_error(o.input_dir, "the embeddings are tied (one tensor is also the head): "
                                  "--output-type and --token-embedding-type must agree");
  std::set<std::string> used, dtypes;
  size_t n_packed = 0, n_linear = 0;
  for (const Expect& e : expected_tensors(c, !in.tied)) {
    in.tensors.push_back(plan_tensor(e, in, o, used, dtypes));
    if (e.role == Role::Ternary) ++n_linear, n_packed += in.tensors.back().src->dtype == "U8";
  }
  if (n_packed != 0 && n_packed != n_linear)
    throw file_error(in.ckpt.label(), "mixes packed uint8 and float linear weights (" + std::to_string(n_packed) +
                                          " of " + std::to_string(n_linear) + " packed)");
  in.rule = choose_rule(in, o, n_packed);
  if (c.tie_word_embeddings) used.insert("lm_head.weight");  // redundant copy some exports keep
  for (const auto& [name, st_t] : in.ckpt.tensors()) {
    // Old exports carry RoPE's inverse frequencies; they are derived from rope_theta.
    if (used.count(name) || ends_with(name, ".rotary_emb.inv_freq")) continue;
    throw file_error(st_t->file->path(), "unexpected tensor '" + name + "' (not part of a " + c.architecture +
                                             " model of this config)");
  }
  for (const auto& d : dtypes) in.source_dtypes += (in.source_dtypes.empty() ? "" : ",") + d;
  return in;
}

uint32_t llama_file_type(TensorType t) {
  switch (t) {
    case TensorType::TQ1_0: return 36;
    case TensorType::Q2_0: return 41;
    case TensorType::PQ2_0: return 141;
    default: return 37;
  }
}

const char* scale_rule_name(ScaleRule r) {
  switch (r) {
    case ScaleRule::PerRow: return "per-row";
    case ScaleRule::Absmean: return "absmean-per-tensor";
    case ScaleRule::Packed: return "packed-per-tensor";
    case ScaleRule::Phase: return "fairy2i-phase";
    case ScaleRule::PerGroup: return "per-group";
  }
  return "?";
}

std::vector<float> read_values(const PackInputs& in, const PlanTensor& t) {
  if (!t.scale_src) return in.ckpt.read_f32(*t.src);
  const std::vector<uint8_t> bytes = in.ckpt.read_bytes(*t.src);
  const uint64_t P = t.rows / kPerByte;
  std::vector<float> v(t.rows * t.cols);
  for (uint64_t i = 0; i < kPerByte; ++i)
    for (uint64_t p = 0; p < P; ++p)
      for (uint64_t k = 0; k < t.cols; ++k)
        v[(i * P + p) * t.cols + k] = float(int((bytes[p * t.cols + k] >> (2 * i)) & 3) - 1);
  return v;
}

void check_finite(const PlanTensor& t, std::span<const float> v, uint64_t first_row) {
  for (uint64_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw file_error(t.src->file->path(), "tensor '" + t.src_name + "' row " +
                                                std::to_string(first_row + i / t.cols) + " has a non-finite value");
}

void for_each_chunk(const PackInputs& in, PlanTensor& t,
                    const std::function<void(uint64_t, std::span<const float>)>& fn) {
  const uint64_t step = std::max<uint64_t>(1, in.chunk_floats / std::max<uint64_t>(1, t.cols));
  for (uint64_t r0 = 0; r0 < t.rows; r0 += step) {
    const uint64_t n = std::min(step, t.rows - r0);
    const std::vector<float> v = in.ckpt.read_f32(*t.src, r0 * t.cols, n * t.cols);
    // A NaN norm or embedding row would pack and then print plausible
    // text; every float tensor passes through here on its way out.
    if (!t.finite_checked) check_finite(t, v, r0);
    fn(r0, v);
  }
  t.finite_checked = true;
}

namespace {

// The type asked for this tensor, if any. Tied embeddings are one tensor,
// which is also the head.
std::optional<TensorType> requested_type(const PackInputs& in, const PlanTensor& t) {
  if (t.role != Role::Embedding) return std::nullopt;
  if (t.name == "output.weight") return in.output_type;
  if (in.embedding_type) return in.embedding_type;
  return in.tied ? in.output_type : std::nullopt;
}

}  // namespace

void analyze(const PackInputs& in, PlanTensor& t, TensorType ternary_type) {
  if (t.role == Role::Ternary) return analyze_ternary(t, read_values(in, t), in.rule, ternary_type);
  if (t.role == Role::Phase) {
    t.type = TensorType::FAIRY2I;
    t.scales = phase_quantize_checked(in, t, read_values(in, t)).scales;
    return;
  }
  if (const std::optional<TensorType> want = requested_type(in, t)) {
    if (const uint64_t block = gguf::traits(*want).block_size; t.cols % block != 0)
      throw file_error(t.src->file->path(), "tensor '" + t.src_name + "' rows of " + std::to_string(t.cols) +
                                                " values cannot be " + gguf::traits(*want).name +
                                                " (whole blocks of " + std::to_string(block) + ")");
    t.type = *want;
    return;
  }
  // Ternary Bonsai's embedding (and head) is ternary per group too: a pack
  // to a group type stores it as one, losslessly, when every group is.
  if (const int group = group_size(ternary_type); group && t.role == Role::Embedding && t.cols % uint64_t(group) == 0) {
    bool groups = true;
    for_each_chunk(in, t, [&](uint64_t, std::span<const float> v) {
      for (uint64_t r = 0; groups && r < v.size() / t.cols; ++r)
        groups = ternary_per_group(&v[r * t.cols], t.cols, uint64_t(group), true);
    });
    if (groups) {
      t.type = ternary_type;
      return;
    }
  }
  if (t.role == Role::Norm || t.src->dtype == "F32") {
    t.type = TensorType::F32;
  } else if (t.src->dtype == "F16") {
    t.type = TensorType::F16;
  } else {
    // BF16 goes to F16 when that is exact (every engine reads F16), else
    // stays BF16: lossless either way, and half the size of F32.
    bool f16 = true;
    for_each_chunk(in, t, [&](uint64_t, std::span<const float> v) {
      f16 = f16 && fits_f16_exactly(v.data(), v.size());
    });
    t.type = f16 ? TensorType::F16 : TensorType::BF16;
  }
}

namespace {

// PerGroup: each group's one magnitude, which its fp16 block scale must
// hold exactly (lossless); output row order, as the blocks are written.
void analyze_groups(PlanTensor& t, const std::vector<float>& data) {
  const std::string& path = t.src->file->path();
  const uint64_t group = uint64_t(group_size(t.type)), G = t.cols / group;
  t.scales.assign(t.rows * G, 0.0f);
  for (uint64_t r = 0; r < t.rows; ++r) {
    const uint64_t src = t.perm.empty() ? r : t.perm[r];
    for (uint64_t g = 0; g < G; ++g) {
      float a = 0, b = 0;
      const auto s = exact_row_scale(&data[src * t.cols + g * group], group, &a, &b);
      const std::string where = "tensor '" + t.src_name + "' row " + std::to_string(src) + " group " +
                                std::to_string(g) + " (weights " + std::to_string(g * group) + " to " +
                                std::to_string((g + 1) * group - 1) + ")";
      if (!s)
        throw file_error(path, where + " is not ternary (values " + fmt_float(a) + " and " + fmt_float(b) +
                                   "): " + gguf::traits(t.type).name + " holds one scale per group");
      if (fp16_to_f32(f32_to_fp16(*s)) != *s)
        throw file_error(path, where + " has scale " + fmt_float(*s) + ", which fp16 cannot hold exactly (" +
                                   gguf::traits(t.type).name + " blocks store fp16 scales; tq2_0 keeps it exact)");
      t.scales[r * G + g] = *s;
    }
  }
}

}  // namespace

void analyze_ternary(PlanTensor& t, const std::vector<float>& data, ScaleRule rule,
                     TensorType ternary_type) {
  const std::string& path = t.src->file->path();
  t.type = ternary_type;
  check_finite(t, data, 0);
  std::vector<float> src_scales;
  if (rule == ScaleRule::Packed) {
    for (uint64_t i = 0; i < data.size(); ++i)
      if (data[i] > 1)
        throw file_error(path, "tensor '" + t.src_name + "' row " + std::to_string(i / t.cols) +
                                   " column " + std::to_string(i % t.cols) +
                                   " holds 2-bit code 3, which is not a ternary value");
    src_scales.push_back(t.packed_scale);
  } else if (rule == ScaleRule::Absmean) {
    src_scales.push_back(absmean_scale(data.data(), data.size()));
  } else if (rule == ScaleRule::PerGroup) {
    return analyze_groups(t, data);
  } else {
    for (uint64_t r = 0; r < t.rows; ++r) {
      float a = 0, b = 0;
      auto s = exact_row_scale(&data[r * t.cols], t.cols, &a, &b);
      if (!s && ternary_per_group(&data[r * t.cols], t.cols, kGroup, false))
        throw file_error(path, "tensor '" + t.src_name + "' row " + std::to_string(r) +
                                   " is ternary with one scale per " + std::to_string(kGroup) +
                                   " weights (" + fmt_float(a) + " and " + fmt_float(b) +
                                   "), as Ternary Bonsai is; TQ2_0 and TQ1_0 hold one scale per row: "
                                   "--type pq2_0 (or q2_0) keeps the groups' scales");
      if (!s)
        throw file_error(path, "tensor '" + t.src_name + "' row " + std::to_string(r) +
                                   " is not ternary (values " + fmt_float(a) + " and " +
                                   fmt_float(b) +
                                   "): tern packs models trained ternary; making a float model "
                                   "ternary is training, not packing (--ternarize forces absmean "
                                   "quantization, which loses accuracy)");
      src_scales.push_back(*s);
    }
  }
  for (size_t r = 0; r < src_scales.size(); ++r) {
    const float s = src_scales[r];
    const float h = fp16_to_f32(f32_to_fp16(s));
    std::string where = src_scales.size() == 1 ? "" : " row " + std::to_string(r);
    if (std::isinf(h))
      throw file_error(path, "tensor '" + t.src_name + "'" + where + " scale " + fmt_float(s) +
                                 " overflows the fp16 block scale");
    if (s != 0 && h == 0)
      throw file_error(path, "tensor '" + t.src_name + "'" + where + " scale " + fmt_float(s) +
                                 " underflows the fp16 block scale");
  }
  t.scales.clear();
  if (src_scales.size() == 1) {
    t.scales = src_scales;
  } else {
    for (uint64_t r = 0; r < t.rows; ++r) t.scales.push_back(src_scales[t.perm.empty() ? r : t.perm[r]]);
  }
}

void row_trits(const PlanTensor& t, const std::vector<float>& data, ScaleRule rule, uint64_t r,
               int8_t* trits) {
  const uint64_t src = t.perm.empty() ? r : t.perm[r];
  const float* row = &data[src * t.cols];
  if (rule == ScaleRule::Absmean) absmean_trits(row, t.cols, t.scales[0], trits);
  else sign_trits(row, t.cols, trits);
}

std::vector<uint8_t> encode_float(const PlanTensor& t, std::span<const float> values) {
  std::vector<uint8_t> out;
  if (const int group = group_size(t.type)) {  // analyze() found every group ternary, its scale fp16
    const uint64_t rows = values.size() / t.cols, rb = gguf::row_bytes(t.type, t.cols), G = t.cols / uint64_t(group);
    out.resize(rows * rb);
    std::vector<int8_t> trits(t.cols);
    std::vector<uint16_t> d(G);
    float a = 0, b = 0;
    for (uint64_t r = 0; r < rows; ++r) {
      const float* row = values.data() + r * t.cols;
      for (uint64_t g = 0; g < G; ++g)
        d[g] = f32_to_fp16(exact_row_scale(row + g * uint64_t(group), uint64_t(group), &a, &b).value_or(0.0f));
      sign_trits(row, t.cols, trits.data());
      pack_q2_group_row(trits.data(), int64_t(t.cols), group, d.data(), out.data() + r * rb);
    }
    return out;
  }
  if (t.type == TensorType::F32) {
    out.resize(values.size() * 4);
    std::memcpy(out.data(), values.data(), out.size());
    return out;
  }
  if (t.type == TensorType::Q8_0 || t.type == TensorType::Q6_K) {  // whole rows: for_each_chunk gives no less
    const uint64_t rows = values.size() / t.cols, rb = gguf::row_bytes(t.type, t.cols);
    out.resize(rows * rb);
    for (uint64_t r = 0; r < rows; ++r) {
      try {
        if (t.type == TensorType::Q8_0)
          quantize_q8_0_row(values.data() + r * t.cols, int64_t(t.cols),
                            reinterpret_cast<BlockQ8_0*>(out.data() + r * rb));
        else
          quantize_q6_k_row(values.data() + r * t.cols, int64_t(t.cols),
                            reinterpret_cast<BlockQ6_K*>(out.data() + r * rb));
      } catch (const Error& e) {
        throw file_error(t.src->file->path(), "tensor '" + t.src_name + "' chunk row " + std::to_string(r) +
                                                  ": " + e.what());
      }
    }
    return out;
  }
  out.resize(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    // Rounding to nearest: exact, as truncation, for values that came from BF16.
    const uint16_t h = t.type == TensorType::F16 ? f32_to_fp16(values[i]) : f32_to_bf16_rne(values[i]);
    std::memcpy(&out[2 * i], &h, 2);
  }
  return out;
}

PhaseQuantized phase_quantize_checked(const PackInputs& in, const PlanTensor& t, const std::vector<float>& data) {
  check_finite(t, data, 0);
  return phase_quantize(data.data(), int64_t(t.rows), int64_t(t.cols), in.phase_stages);
}

std::vector<uint8_t> encode_phase(const PackInputs& in, const PlanTensor& t, const std::vector<float>& data) {
  return phase_blocks(phase_quantize_checked(in, t, data));
}

std::vector<uint8_t> encode_ternary(const PlanTensor& t, const std::vector<float>& data, ScaleRule rule) {
  const uint64_t K = t.stored_cols(), rb = gguf::row_bytes(t.type, K);
  std::vector<uint8_t> out(rb * t.rows);
  std::vector<int8_t> trits(K, 0);
  if (const int group = group_size(t.type)) {
    const uint64_t G = K / uint64_t(group);
    std::vector<uint16_t> d(G);
    for (uint64_t r = 0; r < t.rows; ++r) {
      row_trits(t, data, rule, r, trits.data());
      for (uint64_t g = 0; g < G; ++g) d[g] = f32_to_fp16(t.scales[r * G + g]);
      pack_q2_group_row(trits.data(), int64_t(K), group, d.data(), &out[r * rb]);
    }
    return out;
  }
  for (uint64_t r = 0; r < t.rows; ++r) {
    row_trits(t, data, rule, r, trits.data());
    pack_ternary_row(t.type, trits.data(), static_cast<int64_t>(K), f32_to_fp16(t.row_scale(r)),
                     &out[r * rb]);
  }
  return out;
}

}  // namespace tern::pack
