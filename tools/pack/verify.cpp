// verify_packed: re-derive everything from the source checkpoint and compare
// with what the GGUF file actually holds, read back through gguf::File and
// the quant.h unpackers rather than the packer's own encoder.
#include <algorithm>
#include <cstring>
#include <vector>

#include "pack/fairy2i.h"
#include "pack/plan.h"
#include "pack/ternarize.h"
#include "tern/error.h"
#include "tern/quant.h"
#include "tern/quant_group.h"

namespace tern::pack {

namespace {

using gguf::TensorType;

void check_scales(const gguf::File& f, const PlanTensor& t) {
  const std::string key = "tern.scale." + t.name;
  const gguf::Value* v = f.find(key);
  if (!v) throw file_error(f.path(), "missing key " + key);
  std::vector<float> got = v->as_f32_array(key);
  if (got.size() != t.scales.size())
    throw file_error(f.path(), key + " has " + std::to_string(got.size()) + " scales, expected " +
                                   std::to_string(t.scales.size()));
  for (size_t r = 0; r < got.size(); ++r)
    if (std::memcmp(&got[r], &t.scales[r], 4) != 0)
      throw file_error(f.path(), key + "[" + std::to_string(r) + "] is " + fmt_float(got[r]) +
                                     ", the source gives " + fmt_float(t.scales[r]));
}

void check_ternary(const gguf::File& f, const gguf::TensorInfo& info, const PlanTensor& t,
                   const std::vector<float>& data, ScaleRule rule) {
  const uint64_t rb = gguf::row_bytes(t.type, t.stored_cols());
  const int64_t K = static_cast<int64_t>(t.stored_cols());
  std::vector<int8_t> want(t.stored_cols(), 0), got(t.stored_cols());  // padding stays 0
  std::vector<uint16_t> d(t.stored_cols() / QK);
  for (uint64_t r = 0; r < t.rows; ++r) {
    const uint8_t* row = info.data + r * rb;
    row_trits(t, data, rule, r, want.data());
    unpack_ternary_row(t.type, row, K, got.data());
    for (uint64_t k = 0; k < t.stored_cols(); ++k)
      if (want[k] != got[k])
        throw file_error(f.path(), "tensor " + t.name + " row " + std::to_string(r) + " weight " +
                                       std::to_string(k) + " is " + std::to_string(got[k]) +
                                       ", the source gives " + std::to_string(want[k]));
    row_block_scales(t.type, row, K, d.data());
    const uint16_t expect = f32_to_fp16(t.row_scale(r));
    for (size_t b = 0; b < d.size(); ++b)
      if (d[b] != expect)
        throw file_error(f.path(), "tensor " + t.name + " row " + std::to_string(r) + " block " +
                                       std::to_string(b) + " scale " +
                                       fmt_float(fp16_to_f32(d[b])) + ", expected " +
                                       fmt_float(fp16_to_f32(expect)));
  }
}

// Each group's trits and fp16 scale read back through quant_group.h.
void check_groups(const gguf::File& f, const gguf::TensorInfo& info, const PlanTensor& t,
                  const std::vector<float>& data, ScaleRule rule) {
  const int group = group_size(t.type);
  const uint64_t K = t.cols, G = K / uint64_t(group), rb = gguf::row_bytes(t.type, K);
  std::vector<int8_t> want(K), got(K);
  std::vector<uint16_t> d(G);
  for (uint64_t r = 0; r < t.rows; ++r) {
    row_trits(t, data, rule, r, want.data());
    unpack_q2_group_row(info.data + r * rb, int64_t(K), group, got.data(), d.data());
    for (uint64_t k = 0; k < K; ++k)
      if (want[k] != got[k])
        throw file_error(f.path(), "tensor " + t.name + " row " + std::to_string(r) + " weight " + std::to_string(k) +
                                       " is " + std::to_string(got[k]) + ", the source gives " + std::to_string(want[k]));
    for (uint64_t g = 0; g < G; ++g)
      if (fp16_to_f32(d[g]) != t.scales[r * G + g])
        throw file_error(f.path(), "tensor " + t.name + " row " + std::to_string(r) + " group " + std::to_string(g) +
                                       " scale " + fmt_float(fp16_to_f32(d[g])) + ", the source gives " +
                                       fmt_float(t.scales[r * G + g]));
  }
}

// Every code read back from the bit planes, padding included (code 0).
void check_phase(const gguf::File& f, const gguf::TensorInfo& info, const PlanTensor& t,
                 const PhaseQuantized& q) {
  const int64_t cols = phase_cols(q.m);
  for (int st = 0; st < q.stages; ++st)
    for (int64_t r = 0; r < q.n; ++r)
      for (int64_t j = 0; j < cols; ++j)
        for (bool w_matrix : {false, true}) {
          const size_t k = size_t((st * q.n + r) * q.m + j);
          const uint8_t want = j >= q.m ? 0 : w_matrix ? q.w_codes[k] : q.u_codes[k];
          const uint8_t got = phase_code(info.data, q.n, cols, st, r, j, w_matrix);
          if (got != want)
            throw file_error(f.path(), "tensor " + t.name + " stage " + std::to_string(st) + " " +
                                           (w_matrix ? "W" : "U") + " row " + std::to_string(r) + " column " +
                                           std::to_string(j) + " has code " + std::to_string(got) +
                                           ", the source gives " + std::to_string(want));
        }
}

// The stored bytes of rows [first_row, ...) must be the source chunk encoded
// again: exact for lossless types, the same rounding for requested ones.
void check_float(const gguf::File& f, const gguf::TensorInfo& info, const PlanTensor& t,
                 uint64_t first_row, std::span<const float> data) {
  const std::vector<uint8_t> want = encode_float(t, data);
  const uint64_t rb = gguf::row_bytes(t.type, t.cols);
  const uint8_t* got = info.data + first_row * rb;
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      const uint64_t row = first_row + i / rb, elem = (i % rb) * t.cols / rb;
      throw file_error(f.path(), "tensor " + t.name + " row " + std::to_string(row) + " element " +
                                     std::to_string(elem) + " differs from the source");
    }
}

}  // namespace

namespace {

// The keys no tensor shows: architecture, scale rule, the BitLinear norm,
// activation mode, YaRN and the file type.
void verify_metadata(const gguf::File& f, const PackInputs& in, const PackOptions& o) {
  auto expect_string = [&](const char* key, const std::string& want) {
    const std::string& got = f.get(key).as_string(key);
    if (got != want)
      throw file_error(f.path(), std::string(key) + " is '" + got + "', the source gives '" + want + "'");
  };
  expect_string("general.architecture", std::string(in.cfg.family->gguf_arch));
  expect_string("tern.scale_rule", scale_rule_name(in.rule));
  const gguf::Value* eps = f.find("tern.linear_norm_eps");
  if (bool(eps) != bool(in.cfg.linear_norm_eps) ||
      (eps && float(eps->as_float("tern.linear_norm_eps")) != *in.cfg.linear_norm_eps))
    throw file_error(f.path(), "tern.linear_norm_eps differs from quantization_config.rms_norm_eps");
  expect_string("tern.activation_mode", in.cfg.int8_activations() ? "int8" : "float");
  // YaRN moves every position's angles, and no tensor shows it.
  const std::string rs = std::string(in.cfg.family->gguf_arch) + ".rope.scaling.";
  const gguf::Value* yarn = f.find(rs + "type");
  if (bool(yarn) != bool(in.cfg.yarn) ||
      (yarn && (f.get(rs + "factor").as_float(rs + "factor") != float(in.cfg.yarn->factor) ||
                f.get(rs + "original_context_length").as_uint(rs + "original_context_length") !=
                    in.cfg.yarn->original_ctx)))
    throw file_error(f.path(), rs + "* differ from config.json's rope_scaling");
  const uint64_t ftype = llama_file_type(o.type);
  if (!in.phase_stages && f.get("general.file_type").as_uint("general.file_type") != ftype)
    throw file_error(f.path(), "general.file_type is not " + std::to_string(ftype));
}

// The tokenizer as the file carries it must be the checkpoint's.
void verify_tokenizer(const gguf::File& f, const tok::Spec& want) {
  const tok::Spec got = tok::read_spec(f);
  if (got.tokens != want.tokens) throw file_error(f.path(), "tokenizer.ggml.tokens differ from the checkpoint's tokenizer");
  if (got.merges != want.merges) throw file_error(f.path(), "tokenizer.ggml.merges differ from the checkpoint's tokenizer");
  if (got.spm_model != want.spm_model)
    throw file_error(f.path(), "tern.tokenizer.spm_model differs from tokenizer.model");
  if (got.hf_pipeline != want.hf_pipeline || got.chat_template != want.chat_template || got.eog != want.eog ||
      got.bos != want.bos || got.eos != want.eos || got.add_bos != want.add_bos)
    throw file_error(f.path(), "the tokenizer rules differ from the checkpoint's tokenizer");
}

// One tensor's stored values against what packing its source gives.
void verify_tensor(gguf::File& f, const PackInputs& in, PlanTensor& t, const PackOptions& o) {
  if (t.role == Role::Ternary) {
    const std::vector<float> data = read_values(in, t);
    analyze_ternary(t, data, in.rule, o.type);
    const TensorType types[] = {t.type};
    const gguf::TensorInfo& info = f.tensor(t.name, types, t.dims);
    if (is_group_type(t.type)) {
      if (f.find("tern.scale." + t.name)) throw file_error(f.path(), "tern.scale." + t.name + " is for TQ tensors");
      check_groups(f, info, t, data, in.rule);
    } else {
      check_scales(f, t);
      check_ternary(f, info, t, data, in.rule);
    }
  } else if (t.role == Role::Phase) {
    const PhaseQuantized q = phase_quantize_checked(in, t, read_values(in, t));
    t.type = TensorType::FAIRY2I;
    t.scales = q.scales;
    const TensorType types[] = {t.type};
    check_scales(f, t);
    check_phase(f, f.tensor(t.name, types, t.dims), t, q);
  } else {
    analyze(in, t, o.type);
    const TensorType types[] = {t.type};
    const gguf::TensorInfo& info = f.tensor(t.name, types, t.dims);
    const uint64_t rb = gguf::row_bytes(t.type, t.cols);
    for_each_chunk(in, t, [&](uint64_t r0, std::span<const float> v) {
      check_float(f, info, t, r0, v);
      f.release(info.data + r0 * rb, v.size() / t.cols * rb);
    });
  }
}

}  // namespace

void verify_packed(const PackOptions& o, const std::function<void(uint64_t)>& progress) {
  PackInputs in = load_inputs(o);
  gguf::File f = gguf::File::open(o.output_path);
  verify_metadata(f, in, o);
  verify_tokenizer(f, in.tok);
  size_t expected_count = in.tensors.size();
  if (f.tensors().size() != expected_count)
    throw file_error(f.path(), "has " + std::to_string(f.tensors().size()) + " tensors, expected " +
                                   std::to_string(expected_count));
  for (PlanTensor& t : in.tensors) {
    verify_tensor(f, in, t, o);
    // Checked pages of the output need not stay resident (they would add
    // the whole file to pack --verify's peak memory).
    f.release(*f.find_tensor(t.name));
    if (progress) progress(t.src->nbytes);
  }
}

}  // namespace tern::pack
