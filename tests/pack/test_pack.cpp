// End-to-end packing of tiny checkpoints in every mode, dtype and format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "pack/packer.h"
#include "pack/safetensors.h"
#include "pack_test_util.h"
#include "tern/error.h"
#include "tern/gguf.h"
#include "tern/quant.h"

using namespace tern;
using namespace tern::pack;
using namespace tern::pack::testing;
using gguf::TensorType;

namespace {

struct Packed {
  std::string ckpt, out;
  PackReport report;
  std::vector<std::string> progress;
};

Packed pack_tiny(const std::string& dir, const std::string& args, TensorType type = TensorType::TQ2_0,
                 bool ternarize = false, const std::string& tag = "") {
  Packed p;
  p.ckpt = make_checkpoint(dir + "/ckpt" + tag, args);
  p.out = dir + "/out" + tag + ".gguf";
  PackOptions o;
  o.input_dir = p.ckpt;
  o.output_path = p.out;
  o.type = type;
  o.force_ternarize = ternarize;
  o.progress = [&](const std::string& line) { p.progress.push_back(line); };
  p.report = pack_checkpoint(o);
  return p;
}

std::vector<float> source(const std::string& ckpt, const std::string& name) {
  Checkpoint c = Checkpoint::open(ckpt);
  const StTensor* t = c.find(name);
  if (!t) throw std::runtime_error("no source tensor " + name);
  return c.read_f32(*t);
}

std::vector<int8_t> file_row(const gguf::File& f, const std::string& name, uint64_t r) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  const uint64_t K = t->dims[0];
  std::vector<int8_t> trits(K);
  unpack_ternary_row(t->type, t->data + r * gguf::row_bytes(t->type, K), static_cast<int64_t>(K),
                     trits.data());
  return trits;
}

// llama.cpp's q/k permutation written out independently of the packer.
uint64_t src_row(uint64_t out, uint64_t rows, uint64_t n_head) {
  const uint64_t D = rows / n_head, h = out / D, i = (out % D) / 2, j = out % 2;
  return h * D + j * (D / 2) + i;
}

float absmean(const std::vector<float>& w) {
  double s = 0;
  for (float x : w) s += std::fabs(static_cast<double>(x));
  return std::max(static_cast<float>(s / w.size()), 1e-5f);
}

int8_t absmean_trit(float w, float s) {
  return static_cast<int8_t>(std::clamp(std::nearbyint(w * (1.0f / s)), -1.0f, 1.0f));
}

std::string str(const gguf::File& f, const char* key) { return f.get(key).as_string(key); }
uint64_t u(const gguf::File& f, const char* key) { return f.get(key).as_uint(key); }

}  // namespace

TEST(Packer, BitnetF32Tq2Metadata) {
  auto dir = test_dir();
  Packed p = pack_tiny(dir, "--mode bitnet --dtype f32 --tied --seed 1");
  gguf::File f = gguf::File::open(p.out);

  EXPECT_EQ(str(f, "general.architecture"), "llama");
  EXPECT_EQ(str(f, "general.name"), "ckpt");
  EXPECT_EQ(u(f, "general.file_type"), 37u);
  EXPECT_EQ(f.get("general.file_type").type, gguf::ValueType::U32);
  EXPECT_EQ(u(f, "general.quantization_version"), 2u);
  EXPECT_EQ(u(f, "llama.context_length"), 128u);
  EXPECT_EQ(u(f, "llama.embedding_length"), 256u);
  EXPECT_EQ(u(f, "llama.block_count"), 2u);
  EXPECT_EQ(u(f, "llama.feed_forward_length"), 512u);
  EXPECT_EQ(u(f, "llama.attention.head_count"), 4u);
  EXPECT_EQ(u(f, "llama.attention.head_count_kv"), 2u);
  EXPECT_EQ(u(f, "llama.rope.dimension_count"), 64u);
  EXPECT_EQ(u(f, "llama.vocab_size"), 512u);
  EXPECT_EQ(f.get("llama.rope.freq_base").as_float("k"), 10000.0);
  EXPECT_EQ(f.get("llama.attention.layer_norm_rms_epsilon").as_float("k"), static_cast<double>(1e-5f));
  EXPECT_EQ(f.get("llama.rope.freq_base").type, gguf::ValueType::F32);

  EXPECT_EQ(str(f, "tokenizer.ggml.model"), "llama");
  const auto& tokens = f.get("tokenizer.ggml.tokens").as_string_array("t");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[3], "<sep>");
  auto types = f.get("tokenizer.ggml.token_type").as_i32_array("t");
  ASSERT_EQ(types.size(), 512u);
  EXPECT_EQ(types[0], 2);
  EXPECT_EQ(types[1], 3);
  EXPECT_EQ(types[3], 4);
  EXPECT_EQ(types[4], 6);
  EXPECT_EQ(types[300], 1);
  EXPECT_EQ(f.get("tokenizer.ggml.scores").as_f32_array("s").size(), 512u);
  EXPECT_EQ(u(f, "tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(u(f, "tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_EQ(u(f, "tokenizer.ggml.unknown_token_id"), 0u);
  EXPECT_TRUE(f.get("tokenizer.ggml.add_bos_token").as_bool("b"));
  EXPECT_FALSE(f.get("tokenizer.ggml.add_eos_token").as_bool("b"));

  EXPECT_EQ(str(f, "tern.activation_mode"), "int8");
  EXPECT_EQ(str(f, "tern.scale_rule"), "absmean-per-tensor");
  EXPECT_EQ(str(f, "tern.source.dtype"), "F32");
  auto spm = f.get("tern.tokenizer.spm_model").as_u8_array("m");
  auto raw = read_bytes(TERN_SOURCE_DIR "/tests/data/tiny_tokenizer.model");
  EXPECT_TRUE(std::equal(spm.begin(), spm.end(), raw.begin(), raw.end()));

  // Tied: no output.weight; 1 + 2 * 9 + 1 tensors in llama.cpp's order.
  ASSERT_EQ(f.tensors().size(), 20u);
  EXPECT_EQ(f.tensors()[0].name, "token_embd.weight");
  EXPECT_EQ(f.tensors()[1].name, "blk.0.attn_norm.weight");
  EXPECT_EQ(f.tensors()[19].name, "output_norm.weight");
  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
  auto shape = [&](const char* n) { return f.find_tensor(n)->dims; };
  EXPECT_EQ(shape("token_embd.weight"), (std::vector<uint64_t>{256, 512}));
  EXPECT_EQ(shape("blk.0.attn_q.weight"), (std::vector<uint64_t>{256, 256}));
  EXPECT_EQ(shape("blk.0.attn_k.weight"), (std::vector<uint64_t>{256, 128}));
  EXPECT_EQ(shape("blk.1.ffn_down.weight"), (std::vector<uint64_t>{512, 256}));
  EXPECT_EQ(shape("blk.1.ffn_up.weight"), (std::vector<uint64_t>{256, 512}));
  EXPECT_EQ(f.find_tensor("token_embd.weight")->type, TensorType::F32);
  EXPECT_EQ(f.find_tensor("blk.0.ffn_norm.weight")->type, TensorType::F32);
  EXPECT_EQ(f.find_tensor("blk.1.attn_output.weight")->type, TensorType::TQ2_0);

  EXPECT_EQ(p.report.n_tensors, 20u);
  EXPECT_EQ(p.report.n_ternary, 14u);
  EXPECT_DOUBLE_EQ(p.report.bits_per_weight_ternary, 66.0 * 8 / 256);
  EXPECT_EQ(p.report.bytes_written, f.file_size());
  EXPECT_EQ(p.report.activation_mode, "int8");
  // After the lines of the source check, one per tensor written.
  const auto first = std::find_if(p.progress.begin(), p.progress.end(),
                                  [](const std::string& l) { return l.rfind("[", 0) == 0; });
  ASSERT_EQ(p.progress.end() - first, 20);
  EXPECT_EQ(first[2].rfind("[ 3/20] blk.0.attn_q.weight  TQ2_0  [256, 256]  scale ", 0), 0u)
      << first[2];

  // Float tensors are copied bit for bit.
  auto emb = source(p.ckpt, "model.embed_tokens.weight");
  EXPECT_EQ(std::memcmp(f.find_tensor("token_embd.weight")->data, emb.data(), emb.size() * 4), 0);
}

TEST(Packer, BitnetScalesAndPermutedTrits) {
  auto dir = test_dir();
  Packed p = pack_tiny(dir, "--mode bitnet --dtype bf16 --untied --seed 2");
  gguf::File f = gguf::File::open(p.out);
  struct Case { const char* hf; const char* gg; uint64_t rows, heads; };
  for (Case c : {Case{"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight", 256, 4},
                 Case{"model.layers.1.self_attn.k_proj.weight", "blk.1.attn_k.weight", 128, 2},
                 Case{"model.layers.0.self_attn.v_proj.weight", "blk.0.attn_v.weight", 128, 0},
                 Case{"model.layers.1.mlp.down_proj.weight", "blk.1.ffn_down.weight", 256, 0}}) {
    SCOPED_TRACE(c.gg);
    auto w = source(p.ckpt, c.hf);
    const uint64_t K = w.size() / c.rows;
    const float s = absmean(w);
    auto scales = f.get(std::string("tern.scale.") + c.gg).as_f32_array("s");
    ASSERT_EQ(scales.size(), 1u);
    EXPECT_EQ(scales[0], s);
    const gguf::TensorInfo* t = f.find_tensor(c.gg);
    std::vector<uint16_t> d(K / 256);
    for (uint64_t r = 0; r < c.rows; ++r) {
      const uint64_t sr = c.heads ? src_row(r, c.rows, c.heads) : r;
      auto got = file_row(f, c.gg, r);
      for (uint64_t k = 0; k < K; ++k)
        ASSERT_EQ(got[k], absmean_trit(w[sr * K + k], s)) << "row " << r << " col " << k;
      row_block_scales(t->type, t->data + r * gguf::row_bytes(t->type, K), K, d.data());
      for (uint16_t h : d) ASSERT_EQ(h, f32_to_fp16(s));
    }
  }
  // The permutation really moves rows: output row 1 of q comes from source row 32.
  EXPECT_EQ(src_row(1, 256, 4), 32u);
  // bf16 embedding chosen fp16-exact by the generator -> F16; untied lm_head is not -> BF16.
  ASSERT_NE(f.find_tensor("output.weight"), nullptr);
  EXPECT_EQ(f.find_tensor("token_embd.weight")->type, TensorType::F16);
  EXPECT_EQ(f.find_tensor("output.weight")->type, TensorType::BF16);
  EXPECT_EQ(f.tensors().back().name, "output.weight");
  EXPECT_EQ(str(f, "tern.source.dtype"), "BF16");
}

TEST(Packer, TernaryPerRowScalesExact) {
  auto dir = test_dir();
  Packed p = pack_tiny(dir, "--mode ternary --dtype bf16 --untied --seed 3");
  gguf::File f = gguf::File::open(p.out);
  EXPECT_EQ(str(f, "tern.scale_rule"), "per-row");
  EXPECT_EQ(str(f, "tern.activation_mode"), "float");
  EXPECT_EQ(p.report.activation_mode, "float");

  auto w = source(p.ckpt, "model.layers.0.self_attn.q_proj.weight");
  auto scales = f.get("tern.scale.blk.0.attn_q.weight").as_f32_array("s");
  ASSERT_EQ(scales.size(), 256u);
  for (uint64_t r = 0; r < 256; ++r) {
    const uint64_t sr = src_row(r, 256, 4);
    float m = 0;
    for (uint64_t k = 0; k < 256; ++k) m = std::max(m, std::fabs(w[sr * 256 + k]));
    ASSERT_EQ(scales[r], m) << r;
    auto got = file_row(f, "blk.0.attn_q.weight", r);
    for (uint64_t k = 0; k < 256; ++k) {
      float x = w[sr * 256 + k];
      ASSERT_EQ(got[k], (x > 0) - (x < 0)) << r << "," << k;
    }
  }
  // The generator zeroes o_proj row 1: scale 0, fp16 d 0, all trits 0.
  auto o = f.get("tern.scale.blk.0.attn_output.weight").as_f32_array("s");
  ASSERT_EQ(o.size(), 256u);
  EXPECT_EQ(o[1], 0.0f);
  EXPECT_GT(o[0], 0.0f);
  auto zero_row = file_row(f, "blk.0.attn_output.weight", 1);
  EXPECT_TRUE(std::all_of(zero_row.begin(), zero_row.end(), [](int8_t t) { return t == 0; }));
  // An untied bf16 head that fp16 cannot hold stays BF16, bit for bit.
  auto head = source(p.ckpt, "lm_head.weight");
  const gguf::TensorInfo* out = f.find_tensor("output.weight");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(out->type, TensorType::BF16);
  EXPECT_EQ(out->dims, (std::vector<uint64_t>{256, 512}));
  for (size_t i = 0; i < head.size(); ++i) {
    uint16_t stored;
    std::memcpy(&stored, out->data + 2 * i, 2);
    ASSERT_EQ(bf16_to_f32(stored), head[i]) << i;
  }
}

TEST(Packer, F16DenseWithTernarize) {
  auto dir = test_dir();
  Packed p = pack_tiny(dir, "--mode dense --dtype f16 --seed 4", TensorType::TQ2_0, true);
  gguf::File f = gguf::File::open(p.out);
  EXPECT_EQ(str(f, "tern.scale_rule"), "absmean-per-tensor");
  EXPECT_EQ(str(f, "tern.activation_mode"), "float");  // not trained with int8 activations
  EXPECT_EQ(str(f, "tern.source.dtype"), "F16");
  const gguf::TensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_EQ(emb->type, TensorType::F16);
  auto src = source(p.ckpt, "model.embed_tokens.weight");
  for (size_t i = 0; i < src.size(); i += 97) {
    uint16_t h;
    std::memcpy(&h, emb->data + 2 * i, 2);
    ASSERT_EQ(fp16_to_f32(h), src[i]);
  }
  auto w = source(p.ckpt, "model.layers.1.mlp.gate_proj.weight");
  EXPECT_EQ(f.get("tern.scale.blk.1.ffn_gate.weight").as_f32_array("s")[0], absmean(w));
  EXPECT_EQ(f.find_tensor("blk.0.attn_norm.weight")->type, TensorType::F32);
}

TEST(Packer, Tq1AndTq2UnpackToIdenticalTrits) {
  auto dir = test_dir();
  Packed a = pack_tiny(dir, "--mode ternary --dtype f32 --seed 5", TensorType::TQ2_0, false, "2");
  Packed b = pack_tiny(dir, "--mode ternary --dtype f32 --seed 5", TensorType::TQ1_0, false, "1");
  gguf::File f2 = gguf::File::open(a.out), f1 = gguf::File::open(b.out);
  EXPECT_EQ(u(f1, "general.file_type"), 36u);
  EXPECT_DOUBLE_EQ(b.report.bits_per_weight_ternary, 54.0 * 8 / 256);
  EXPECT_LT(f1.file_size(), f2.file_size());
  size_t checked = 0;
  for (const auto& t : f2.tensors()) {
    if (t.type != TensorType::TQ2_0) continue;
    const gguf::TensorInfo* t1 = f1.find_tensor(t.name);
    ASSERT_NE(t1, nullptr);
    ASSERT_EQ(t1->type, TensorType::TQ1_0);
    ASSERT_EQ(t1->dims, t.dims);
    for (uint64_t r = 0; r < t.dims[1]; ++r) ASSERT_EQ(file_row(f2, t.name, r), file_row(f1, t.name, r));
    ++checked;
  }
  EXPECT_EQ(checked, 14u);
}

TEST(Packer, ShardedEqualsSingleFile) {
  auto dir = test_dir();
  fs::create_directories(dir + "/a");
  fs::create_directories(dir + "/b");
  Packed one = pack_tiny(dir + "/a", "--mode bitnet --dtype bf16 --untied --seed 6");
  Packed three = pack_tiny(dir + "/b", "--mode bitnet --dtype bf16 --untied --seed 6 --shards 3");
  ASSERT_TRUE(fs::exists(three.ckpt + "/model.safetensors.index.json"));
  ASSERT_FALSE(fs::exists(three.ckpt + "/model.safetensors"));
  EXPECT_EQ(read_bytes(one.out), read_bytes(three.out));  // same general.name "ckpt"
}

// Float tensors stream in row chunks: chunks of a few rows, crossing shard
// and tensor boundaries, must give the same file as one chunk per tensor,
// and --verify reads the output back in the same chunks.
TEST(Packer, ChunkedFloatTensorsEqualWholeOnes) {
  auto dir = test_dir();
  const std::string ckpt =
      make_checkpoint(dir + "/ckpt", "--mode bitnet --dtype bf16 --untied --seed 6 --shards 3");
  auto pack = [&](uint64_t chunk, const std::string& out) {
    PackOptions o;
    o.input_dir = ckpt;
    o.output_path = dir + "/" + out;
    o.chunk_floats = chunk;
    o.verify = true;
    pack_checkpoint(o);
    return read_bytes(o.output_path);
  };
  const auto whole = pack(uint64_t(1) << 30, "whole.gguf");
  EXPECT_EQ(pack(1000, "chunks.gguf"), whole);  // 3 rows of 256 per chunk
  EXPECT_EQ(pack(1, "rows.gguf"), whole);       // one row per chunk
}

// One line per tensor written, each with an ETA, after a few while the
// source is checked.
TEST(Packer, ProgressHasEta) {
  auto dir = test_dir();
  Packed p = pack_tiny(dir, "--mode bitnet --seed 6");
  const gguf::File f = gguf::File::open(p.out);
  size_t per_tensor = 0;
  for (const std::string& line : p.progress) {
    EXPECT_NE(line.find("ETA "), std::string::npos) << line;
    per_tensor += line.rfind("[", 0) == 0;
  }
  EXPECT_EQ(per_tensor, f.tensors().size());
  EXPECT_NE(p.progress.back().find("100%"), std::string::npos) << p.progress.back();
}

TEST(Packer, VerifyPassesAndCatchesTampering) {
  auto dir = test_dir();
  for (const char* args : {"--mode bitnet --dtype bf16 --untied --seed 7",
                           "--mode ternary --dtype f16 --seed 8"}) {
    SCOPED_TRACE(args);
    std::string ckpt = make_checkpoint(dir + "/ckpt", args);
    PackOptions o;
    o.input_dir = ckpt;
    o.output_path = dir + "/out.gguf";
    o.type = TensorType::TQ1_0;
    o.verify = true;
    EXPECT_NO_THROW(pack_checkpoint(o));
    EXPECT_NO_THROW(verify_packed(o));
  }
  // Flip one weight of blk.1.attn_k row 5 and one byte of output_norm.
  PackOptions o;
  o.input_dir = dir + "/ckpt";
  o.output_path = dir + "/out.gguf";
  o.type = TensorType::TQ1_0;
  const std::vector<uint8_t> good = read_bytes(o.output_path);
  std::vector<uint8_t> bad = good;
  // Parsing the in-memory copy gives data pointers into `good`.
  gguf::File f = gguf::File::parse(good, "mem");
  const gguf::TensorInfo* k = f.find_tensor("blk.1.attn_k.weight");
  const uint64_t rb = gguf::row_bytes(k->type, 256);
  const size_t row5 = static_cast<size_t>(k->data - good.data()) + 5 * rb;
  std::vector<int8_t> trits(256);
  uint16_t d = 0;
  unpack_ternary_row(k->type, &good[row5], 256, trits.data());
  row_block_scales(k->type, &good[row5], 256, &d);
  trits[17] = trits[17] == 1 ? 0 : 1;  // re-pack so the change is a real trit change
  pack_ternary_row(k->type, trits.data(), 256, d, &bad[row5]);
  write_bytes(o.output_path, bad);
  auto msg = error_of([&] { verify_packed(o); });
  EXPECT_NE(msg.find("tensor blk.1.attn_k.weight row 5"), std::string::npos) << msg;

  bad = good;
  const gguf::TensorInfo* n = f.find_tensor("output_norm.weight");
  bad[static_cast<size_t>(n->data - good.data()) + 4 * 7] ^= 0x01;
  write_bytes(o.output_path, bad);
  msg = error_of([&] { verify_packed(o); });
  EXPECT_NE(msg.find("tensor output_norm.weight row 0 element 7"), std::string::npos) << msg;
}

TEST(Packer, VocabPaddedToConfig) {
  auto dir = test_dir();
  Packed p = pack_tiny(dir, "--mode ternary --dtype f32 --vocab-pad 3 --seed 9");
  gguf::File f = gguf::File::open(p.out);
  EXPECT_EQ(u(f, "llama.vocab_size"), 515u);
  const auto& tokens = f.get("tokenizer.ggml.tokens").as_string_array("t");
  ASSERT_EQ(tokens.size(), 515u);
  EXPECT_EQ(tokens[514], "<unused_2>");
  EXPECT_EQ(f.get("tokenizer.ggml.token_type").as_i32_array("t")[514], 5);
  EXPECT_EQ(f.find_tensor("token_embd.weight")->dims, (std::vector<uint64_t>{256, 515}));

  // Padding survives verification; a trailing slash does not change general.name.
  PackOptions o;
  o.input_dir = p.ckpt + "/";
  o.output_path = dir + "/slash.gguf";
  o.verify = true;
  EXPECT_NO_THROW(pack_checkpoint(o));
  EXPECT_EQ(str(gguf::File::open(o.output_path), "general.name"), "ckpt");
}

// --output-type / --token-embedding-type (llama-quantize's idea): the head
// and embedding in the asked type, quantized as llama.cpp's reference
// quantizer does, checked by --verify; tied embeddings stay one tensor.
TEST(Packer, HeadAndEmbeddingTypes) {
  auto dir = test_dir();
  const std::string untied = make_checkpoint(dir + "/untied", "--mode bitnet --dtype f32 --untied --seed 9");
  const std::string tied = make_checkpoint(dir + "/tied", "--mode bitnet --dtype f32 --seed 10");
  auto pack = [&](const std::string& ckpt, std::optional<TensorType> head, std::optional<TensorType> embd) {
    PackOptions o;
    o.input_dir = ckpt;
    o.output_path = dir + "/out.gguf";
    o.output_type = head;
    o.embedding_type = embd;
    o.verify = true;
    pack_checkpoint(o);
    return gguf::File::open(o.output_path);
  };
  {
    const gguf::File f = pack(untied, TensorType::Q8_0, TensorType::BF16);
    EXPECT_EQ(f.find_tensor("output.weight")->type, TensorType::Q8_0);
    EXPECT_EQ(f.find_tensor("token_embd.weight")->type, TensorType::BF16);
    // Row 3 of the head is the source row quantized as llama.cpp does.
    const std::vector<float> src = source(untied, "lm_head.weight");
    const gguf::TensorInfo* t = f.find_tensor("output.weight");
    const uint64_t K = t->dims[0], rb = gguf::row_bytes(TensorType::Q8_0, K);
    std::vector<BlockQ8_0> want(K / QK8_0);
    quantize_q8_0_row(&src[3 * K], int64_t(K), want.data());
    EXPECT_EQ(std::memcmp(t->data + 3 * rb, want.data(), rb), 0);
    // BF16 from f32 rounds to nearest.
    const std::vector<float> emb = source(untied, "model.embed_tokens.weight");
    uint16_t stored;
    std::memcpy(&stored, f.find_tensor("token_embd.weight")->data + 2 * 5, 2);
    EXPECT_EQ(stored, f32_to_bf16_rne(emb[5]));
  }
  {
    const gguf::File f = pack(untied, TensorType::Q6_K, TensorType::Q6_K);
    EXPECT_EQ(f.find_tensor("token_embd.weight")->type, TensorType::Q6_K);
    const std::vector<float> src = source(untied, "lm_head.weight");
    const gguf::TensorInfo* t = f.find_tensor("output.weight");
    ASSERT_EQ(t->type, TensorType::Q6_K);
    const uint64_t K = t->dims[0], rb = gguf::row_bytes(TensorType::Q6_K, K);
    std::vector<BlockQ6_K> want(K / QK_K);
    quantize_q6_k_row(&src[3 * K], int64_t(K), want.data());
    EXPECT_EQ(std::memcmp(t->data + 3 * rb, want.data(), rb), 0);
  }
  {
    const gguf::File f = pack(tied, TensorType::Q8_0, std::nullopt);
    EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
    EXPECT_EQ(f.find_tensor("token_embd.weight")->type, TensorType::Q8_0);
  }
  {
    const gguf::File f = pack(tied, TensorType::F16, TensorType::F16);
    EXPECT_EQ(f.find_tensor("token_embd.weight")->type, TensorType::F16);
  }
  const std::string msg = error_of([&] { pack(tied, TensorType::Q8_0, TensorType::F16); });
  EXPECT_NE(msg.find("tied"), std::string::npos) << msg;
  EXPECT_THROW(pack(untied, TensorType::TQ2_0, std::nullopt), Error);
}
