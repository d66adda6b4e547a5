// Packer: HF checkpoint of a family (tern/family.h) -> GGUF. ARCH below is
// the family's GGUF architecture: llama, bitnet (1bitLLM, as llama.cpp names
// it), bitnet-b1.58 (BitNet 2B-4T, as bitnet.cpp names it) or qwen3. Every
// key the packer writes:
//
// Standard keys (llama.cpp / bitnet.cpp read them for that architecture):
//   general.architecture                  string  ARCH
//   general.name                          string  basename of the input directory
//   general.file_type                     u32     llama.h's LLAMA_FTYPE_MOSTLY_*: 36 TQ1_0, 37 TQ2_0,
//                                                 41 Q2_0, 141 PQ2_0 (PrismML's fork)
//   general.quantization_version          u32     2
//   ARCH.context_length                   u32     max_position_embeddings
//   ARCH.embedding_length                 u32     hidden_size
//   ARCH.block_count                      u32     num_hidden_layers
//   ARCH.feed_forward_length              u32     intermediate_size
//   ARCH.attention.head_count             u32     num_attention_heads
//   ARCH.attention.head_count_kv          u32     num_key_value_heads
//   ARCH.attention.key_length             u32     head_dim
//   ARCH.attention.value_length           u32     head_dim
//   ARCH.attention.layer_norm_rms_epsilon f32     rms_norm_eps
//   ARCH.rope.freq_base                   f32     rope_theta
//   ARCH.rope.dimension_count             u32     head_dim
//   ARCH.rope.scaling.type                string  "yarn", when config.json's rope_scaling is YaRN; then
//   ARCH.rope.scaling.factor              f32     its factor
//   ARCH.rope.scaling.original_context_length u32 its original_max_position_embeddings
//   ARCH.rope.scaling.yarn_beta_fast/_slow f32    its beta_fast / beta_slow, when it has them
//   ARCH.vocab_size                       u32     vocab_size (== token count == embedding rows)
//   tokenizer.ggml.*, tokenizer.chat_template: the checkpoint's tokenizer as
//                                         llama.cpp's converter writes it (model "llama" for
//                                         SentencePiece and SentencePiece-style BPE, "gpt2" for
//                                         byte-level BPE with its merges and pre name); the vocab
//                                         is padded with "<unused_N>" to the embedding rows.
//                                         docs/FORMAT.md lists each key.
//
// tern keys:
//   tern.activation_mode       string  "int8": activations quantized per token to int8
//                                      by absmax before each ternary matmul (BitNet b1.58
//                                      training); "float": activations stay float
//   tern.scale_rule            string  "absmean-per-tensor": W ~ s * T, s = max(mean|W|,
//                                      1e-5), T = clamp(round(W/s)); "per-row": the
//                                      checkpoint was already ternary, W = s_r * T exactly;
//                                      "packed-per-tensor": uint8-packed trits with a
//                                      weight_scale, s = weight_scale or 1/weight_scale
//   tern.scale.<tensor>        f32[]   exact f32 scale(s) of each ternary tensor: 1 value
//                                      (absmean-per-tensor) or one per row (per-row), rows
//                                      in the file's (permuted, for q/k) order. Every TQ
//                                      block's fp16 d is fp16(this scale) so llama.cpp
//                                      sees the same weights to fp16 precision.
//   tern.tokenizer.spm_model   u8[]    the raw tokenizer.model bytes, so tern tokenizes
//                                      with libsentencepiece exactly
//   tern.tokenizer.hf_pipeline string  tokenizer.json less vocab and merges: the rules
//                                      tern runs for a Hugging Face tokenizer
//   tern.tokenizer.eog_ids     i32[]   generation_config.json's eos_token_id list
//   tern.source.dtype          string  safetensors dtype(s) of the source, e.g. "BF16" or
//                                      "BF16,F32"
//   tern.linear_norm_eps       f32     present when the checkpoint's quantization_config
//                                      has use_rms_norm (Falcon-E): every ternary linear's
//                                      input goes through an RMSNorm with this eps and the
//                                      weights blk.N.<linear>.rms_norm.weight (F32, tern-only
//                                      names; llama.cpp does not run such a file)
//
// Tensors (GGUF dims are the safetensors shape reversed): token_embd.weight,
// then per layer blk.N.{attn_norm, attn_q, attn_k, attn_v, [attn_q_norm,
// attn_k_norm (Qwen3)], [attn_sub_norm],
// attn_output, ffn_norm, ffn_gate, ffn_up, [ffn_sub_norm], ffn_down}.weight
// (sub-norms for the bitnet families), then output_norm.weight and
// output.weight (absent when tied). With --fairy2i (ARCH fairy2i) the seven
// linears and output.weight are FAIRY2I (include/tern/phase.h), dims [2 *
// padded complex columns, rows, stages], each with its stages x 4 scales in
// tern.scale.<tensor>, tern.scale_rule "fairy2i-phase", no general.file_type,
// and q/k in HF's row order. Otherwise the seven linears are TQ2_0/TQ1_0; for
// `llama` the attn_q and attn_k rows are permuted as llama.cpp's converter
// does (HF rotate_half -> interleaved pairs), the bitnet architectures keep
// HF's order as llama.cpp and bitnet.cpp expect. Norms are F32. Embedding/output: F32 from F32, F16 from F16, and
// from BF16 F16 when every value converts exactly, else BF16 - always lossless.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "pack/plan.h"
#include "pack/ternarize.h"
#include "tern/error.h"

namespace tern::pack {

namespace {

using gguf::TensorType;
using gguf::Value;

void set_metadata(gguf::Writer& w, const PackInputs& in, const PackOptions& o) {
  const HfConfig& c = in.cfg;
  const std::string arch(c.family->gguf_arch);
  auto key = [&](const char* k) { return arch + "." + k; };
  w.set("general.architecture", Value::string(arch));
  w.set("general.name", Value::string(in.name));
  // llama.cpp's file types have no Fairy2i entry; its files carry none.
  if (!in.phase_stages) w.set("general.file_type", Value::u32(llama_file_type(o.type)));
  w.set("general.quantization_version", Value::u32(2));
  w.set(key("context_length"), Value::u32(c.max_position_embeddings));
  w.set(key("embedding_length"), Value::u32(c.hidden_size));
  w.set(key("block_count"), Value::u32(c.n_layers));
  w.set(key("feed_forward_length"), Value::u32(c.intermediate_size));
  w.set(key("attention.head_count"), Value::u32(c.n_heads));
  w.set(key("attention.head_count_kv"), Value::u32(c.n_kv_heads));
  w.set(key("attention.key_length"), Value::u32(c.head_dim));
  w.set(key("attention.value_length"), Value::u32(c.head_dim));
  w.set(key("attention.layer_norm_rms_epsilon"), Value::f32(c.rms_norm_eps));
  w.set(key("rope.freq_base"), Value::f32(c.rope_theta));
  w.set(key("rope.dimension_count"), Value::u32(c.head_dim));
  if (c.yarn) {
    w.set(key("rope.scaling.type"), Value::string("yarn"));
    w.set(key("rope.scaling.factor"), Value::f32(float(c.yarn->factor)));
    w.set(key("rope.scaling.original_context_length"), Value::u32(c.yarn->original_ctx));
    if (c.yarn->beta_fast) w.set(key("rope.scaling.yarn_beta_fast"), Value::f32(float(*c.yarn->beta_fast)));
    if (c.yarn->beta_slow) w.set(key("rope.scaling.yarn_beta_slow"), Value::f32(float(*c.yarn->beta_slow)));
  }
  w.set(key("vocab_size"), Value::u32(c.vocab_size));

  tok::write_spec(w, in.tok, tok::KeyGroup::Standard);

  w.set("tern.activation_mode", Value::string(c.int8_activations() ? "int8" : "float"));
  w.set("tern.scale_rule", Value::string(scale_rule_name(in.rule)));
  tok::write_spec(w, in.tok, tok::KeyGroup::Tern);
  w.set("tern.source.dtype", Value::string(in.source_dtypes));
  if (c.linear_norm_eps) w.set("tern.linear_norm_eps", Value::f32(*c.linear_norm_eps));
  // Group-scaled blocks hold their exact fp16 scales themselves.
  for (const PlanTensor& pt : in.tensors)
    if ((pt.role == Role::Ternary && !is_group_type(pt.type)) || pt.role == Role::Phase)
      w.set("tern.scale." + pt.name, Value::f32_array(pt.scales));
}

std::string short_float(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string progress_line(size_t i, size_t n, const PlanTensor& t) {
  const int width = static_cast<int>(std::to_string(n).size());
  char head[32];
  std::snprintf(head, sizeof head, "[%*zu/%*zu]", width, i + 1, width, n);
  std::string dims = "[";
  for (size_t k = 0; k < t.dims.size(); ++k) dims += (k ? ", " : "") + std::to_string(t.dims[k]);
  dims += "]";
  std::string line = std::string(head) + " " + t.name + "  " + gguf::traits(t.type).name + "  " + dims;
  if (t.role == Role::Phase) {
    float lo = t.scales[0], hi = t.scales[0];
    for (float s : t.scales) lo = std::min(lo, s), hi = std::max(hi, s);
    line += "  " + std::to_string(t.dims[2]) + " stages, scales " + short_float(lo) + ".." + short_float(hi);
  } else if (t.role == Role::Ternary) {
    if (t.scales.size() == 1) {
      line += "  scale " + short_float(t.scales[0]);
    } else {
      float lo = t.scales[0], hi = t.scales[0];
      for (float s : t.scales) lo = std::min(lo, s), hi = std::max(hi, s);
      line += "  row scales " + short_float(lo) + ".." + short_float(hi);
    }
  }
  return line;
}

std::string clock(double s) {
  const long t = std::lround(std::max(0.0, s));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

// Work is the source bytes each pass reads: two passes, three with verify.
// The estimate assumes the remaining bytes go as fast as the ones done.
class Eta {
 public:
  explicit Eta(uint64_t total) : total_(std::max<uint64_t>(total, 1)) {}
  void add(uint64_t bytes) { done_ += bytes; }
  double fraction() const { return double(done_) / double(total_); }
  std::string status() const {
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double left = done_ ? el * double(total_ - std::min(done_, total_)) / double(done_) : 0;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%3.0f%%  %s elapsed, ETA %s", 100 * fraction(), clock(el).c_str(),
                  clock(left).c_str());
    return buf;
  }

 private:
  uint64_t total_, done_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

uint64_t source_bytes(const PlanTensor& t) { return t.src->nbytes; }

// "-o CKPT/model.safetensors" would rename the new file over the source
// once the pack ends. Compared by inode, so hard links and other spellings
// of the same path are caught, before any work is done.
void check_not_an_input(const std::string& out, const std::string& input_dir) {
  struct stat o {};
  if (::stat(out.c_str(), &o) != 0) return;  // absent: nothing to destroy
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(input_dir, ec)) {
    struct stat i {};
    if (::stat(e.path().c_str(), &i) == 0 && i.st_dev == o.st_dev && i.st_ino == o.st_ino)
      throw file_error(out, "is " + e.path().string() + ", one of the pack's inputs; choose another output");
  }
}

using Say = std::function<void(const std::string&)>;

// Pass 1: the header holds every scale and tensor type, so all of them are
// settled (and every tensor validated) before anything is written.
// Nothing is kept but the scales, so memory stays at about one tensor.
void settle_tensors(PackInputs& in, const PackOptions& o, Eta& eta, const Say& say) {
  int reported = 0;
  for (PlanTensor& t : in.tensors) {
    analyze(in, t, o.type);
    eta.add(source_bytes(t));
    // A line every tenth of the pass: a 10B model takes minutes here.
    const int tenth = int(10 * eta.fraction() * (o.verify ? 3 : 2));
    if (tenth > reported && tenth < 10) {
      reported = tenth;
      say("checking the source  " + eta.status());
    }
  }
}

// Pass 2: convert and stream one tensor at a time, float tensors in
// chunks; rep gets the counts and the ternary tensors' bits per weight.
void stream_tensors(gguf::Writer& w, PackInputs& in, Eta& eta, const Say& say, PackReport& rep) {
  uint64_t tern_bytes = 0, tern_weights = 0;
  for (size_t i = 0; i < in.tensors.size(); ++i) {
    PlanTensor& t = in.tensors[i];
    if (t.role == Role::Ternary || t.role == Role::Phase) {
      const std::vector<uint8_t> bytes = t.role == Role::Ternary ? encode_ternary(t, read_values(in, t), in.rule)
                                                                 : encode_phase(in, t, read_values(in, t));
      w.write_tensor(t.name, bytes);
      ++rep.n_ternary;
      tern_bytes += bytes.size();
      tern_weights += t.rows * t.cols;
    } else {
      for_each_chunk(in, t, [&](uint64_t, std::span<const float> v) {
        w.append_tensor(t.name, encode_float(t, v));
      });
    }
    ++rep.n_tensors;
    eta.add(source_bytes(t));
    say(progress_line(i, in.tensors.size(), t) + "  " + eta.status());
  }
  rep.bits_per_weight_ternary = tern_weights ? 8.0 * tern_bytes / tern_weights : 0.0;
}

}  // namespace

PackReport pack_checkpoint(const PackOptions& o) {
  check_not_an_input(o.output_path, o.input_dir);
  PackInputs in = load_inputs(o);
  // Opening the writer first fails fast on an unwritable destination or one
  // that is not a regular file; its destructor removes the temporary if
  // anything below throws.
  gguf::Writer w(o.output_path);

  uint64_t total = 0;
  for (const PlanTensor& t : in.tensors) total += source_bytes(t);
  Eta eta(total * (o.verify ? 3 : 2));
  const Say say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  settle_tensors(in, o, eta, say);
  set_metadata(w, in, o);
  for (const PlanTensor& t : in.tensors) w.add_tensor(t.name, t.type, t.dims);
  w.write_header();

  PackReport rep;
  rep.activation_mode = in.cfg.int8_activations() ? "int8" : "float";
  stream_tensors(w, in, eta, say, rep);
  w.finish();
  struct stat st {};
  if (::stat(o.output_path.c_str(), &st) == 0) rep.bytes_written = static_cast<uint64_t>(st.st_size);

  if (o.verify) {
    try {
      verify_packed(o, [&](uint64_t bytes) { eta.add(bytes); });
      say("verified  " + eta.status());
    } catch (...) {
      std::remove(o.output_path.c_str());  // a file that fails verification is not a result
      throw;
    }
  }
  return rep;
}

}  // namespace tern::pack
