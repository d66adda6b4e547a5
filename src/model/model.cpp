// Model loading: hyperparameters from GGUF metadata, tensors looked up by
// name with type and shape checks, exact row scales recovered for every
// ternary linear.
#include "tern/model.h"

#include <algorithm>
#include <array>
#include <tuple>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <string_view>

#include "kernel_choice.h"
#include "model_access.h"
#include "tern/error.h"
#include "tern/phase.h"
#include "tern/quant.h"
#include "tern/quant_group.h"

namespace tern {
namespace {

using gguf::TensorType;

// Heads in what the dense kernels multiply, or group-scaled (Ternary
// Bonsai's, on the group kernels); embeddings (a row per token) also in
// Q4_K, llama-quantize's default for them in TQ1_0/TQ2_0 files.
constexpr auto kHeadTypes = [] {
  std::array<TensorType, std::size(kDenseTypes) + 4> a{};
  std::copy(std::begin(kDenseTypes), std::end(kDenseTypes), a.begin());
  const TensorType group[] = {TensorType::PQ2_0, TensorType::Q2_0, TensorType::PTQ1_0, TensorType::Q1_0};
  std::copy(std::begin(group), std::end(group), a.end() - 4);
  return a;
}();
constexpr auto kEmbeddingTypes = [] {
  std::array<TensorType, std::size(kHeadTypes) + 1> a{};
  std::copy(std::begin(kHeadTypes), std::end(kHeadTypes), a.begin());
  a.back() = TensorType::Q4_K;
  return a;
}();
constexpr std::array kF32{TensorType::F32};
constexpr std::array kTernaryTypes{TensorType::TQ2_0, TensorType::TQ1_0, TensorType::I2_S};
constexpr std::array kPhaseTypes{TensorType::FAIRY2I};

int hparam(const gguf::File& f, const std::string& key, int lo, int hi) {
  const uint64_t v = f.get(key).as_uint(key);
  if (v < uint64_t(lo) || v > uint64_t(hi))
    throw file_error(f.path(), key + " = " + std::to_string(v) + " is out of range [" +
                                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return int(v);
}

int hparam_or(const gguf::File& f, const std::string& key, int lo, int hi, int def) {
  return f.find(key) ? hparam(f, key, lo, hi) : def;
}

float fparam_or(const gguf::File& f, const std::string& key, float def) {
  const gguf::Value* v = f.find(key);
  return v ? float(v->as_float(key)) : def;
}

// llama.cpp's rope.scaling keys. YaRN only: other kinds (linear, longrope)
// and YaRN variants tern does not compute (an attention factor of its
// own, DeepSeek's log multiplier) are refused rather than run wrong.
ops::Yarn read_yarn(const gguf::File& f, const std::string& p, int context_length) {
  ops::Yarn y;
  const gguf::Value* type = f.find(p + "rope.scaling.type");
  const std::string t = type ? type->as_string(p + "rope.scaling.type") : "none";
  if (t == "none") return y;
  if (t != "yarn") throw file_error(f.path(), p + "rope.scaling.type '" + t + "' is not supported (tern runs yarn)");
  if (fparam_or(f, p + "rope.scaling.attn_factor", 1) != 1 || fparam_or(f, p + "rope.scaling.yarn_log_multiplier", 0) != 0)
    throw file_error(f.path(), p + "rope.scaling: an attn_factor or yarn_log_multiplier of its own is not supported");
  y.factor = fparam_or(f, p + "rope.scaling.factor", 0);
  y.orig_ctx = hparam_or(f, p + "rope.scaling.original_context_length", 1, 1 << 24, context_length);
  y.beta_fast = fparam_or(f, p + "rope.scaling.yarn_beta_fast", 32);
  y.beta_slow = fparam_or(f, p + "rope.scaling.yarn_beta_slow", 1);
  if (!(y.factor >= 1) || !std::isfinite(y.factor) || !(y.beta_slow > 0) || !(y.beta_fast >= y.beta_slow) ||
      !std::isfinite(y.beta_fast))
    throw file_error(f.path(), p + "rope.scaling: yarn needs factor >= 1 and beta_fast >= beta_slow > 0");
  return y;
}

// Heads, head size and RoPE base of architecture prefix p (e.g. "llama.").
void read_attention(const gguf::File& f, const std::string& p, Config& c) {
  c.n_heads = hparam(f, p + "attention.head_count", 1, 1024);
  c.n_kv_heads = hparam_or(f, p + "attention.head_count_kv", 1, c.n_heads, c.n_heads);
  // llama.cpp's head size is attention.key_length (Qwen3-4B: 128 with 32
  // heads over 2560); older files state only rope.dimension_count.
  const int rot = hparam_or(f, p + "rope.dimension_count", 2, 1 << 12, 0);
  c.head_dim = hparam_or(f, p + "attention.key_length", 2, 1 << 12, rot ? rot : c.dim / c.n_heads);
  if (rot && rot != c.head_dim)
    throw file_error(f.path(), p + "rope.dimension_count " + std::to_string(rot) + " is not the head size " +
                                   std::to_string(c.head_dim) + " (tern rotates whole heads)");
  if (hparam_or(f, p + "attention.value_length", 2, 1 << 12, c.head_dim) != c.head_dim)
    throw file_error(f.path(), p + "attention.value_length differs from attention.key_length");
  if (c.n_heads % c.n_kv_heads != 0)
    throw file_error(f.path(), "head_count " + std::to_string(c.n_heads) +
                                   " is not a multiple of head_count_kv " +
                                   std::to_string(c.n_kv_heads));
  if (c.head_dim % 2 != 0)
    throw file_error(f.path(), "head dimension " + std::to_string(c.head_dim) + " is odd");
  c.rope_theta = fparam_or(f, p + "rope.freq_base", 10000.0f);
  c.norm_eps = fparam_or(f, p + "attention.layer_norm_rms_epsilon", 1e-5f);
  if (!(c.rope_theta > 0) || !(c.norm_eps > 0) || !std::isfinite(c.rope_theta) || !std::isfinite(c.norm_eps))
    throw file_error(f.path(), "rope.freq_base and layer_norm_rms_epsilon must be positive and finite (they are " +
                                   std::to_string(c.rope_theta) + " and " + std::to_string(c.norm_eps) + ")");
}

// What the hyperparameters cannot show but would make the file run wrong.
void check_layout(const gguf::File& f, const Config& c) {
  // PrismML's Hadamard-rotated files (Ternary Bonsai 27B) store weights in a
  // rotated basis that each activation must be turned into first; read as
  // plain weights they would load and write nonsense.
  for (const auto& [key, value] : f.metadata())
    if (key.rfind("prism.hadamard", 0) == 0)
      throw file_error(f.path(), "has Hadamard-rotated weights (" + key +
                                     "), which tern does not run yet (Ternary Bonsai 27B's layout)");
  // A block_count below the file's layers would silently drop the rest.
  for (const gguf::TensorInfo& t : f.tensors()) {
    int layer = -1;
    if (std::sscanf(t.name.c_str(), "blk.%d.", &layer) == 1 && layer >= c.n_layers)
      throw file_error(f.path(), "tensor '" + t.name + "' is past block_count " +
                                     std::to_string(c.n_layers));
  }
}

// The family's fixed choices, and tern's own keys that may override them.
void read_family_choices(const gguf::File& f, Config& c) {
  c.ffn_act = c.family->ffn_act;
  c.rope = c.family->rope;
  c.sub_norms = c.family->has_sub_norms();
  c.qk_norms = c.family->has_qk_norms();
  c.phase = c.family->phase_linears;
  if (const gguf::Value* eps = f.find("tern.linear_norm_eps")) {
    c.linear_norm_eps = float(eps->as_float("tern.linear_norm_eps"));
    if (!(c.linear_norm_eps > 0) || !std::isfinite(c.linear_norm_eps))
      throw file_error(f.path(), "tern.linear_norm_eps must be positive");
  }
  const gguf::Value* mode = f.find("tern.activation_mode");
  const std::string m = mode ? mode->as_string("tern.activation_mode")
                             : c.family->int8_activations ? "int8" : "float";
  if (m == "int8") c.act_mode = ActMode::Int8;
  else if (m == "float") c.act_mode = ActMode::Float;
  else throw file_error(f.path(), "tern.activation_mode '" + m + "' is not int8 or float");
}

Config read_config(const gguf::File& f) {
  const std::string arch = f.get("general.architecture").as_string("general.architecture");
  Config c;
  c.family = family_by_gguf_arch(arch);
  if (!c.family)
    throw file_error(f.path(), "unsupported architecture '" + arch + "' (tern runs " +
                                   supported_gguf_archs() + ")");
  const std::string p = arch + ".";
  c.dim = hparam(f, p + "embedding_length", 1, 1 << 16);
  c.hidden_dim = hparam(f, p + "feed_forward_length", 1, 1 << 18);
  c.n_layers = hparam(f, p + "block_count", 1, 1024);
  c.context_length = hparam(f, p + "context_length", 1, 1 << 24);
  read_attention(f, p, c);
  c.yarn = read_yarn(f, p, c.context_length);
  check_layout(f, c);
  c.rope_table = ops::rope_table(c.head_dim, c.rope_theta, c.yarn);
  read_family_choices(f, c);
  return c;
}

FloatMatrix float_matrix(const gguf::File& f, const std::string& name, int64_t rows, int64_t cols,
                         std::span<const TensorType> types = kHeadTypes) {
  const std::array<uint64_t, 2> dims{uint64_t(cols), uint64_t(rows)};
  const gguf::TensorInfo& t = f.tensor(name, types, dims);
  return FloatMatrix{{t.type, rows, cols, t.data}};
}

const float* norm_vector(const gguf::File& f, const std::string& name, int n) {
  const std::array<uint64_t, 1> dims{uint64_t(n)};
  const gguf::TensorInfo& t = f.tensor(name, kF32, dims);
  if (reinterpret_cast<uintptr_t>(t.data) % alignof(float) != 0)
    throw file_error(f.path(), "tensor '" + name + "' is not 4-byte aligned");
  if (const int64_t i = find_nonfinite(t.type, t.data, n); i >= 0)
    throw file_error(f.path(), "tensor '" + name + "' element " + std::to_string(i) + " is not finite (NaN or infinity)");
  return reinterpret_cast<const float*>(t.data);
}

// Throws, naming the file, tensor and row, if row r of m holds a NaN or an
// infinity.
void check_row_finite(const std::string& path, const char* name, const FloatMatrix& m, int64_t r) {
  const int64_t rb = int64_t(gguf::row_bytes(m.type, uint64_t(m.cols)));
  if (find_nonfinite(m.type, static_cast<const uint8_t*>(m.data) + r * rb, m.cols) >= 0)
    throw file_error(path, "tensor '" + std::string(name) + "' row " + std::to_string(r) +
                               " holds a value that is not finite (NaN or infinity)");
}

// Row scales: the exact f32 values tern stored in metadata, checked against
// the fp16 block scales llama.cpp reads; or, for files written elsewhere,
// recovered from the block scales (one nonzero value per row).
std::vector<float> row_scales(const gguf::File& f, const std::string& name,
                              const TernaryMatrix& w) {
  const int64_t nb = w.cols / QK;
  const uint64_t rb = gguf::row_bytes(w.type, uint64_t(w.cols));
  std::vector<uint16_t> d(static_cast<size_t>(nb));
  std::vector<float> scales(static_cast<size_t>(w.rows));
  const std::string key = "tern.scale." + name;
  const gguf::Value* stored = f.find(key);
  std::vector<float> exact;
  if (stored) {
    exact = stored->as_f32_array(key);
    if (exact.size() != 1 && exact.size() != size_t(w.rows))
      throw file_error(f.path(), key + " has " + std::to_string(exact.size()) +
                                     " values, expected 1 or " + std::to_string(w.rows));
  }
  for (int64_t r = 0; r < w.rows; ++r) {
    // Code 3 is no trit; kernels would disagree on it, so the file is refused.
    if (w.type == TensorType::TQ2_0) {
      const int64_t col = find_invalid_tq2_code(w.data + r * rb, w.cols);
      if (col >= 0)
        throw file_error(f.path(), "tensor '" + name + "' row " + std::to_string(r) +
                                       " column " + std::to_string(col) +
                                       " holds TQ2_0 code 3, which is not a ternary value");
    }
    row_block_scales(w.type, w.data + r * rb, w.cols, d.data());
    if (stored) {
      const float s = exact.size() == 1 ? exact[0] : exact[size_t(r)];
      if (!std::isfinite(s))
        throw file_error(f.path(), key + " row " + std::to_string(r) + " is not finite (" + std::to_string(s) + ")");
      const uint16_t h = f32_to_fp16(s);
      for (int64_t b = 0; b < nb; ++b)
        if (d[size_t(b)] != h && d[size_t(b)] != 0)
          throw file_error(f.path(), "tensor '" + name + "' row " + std::to_string(r) +
                                         " block scale disagrees with " + key);
      scales[size_t(r)] = s;
      continue;
    }
    uint16_t h = 0;
    for (int64_t b = 0; b < nb; ++b) {
      if (d[size_t(b)] == 0) continue;
      if (h != 0 && d[size_t(b)] != h)
        throw file_error(f.path(), "tensor '" + name + "' row " + std::to_string(r) +
                                       " has different block scales; tern needs one scale per row");
      h = d[size_t(b)];
    }
    if (find_nonfinite(TensorType::F16, reinterpret_cast<const uint8_t*>(&h), 1) >= 0)
      throw file_error(f.path(), "tensor '" + name + "' row " + std::to_string(r) + " has a block scale that is not finite");
    scales[size_t(r)] = fp16_to_f32(h);
  }
  return scales;
}

// bitnet.cpp's I2_S becomes TQ2_0 at load: the same trits, the tensor's
// f32 scale as every row's exact scale. Lossless, and every kernel runs it.
// bitnet.cpp flattens the tensor into 128-weight blocks, so a row is whole
// blocks only when its width is a multiple of 128 (it writes others, and
// its kernels then drop each row's tail). A width of whole 128-blocks that
// is not whole TQ2_0 blocks (a 2B-4T-layout FFN of 384) is padded with
// zero trits to padded_cols, as tern's own packs of such widths are.
Linear load_i2s(const gguf::File& f, const std::string& name, const gguf::TensorInfo& t,
                int64_t rows, int64_t cols) {
  // cols is the tensor's dims[0] (checked by f.tensor), which the reader
  // requires to be whole I2_S blocks of 128.
  float scale;
  std::memcpy(&scale, t.data + rows * cols / 4, sizeof scale);
  if (!std::isfinite(scale) || scale < 0)
    throw file_error(f.path(), "tensor '" + name + "' has I2_S scale " + std::to_string(scale));
  Linear l;
  const int64_t stored = padded_cols(cols);
  const int64_t rb = ternary_row_bytes(TensorType::TQ2_0, stored);
  l.converted.resize(size_t(rows * rb));
  std::vector<int8_t> trits(static_cast<size_t>(stored), 0);  // [stored], the tail stays 0
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t bad = unpack_i2s_row(t.data + r * cols / 4, cols, trits.data());
    if (bad >= 0)
      throw file_error(f.path(), "tensor '" + name + "' row " + std::to_string(r) + " column " +
                                     std::to_string(bad) +
                                     " holds I2_S code 3, which is not a ternary value");
    pack_tq2_row(trits.data(), stored, f32_to_fp16(scale),
                 reinterpret_cast<BlockTQ2*>(l.converted.data() + r * rb));
  }
  l.scales.assign(size_t(rows), scale);
  l.w = TernaryMatrix{TensorType::TQ2_0, rows, stored, l.converted.data(), l.scales.data(), nullptr};
  // The I2_S bytes are never read again; without this they would stay
  // resident next to their copy (+0.5 GiB for BitNet 2B-4T).
  f.release(t);
  return l;
}

// A group-scaled linear: PQ2_0, or Q2_0 in either block size, read in
// place; PTQ1_0 and Q1_0 converted to PQ2_0 (exactly: the same codes and
// scales), so every kernel set runs them. Every code runs exactly (3 is
// +2d), so only the scales are checked: a NaN or infinite d would turn its
// rows into NaN logits. `release`: the file's bytes are not read again
// (not so for a tied head, whose rows the embedding still looks up).
Linear load_group(const gguf::File& f, const std::string& name, const gguf::TensorInfo& t, int64_t rows,
                  int64_t cols, bool release) {
  const bool convert = converts_to_pq2_0(t.type);
  const TensorType type = convert ? TensorType::PQ2_0 : t.type;
  const int group = group_size(type);
  const int64_t rb = int64_t(gguf::row_bytes(t.type, uint64_t(cols)));
  for (int64_t r = 0; r < rows; ++r)
    if (const int64_t k = find_nonfinite(t.type, t.data + r * rb, cols); k >= 0)
      throw file_error(f.path(), "tensor '" + name + "' row " + std::to_string(r) + " group " +
                                     std::to_string(k / group) + " has a scale that is not finite");
  Linear l;
  if (convert) {
    const int64_t out_rb = int64_t(gguf::row_bytes(type, uint64_t(cols)));
    l.converted.resize(size_t(rows * out_rb));
    for (int64_t r = 0; r < rows; ++r) convert_row_to_pq2_0(t.type, t.data + r * rb, cols, l.converted.data() + r * out_rb);
    if (release) f.release(t);
  }
  l.group = GroupMatrix{type, rows, cols, group, convert ? l.converted.data() : t.data};
  return l;
}

// A linear of logical width `cols`. TQ1_0/TQ2_0 rows hold whole blocks, so
// when cols is not a multiple of QK (1bitLLM 3B: 3200, 8640) the file holds
// padded_cols(cols) columns, the extra ones zero; the forward pass pads the
// activation with zeros to match, which keeps every product exact.
// `prepare`, if given, makes the kernel's layout before the rows are
// checked: the repack reads every stored byte from memory, and the checks
// after it (each block's scale, and each code for TQ2_0) then find the
// matrix in the cache, one pass over the file's bytes at load instead of
// two. Kernels take unchecked codes by contract (code 3 counts as +2).
Linear load_linear(const gguf::File& f, const std::string& name, int64_t rows, int64_t cols,
                   const std::function<void(Linear&)>& prepare = {}) {
  const gguf::TensorInfo* found = f.find_tensor(name);
  if (found && (found->type == TensorType::IQ1_BN || found->type == TensorType::IQ2_BN))
    throw file_error(f.path(), "tensor '" + name + "' is ik_llama.cpp's " + gguf::traits(found->type).name +
                                   ", which tern does not read (TQ1_0, TQ2_0 and I2_S are ternary types it runs)");
  if (found && (is_group_type(found->type) || converts_to_pq2_0(found->type))) {
    const std::array<uint64_t, 2> dims{uint64_t(cols), uint64_t(rows)};
    const TensorType types[] = {found->type};
    return load_group(f, name, f.tensor(name, types, dims), rows, cols, true);
  }
  const bool i2s = found && found->type == TensorType::I2_S;  // stores the logical width
  const int64_t stored = i2s ? cols : padded_cols(cols);
  const std::array<uint64_t, 2> dims{uint64_t(stored), uint64_t(rows)};
  const gguf::TensorInfo& t = f.tensor(name, kTernaryTypes, dims);
  if (i2s) {
    Linear l = load_i2s(f, name, t, rows, cols);
    if (prepare) prepare(l);
    return l;
  }
  Linear l;
  l.w = TernaryMatrix{t.type, rows, stored, t.data, nullptr, nullptr};
  if (prepare) prepare(l);
  l.scales = row_scales(f, name, l.w);
  l.w.row_scale = l.scales.data();
  return l;
}

// A Fairy2i linear (include/tern/phase.h): dims [2 * phase_cols(cols / 2),
// rows, stages], its stages x 4 scales in tern.scale.<name>. Every bit
// pattern is a valid code, so only the scales need checking.
Linear load_phase(const gguf::File& f, const std::string& name, int64_t rows, int64_t cols) {
  if (rows % 2 || cols % 2)
    throw file_error(f.path(), "tensor '" + name + "' is " + std::to_string(rows) + " x " + std::to_string(cols) +
                                   "; a Fairy2i linear needs even sides");
  const uint64_t pc = uint64_t(phase_cols(cols / 2));
  const gguf::TensorInfo* found = f.find_tensor(name);
  const uint64_t stages = found && found->dims.size() == 3 ? found->dims[2] : 2;
  if (stages < 1 || stages > uint64_t(kMaxPhaseStages))
    throw file_error(f.path(), "tensor '" + name + "' has " + std::to_string(stages) + " stages, expected 1 to " +
                                   std::to_string(kMaxPhaseStages));
  const std::array<uint64_t, 3> dims{2 * pc, uint64_t(rows), stages};
  const gguf::TensorInfo& t = f.tensor(name, kPhaseTypes, dims);
  const std::string key = "tern.scale." + name;
  const gguf::Value* stored = f.find(key);
  if (!stored) throw file_error(f.path(), "missing key " + key + " (the scales of Fairy2i tensor '" + name + "')");
  Linear l;
  l.scales = stored->as_f32_array(key);
  if (l.scales.size() != 4 * stages)
    throw file_error(f.path(), key + " has " + std::to_string(l.scales.size()) + " values, expected " +
                                   std::to_string(4 * stages) + " (4 per stage)");
  for (size_t i = 0; i < l.scales.size(); ++i)
    if (!std::isfinite(l.scales[i]) || !(l.scales[i] > 0))
      throw file_error(f.path(), key + "[" + std::to_string(i) + "] is " + std::to_string(l.scales[i]) +
                                     ", not a positive finite scale");
  l.phase = PhaseMatrix{rows / 2, int64_t(pc), int(stages), t.data, l.scales.data()};
  return l;
}

int64_t phase_bytes(const PhaseMatrix& p) {
  return p.stages * p.rows * (p.cols / kPhaseBlock) * int64_t(sizeof(BlockPhase)) + 4 * p.stages * int64_t(sizeof(float));
}

}  // namespace

void FloatMatrix::row(int64_t r, float* out) const {
  const uint8_t* p = static_cast<const uint8_t*>(data) + r * int64_t(gguf::row_bytes(type, uint64_t(cols)));
  switch (type) {
    case gguf::TensorType::F32:
      std::memcpy(out, p, size_t(cols) * sizeof(float));
      return;
    case gguf::TensorType::Q8_0:
      for (int64_t i = 0; i < cols; ++i) out[i] = q8_0_value(reinterpret_cast<const BlockQ8_0*>(p), i);
      return;
    case gguf::TensorType::PQ2_0:
    case gguf::TensorType::Q2_0:
      dequantize_q2_group_row(p, cols, group_size(type), out);
      return;
    case gguf::TensorType::PTQ1_0:
    case gguf::TensorType::Q1_0: {
      std::vector<uint8_t> pq(size_t(gguf::row_bytes(gguf::TensorType::PQ2_0, uint64_t(cols))));  // [cols / 128] blocks
      convert_row_to_pq2_0(type, p, cols, pq.data());
      dequantize_q2_group_row(pq.data(), cols, 128, out);
      return;
    }
    case gguf::TensorType::Q6_K:
      dequantize_q6_k_row(reinterpret_cast<const BlockQ6_K*>(p), cols, out);
      return;
    case gguf::TensorType::Q4_K:
      dequantize_q4_k_row(reinterpret_cast<const BlockQ4_K*>(p), cols, out);
      return;
    default:
      break;
  }
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  if (type == gguf::TensorType::BF16)
    for (int64_t i = 0; i < cols; ++i) out[i] = bf16_to_f32(h[i]);
  else
    for (int64_t i = 0; i < cols; ++i) out[i] = fp16_to_f32(h[i]);
}

void Model::load_layer(int l) {
  const gguf::File& f = file_;
  const Config& c = config_;
  const std::string p = "blk." + std::to_string(l) + ".";
  LayerWeights& L = weights_.layers[size_t(l)];
  // The kernel set of each matrix (the one chosen for its shape, if any),
  // and its layout. A prepared kernel reads only its own layout, so the
  // stored bytes are let go once copied (after the checks, which read
  // them): file pages released, an I2_S repack freed. Otherwise both
  // copies would stay resident.
  const auto prepare = [&](Linear& lin) {
    lin.kernels = kernels_;
    if (lin.group.data) return;
    for (const KernelChoice& k : choices_)
      if (k.fits(lin.w)) lin.kernels = k.chosen;
    if (lin.kernels->prepare) {
      lin.packed = lin.kernels->prepare(lin.w);
      lin.w.packed = lin.packed.get();
    }
  };
  const auto load = [&](const std::string& name, int64_t rows, int64_t cols, int width) {
    Linear lin = c.phase ? load_phase(f, p + name + ".weight", rows, cols)
                         : load_linear(f, p + name + ".weight", rows, cols, prepare);
    if (c.phase) lin.kernels = kernels_;
    if (c.linear_norm_eps > 0) lin.in_norm = norm_vector(f, p + name + ".rms_norm.weight", width);
    if (lin.group.data) lin.kernels = kernels_;
    if (!lin.packed) return lin;  // read in place, or Fairy2i, or group-scaled
    if (lin.converted.empty()) {
      f.release(*f.find_tensor(p + name + ".weight"));
    } else {
      std::vector<uint8_t>().swap(lin.converted);
      lin.w.data = nullptr;
    }
    return lin;
  };
  L.attn_norm = norm_vector(f, p + "attn_norm.weight", c.dim);
  L.wq = load("attn_q", c.q_dim(), c.dim, c.dim);
  L.wk = load("attn_k", c.kv_dim(), c.dim, c.dim);
  L.wv = load("attn_v", c.kv_dim(), c.dim, c.dim);
  if (c.qk_norms) {
    L.attn_q_norm = norm_vector(f, p + "attn_q_norm.weight", c.head_dim);
    L.attn_k_norm = norm_vector(f, p + "attn_k_norm.weight", c.head_dim);
  }
  if (c.sub_norms) L.attn_sub_norm = norm_vector(f, p + "attn_sub_norm.weight", c.q_dim());
  L.wo = load("attn_output", c.dim, c.q_dim(), c.q_dim());
  L.ffn_norm = norm_vector(f, p + "ffn_norm.weight", c.dim);
  L.w_gate = load("ffn_gate", c.hidden_dim, c.dim, c.dim);
  L.w_up = load("ffn_up", c.hidden_dim, c.dim, c.dim);
  if (c.sub_norms) L.ffn_sub_norm = norm_vector(f, p + "ffn_sub_norm.weight", c.hidden_dim);
  L.w_down = load("ffn_down", c.dim, c.hidden_dim, c.hidden_dim);
}

void Model::choose_kernels() {
  const Config& c = config_;
  // Sets that decode with one loop time alike: the first of them (best
  // first, so the one with tiles for prompts) stands for all.
  const auto loop = [](const KernelSet* k) { return std::string_view(k->decodes_as ? k->decodes_as : k->name); };
  std::vector<const KernelSet*> candidates;
  for (const KernelSet* k : all_kernel_sets())
    if (k->available(cpu_features()) && kernel_supports(*k, ActMode::Int8) &&
        std::none_of(candidates.begin(), candidates.end(), [&](const KernelSet* c) { return loop(c) == loop(k); }))
      candidates.push_back(k);
  // The scalar oracle never beats a vector set; it is timed only when alone.
  if (candidates.size() > 1 && candidates.back() == &scalar_kernels()) candidates.pop_back();
  const std::tuple<const char*, int, int> shapes[] = {
      {"attn_q", c.q_dim(), c.dim},      {"attn_k", c.kv_dim(), c.dim},      {"attn_v", c.kv_dim(), c.dim},
      {"attn_output", c.dim, c.q_dim()}, {"ffn_gate", c.hidden_dim, c.dim}, {"ffn_up", c.hidden_dim, c.dim},
      {"ffn_down", c.dim, c.hidden_dim}};
  std::vector<Linear> distinct;  // layer 0's linears, one per shape
  for (auto [name, rows, cols] : shapes) {
    Linear l = load_linear(file_, std::string("blk.0.") + name + ".weight", rows, cols);
    if (l.group.data) continue;  // group-scaled: one kernel (kernels.h GroupGemmI8), nothing to time
    const bool seen = std::any_of(distinct.begin(), distinct.end(), [&](const Linear& d) {
      return d.w.type == l.w.type && d.w.rows == l.w.rows && d.w.cols == l.w.cols;
    });
    if (!seen) distinct.push_back(std::move(l));  // a move keeps w pointing into its vectors
  }
  if (distinct.empty()) return;
  std::vector<TernaryMatrix> ws;
  for (const Linear& l : distinct) ws.push_back(l.w);
  // At least three cold calls per candidate (more for short calls and close
  // ones: kernel_choice.cpp), two of a prompt batch for the sets that tie.
  choices_ = time_kernels(ws, digits_ == 1 ? 1 : 2, candidates, 3);
}

namespace {

template <class Fn>
void for_each_linear(const Weights& w, Fn fn) {
  for (const LayerWeights& L : w.layers)
    for (const Linear* l : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) fn(*l);
}

int64_t norm_floats(const Config& c) {
  const int64_t per_layer = 2 * int64_t(c.dim) + (c.sub_norms ? c.q_dim() + c.hidden_dim : 0) +
                            (c.qk_norms ? 2 * c.head_dim : 0) +
                            (c.linear_norm_eps > 0 ? 5 * int64_t(c.dim) + c.q_dim() + c.hidden_dim : 0);
  return c.n_layers * per_layer + c.dim;
}

}  // namespace

int64_t Model::n_params() const {
  const Config& c = config_;
  int64_t n = int64_t(c.vocab_size) * c.dim * (c.tied_output ? 1 : 2) + norm_floats(c);
  const int64_t per_layer = int64_t(c.dim) * (2 * c.q_dim() + 2 * c.kv_dim()) +
                            3 * int64_t(c.dim) * c.hidden_dim;
  return n + c.n_layers * per_layer;
}

int64_t Model::bytes_per_token() const {
  const Config& c = config_;
  int64_t bytes = norm_floats(c) * int64_t(sizeof(float));
  const FloatMatrix& h = weights_.output;
  const GroupMatrix& hg = weights_.output_group.group;  // what a group-typed head reads
  bytes += c.phase ? phase_bytes(weights_.output_phase.phase)
           : hg.data ? hg.rows * int64_t(gguf::row_bytes(hg.type, uint64_t(hg.cols)))
                     : h.rows * dense_row_bytes(h.type, h.cols);
  for_each_linear(weights_, [&](const Linear& l) {
    bytes += l.phase.data ? phase_bytes(l.phase)
           : l.group.data ? l.group.rows * int64_t(gguf::row_bytes(l.group.type, uint64_t(l.group.cols)))
           : l.w.packed ? l.kernels->prepared_bytes(l.w)
                        : l.w.rows * ternary_row_bytes(l.w.type, l.w.cols) + l.w.rows * int64_t(sizeof(float));
  });
  return bytes;
}

Model::Model(gguf::File f) : file_(std::move(f)) {}

FloatMatrix Model::head() const {
  FloatMatrix h = weights_.output;
  h.data = head_data_.load(std::memory_order_acquire);
  return h;
}

// A NaN embedding row or head row would turn into plausible-looking text,
// so every row the forward pass reads is checked; none at load, where a
// scan of the head (more than half of BitNet 2B-4T's file) was a pass over
// the file of its own before the first token read it again.
void ModelAccess::embed(const Model& m, int32_t token, float* out) {
  FloatMatrix e = m.weights_.token_embd;
  if (m.config_.tied_output) e.data = m.head_data_.load(std::memory_order_acquire);
  check_row_finite(m.file_.path(), "token_embd.weight", e, token);
  e.row(token, out);
}

// A non-finite value in a head row makes that row's product non-finite
// whatever the activations (NaN propagates, infinity times zero is NaN, a
// sum with an infinity stays infinite or NaN; every dense kernel is tested
// for it), so a product whose logits are all finite clears every row. A
// non-finite logit's row is read again, to tell a bad file from a finite
// row whose product overflowed. Two contexts may both check; either
// marks it done.
void ModelAccess::after_head_product(const Model& m, const float* logits) {
  if (m.head_checked_.load(std::memory_order_acquire)) return;
  const char* name = m.config_.tied_output ? "token_embd.weight" : "output.weight";
  const FloatMatrix h = m.head();
  for (int64_t r = 0; r < h.rows; ++r)
    if (!std::isfinite(logits[r])) check_row_finite(m.file_.path(), name, h, r);
  m.head_checked_.store(true, std::memory_order_release);
}

// The head is the largest stream of a token (656 MB of BF16 at BitNet
// 2B-4T's shape, more than all its ternary layers) and the one stream the
// load does not copy. Read through the file's mapping it sits on whatever
// pages the page cache holds, 4 KiB ones after a plain `cat` or read, where
// the hardware prefetchers stop at every page and each page costs a TLB
// walk (git show d2934d8:docs/PERFORMANCE.md,
// "Time to first token in one read, and the head on huge pages"). So once the first product
// has checked it (and the first token is out: the copy would only delay
// it), the head is copied onto huge pages, in parallel, and its file pages
// let go. Without the memory for the copy, it stays where it is. Another
// context reading the head meanwhile reads the mapping, whose released
// pages fault back in from the file with the same bytes.
void ModelAccess::before_step(const Model& m, ThreadPool& pool) {
  if (!m.head_checked_.load(std::memory_order_acquire) || m.head_move_claimed_.load(std::memory_order_relaxed) ||
      m.head_move_claimed_.exchange(true, std::memory_order_acq_rel))
    return;
  const FloatMatrix& h = m.weights_.output;
  const int64_t rb = int64_t(gguf::row_bytes(h.type, uint64_t(h.cols)));
  const size_t bytes = size_t(h.rows * rb);
  AlignedBuffer copy;
  try {
    copy = alloc_aligned(bytes, "the output head");
  } catch (const Error&) {
    return;
  }
  const auto* src = static_cast<const uint8_t*>(h.data);
  const int64_t chunk = std::max<int64_t>(1, int64_t(kHugePageBytes) / std::max<int64_t>(rb, 1));
  pool.run([&](int) {
    pool.for_chunks(h.rows, chunk, [&](int64_t r0, int64_t r1) {
      std::memcpy(copy.get() + r0 * rb, src + r0 * rb, size_t((r1 - r0) * rb));
      // Chunk by chunk, so the two copies are never both resident (+1 GB at
      // Llama3-8B's shape); the pages two chunks share go below.
      m.file_.release(src + r0 * rb, uint64_t((r1 - r0) * rb));
    });
  });
  m.file_.release(src, bytes);
  m.head_copy_ = std::move(copy);
  m.head_data_.store(m.head_copy_.get(), std::memory_order_release);
}

Model::~Model() = default;

void Model::choose_activations(const LoadOptions& opts) {
  const Config& c = config_;
  // Int16 activations are int8 digits: the float model runs on int8 kernels.
  const bool float_model = c.act_mode == ActMode::Float;
  const FloatActs fa = opts.float_acts.value_or(c.family->exact_float_acts ? FloatActs::Exact : FloatActs::Int16);
  digits_ = !float_model ? 1 : fa == FloatActs::Int16 ? kMaxActDigits : fa == FloatActs::Int8 ? 1 : 0;
  kernels_ = &select_kernels(opts.kernel, digits_ ? ActMode::Int8 : ActMode::Float, c.phase,
                             float_model && digits_
                                 ? "this float-activation model runs its int16 or int8 activations on "
                                   "int8 kernels; --float-act f32 runs its float path"
                                 : "");
  if (opts.kernel == "auto" && digits_ && !c.phase) choose_kernels();
}

void Model::load_embeddings() {
  const gguf::File& f = file_;
  Config& c = config_;
  const gguf::TensorInfo* emb = f.find_tensor("token_embd.weight");
  if (!emb) throw file_error(f.path(), "missing tensor 'token_embd.weight'");
  if (emb->dims.size() != 2 || emb->dims[1] > (1u << 24))
    throw file_error(f.path(), "tensor 'token_embd.weight' has shape " + emb->shape_string() +
                                   ", expected [" + std::to_string(c.dim) + ", n_vocab]");
  c.vocab_size = int(emb->dims[1]);
  weights_.token_embd = float_matrix(f, "token_embd.weight", c.vocab_size, c.dim, kEmbeddingTypes);
}

// Layers load in parallel: checking every row's codes and scales, and a
// kernel's repack, touch every weight byte, so a serial load of a 2B model
// took seconds. An error in any layer is kept and the lowest layer's is
// thrown, so a bad file reports the same problem on any run.
void Model::load_layers(int threads) {
  Config& c = config_;
  weights_.layers.resize(size_t(c.n_layers));
  std::vector<std::exception_ptr> errors(size_t(c.n_layers));
  ThreadPool pool(threads);
  pool.run([&](int) {
    pool.for_chunks(c.n_layers, 1, [&](int64_t l, int64_t) {
      try {
        load_layer(int(l));
      } catch (...) {
        errors[size_t(l)] = std::current_exception();
      }
    });
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  const Linear& q0 = weights_.layers[0].wq;
  c.weight_type = c.phase ? TensorType::FAIRY2I : q0.group.data ? q0.group.type : q0.w.type;
}

void Model::load_head() {
  const gguf::File& f = file_;
  Config& c = config_;
  Weights& w = weights_;
  w.output_norm = norm_vector(f, "output_norm.weight", c.dim);
  c.tied_output = !c.phase && f.find_tensor("output.weight") == nullptr;
  if (c.phase) w.output_phase = load_phase(f, "output.weight", c.vocab_size, c.dim);
  else w.output = c.tied_output ? w.token_embd : float_matrix(f, "output.weight", c.vocab_size, c.dim);
  // A group-scaled head runs on the group kernels as a linear, its every
  // scale checked now (load_group), in place: there is no dense stream to
  // move onto huge pages.
  const bool group_head = is_group_type(w.output.type) || converts_to_pq2_0(w.output.type);
  if (group_head) {
    const char* name = c.tied_output ? "token_embd.weight" : "output.weight";
    w.output_group = load_group(f, name, *f.find_tensor(name), c.vocab_size, c.dim, !c.tied_output);
    w.output_group.kernels = kernels_;
    head_checked_.store(true, std::memory_order_release);
  }
  if (c.tied_output && w.token_embd.type == TensorType::Q4_K)
    throw file_error(f.path(), "tensor 'token_embd.weight' is Q4_K and, with no 'output.weight', also the output head; "
                               "tern multiplies heads in " + dense_type_names());
  head_data_.store(w.output.data, std::memory_order_release);
  head_move_claimed_.store(!f.mapped() || c.phase || group_head, std::memory_order_release);
}

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& opts) {
  std::unique_ptr<Model> m(new Model(gguf::File::open(path, opts.use_mmap)));
  m->config_ = read_config(m->file_);
  m->choose_activations(opts);
  m->load_embeddings();
  m->load_layers(opts.threads);
  m->load_head();
  return m;
}

}  // namespace tern
