// Every way packing must refuse, with the message it must give, and the
// guarantee that a refused pack leaves no output or temporary behind.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "pack/packer.h"
#include "tern/gguf.h"
#include "pack_test_util.h"

using namespace tern;
using namespace tern::pack;
using namespace tern::pack::testing;
using json = nlohmann::json;

namespace {

struct Fixture {
  std::string dir, ckpt, outdir, out;
};

Fixture setup(const std::string& args = "--mode ternary --dtype f32") {
  Fixture f;
  f.dir = test_dir();
  f.ckpt = make_checkpoint(f.dir + "/ckpt", args);
  f.outdir = f.dir + "/out";
  fs::create_directories(f.outdir);
  f.out = f.outdir + "/model.gguf";
  return f;
}

PackOptions opts(const Fixture& f) {
  PackOptions o;
  o.input_dir = f.ckpt;
  o.output_path = f.out;
  return o;
}

// Packing fails with a message containing `want`, and leaves nothing behind.
void expect_pack_error(const Fixture& f, const std::string& want, PackOptions o) {
  auto msg = error_of([&] { pack_checkpoint(o); });
  EXPECT_NE(msg.find(want), std::string::npos) << "got: " << msg;
  if (fs::exists(f.outdir)) {
    EXPECT_TRUE(list_dir(f.outdir).empty());
  }
}
void expect_pack_error(const Fixture& f, const std::string& want) {
  expect_pack_error(f, want, opts(f));
}

// Rewrites model.safetensors' JSON header, keeping the data bytes.
void edit_header(const std::string& path, const std::function<void(json&)>& edit) {
  auto b = read_bytes(path);
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  json h = json::parse(std::string(b.begin() + 8, b.begin() + 8 + static_cast<long>(n)));
  edit(h);
  std::string text = h.dump();
  std::vector<uint8_t> out(8);
  uint64_t m = text.size();
  std::memcpy(out.data(), &m, 8);
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), b.begin() + 8 + static_cast<long>(n), b.end());
  write_bytes(path, out);
}

// Removes a tensor with its bytes, moving the later ones down, so the file
// stays fully indexed as the format requires.
void drop_tensor(const std::string& path, const std::string& name) {
  auto b = read_bytes(path);
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  json h = json::parse(std::string(b.begin() + 8, b.begin() + 8 + static_cast<long>(n)));
  const uint64_t begin = h[name]["data_offsets"][0], end = h[name]["data_offsets"][1];
  h.erase(name);
  for (auto& [k, v] : h.items()) {
    if (k == "__metadata__" || v["data_offsets"][0].get<uint64_t>() < end) continue;
    v["data_offsets"][0] = v["data_offsets"][0].get<uint64_t>() - (end - begin);
    v["data_offsets"][1] = v["data_offsets"][1].get<uint64_t>() - (end - begin);
  }
  std::vector<uint8_t> data(b.begin() + 8 + static_cast<long>(n), b.end());
  data.erase(data.begin() + static_cast<long>(begin), data.begin() + static_cast<long>(end));
  const std::string text = h.dump();
  std::vector<uint8_t> out(8);
  const uint64_t m = text.size();
  std::memcpy(out.data(), &m, 8);
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), data.begin(), data.end());
  write_bytes(path, out);
}

void edit_config(const std::string& ckpt, const std::function<void(json&)>& edit) {
  json c = json::parse(read_text(ckpt + "/config.json"));
  edit(c);
  write_text(ckpt + "/config.json", c.dump());
}

// Overwrites f32 elements [row][col...] of a tensor in model.safetensors.
void poke(const std::string& ckpt, const std::string& name, uint64_t row, uint64_t col,
          const std::vector<float>& v) {
  const std::string path = ckpt + "/model.safetensors";
  auto b = read_bytes(path);
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  json h = json::parse(std::string(b.begin() + 8, b.begin() + 8 + static_cast<long>(n)));
  const uint64_t cols = h[name]["shape"][1].get<uint64_t>();
  const uint64_t at = 8 + n + h[name]["data_offsets"][0].get<uint64_t>() + 4 * (row * cols + col);
  std::memcpy(&b[at], v.data(), 4 * v.size());
  write_bytes(path, b);
}
void poke(const std::string& ckpt, const std::string& name, uint64_t row, uint64_t col, float v) {
  poke(ckpt, name, row, col, std::vector<float>{v});
}

}  // namespace

TEST(PackerErrors, MissingDirectory) {
  Fixture f = setup();
  PackOptions o = opts(f);
  o.input_dir = f.dir + "/nope";
  expect_pack_error(f, "/nope: no such directory", o);
  o.input_dir = f.ckpt + "/config.json";
  expect_pack_error(f, "config.json: not a directory", o);
}

TEST(PackerErrors, NoConfig) {
  Fixture f = setup();
  fs::remove(f.ckpt + "/config.json");
  expect_pack_error(f, "ckpt/config.json: not found");
}

TEST(PackerErrors, InvalidConfigJson) {
  Fixture f = setup();
  write_text(f.ckpt + "/config.json", "{\"hidden_size\": 256,\n\"vocab_size\": }\n");
  expect_pack_error(f, "config.json: invalid JSON: ");
}

TEST(PackerErrors, UnsupportedArchitecture) {
  Fixture f = setup();
  edit_config(f.ckpt, [](json& c) {
    c["architectures"] = {"GPT2LMHeadModel"};
    c["model_type"] = "gpt2";
  });
  expect_pack_error(f, "config.json: unsupported architecture 'GPT2LMHeadModel' (tern packs "
                       "LlamaForCausalLM, BitnetForCausalLM, BitNetForCausalLM, Qwen3ForCausalLM)");
}

// RoPE scalings tern does not compute, and YaRN keys that would change its
// arithmetic, are refused by name; a sliding window likewise.
TEST(PackerErrors, RopeScalingOtherThanPlainYarn) {
  Fixture f = setup();
  const std::pair<json, std::string> cases[] = {
      {{{"rope_type", "linear"}, {"factor", 2.0}}, "is not supported (tern runs yarn)"},
      {{{"rope_type", "llama3"}, {"factor", 8.0}}, "is not supported (tern runs yarn)"},
      {{{"rope_type", "yarn"}}, "rope_scaling of type yarn has no factor"},
      {{{"rope_type", "yarn"}, {"factor", 0.5}}, "rope_scaling.factor must be a number of at least 1"},
      {{{"type", "yarn"}, {"factor", 4.0}, {"attention_factor", 1.2}}, "rope_scaling.attention_factor 1.2 is not supported"},
      {{{"rope_type", "yarn"}, {"factor", 4.0}, {"truncate", false}}, "rope_scaling.truncate false is not supported"},
      {{{"rope_type", "yarn"}, {"factor", 4.0}, {"beta_fast", 0.5}}, "yarn needs beta_fast >= beta_slow > 0"},
      {{{"rope_type", "yarn"}, {"factor", 4.0}, {"short_factor", 1}}, "rope_scaling.short_factor is not a YaRN key"},
  };
  for (const auto& [scaling, want] : cases) {
    edit_config(f.ckpt, [&](json& c) { c["rope_scaling"] = scaling; });
    expect_pack_error(f, want);
  }
  edit_config(f.ckpt, [](json& c) {
    c.erase("rope_scaling");
    c["use_sliding_window"] = true;
  });
  expect_pack_error(f, "config.json: use_sliding_window is not supported");
}

TEST(PackerErrors, MissingTokenizer) {
  Fixture f = setup();
  fs::remove(f.ckpt + "/tokenizer.model");
  expect_pack_error(f, "ckpt: no tokenizer.json or tokenizer.model");
}

TEST(PackerErrors, MissingSafetensors) {
  Fixture f = setup();
  fs::remove(f.ckpt + "/model.safetensors");
  expect_pack_error(f, "ckpt/model.safetensors: not found");
}

TEST(PackerErrors, TruncatedSafetensors) {
  Fixture f = setup();
  const std::string path = f.ckpt + "/model.safetensors";
  const auto whole = read_bytes(path);
  write_bytes(path, std::vector<uint8_t>(whole.begin(), whole.begin() + 100));
  expect_pack_error(f, "model.safetensors: header length");
  write_bytes(path, std::vector<uint8_t>(whole.begin(), whole.begin() + whole.size() / 2));
  expect_pack_error(f, "past end of data");
}

TEST(PackerErrors, BadJsonHeader) {
  Fixture f = setup();
  const std::string path = f.ckpt + "/model.safetensors";
  auto b = read_bytes(path);
  b[8] = 'x';  // first byte of the header, was '{'
  write_bytes(path, b);
  expect_pack_error(f, "model.safetensors: invalid JSON header");
}

TEST(PackerErrors, UnsupportedDtype) {
  Fixture f = setup();
  // Same 1024 bytes, reinterpreted as 128 I64 values.
  edit_header(f.ckpt + "/model.safetensors", [](json& h) {
    h["model.layers.0.input_layernorm.weight"]["dtype"] = "I64";
    h["model.layers.0.input_layernorm.weight"]["shape"] = {128};
  });
  expect_pack_error(f, "model.safetensors: tensor 'model.layers.0.input_layernorm.weight' has "
                       "unsupported dtype I64");
}

TEST(PackerErrors, ShapeMismatchWithConfig) {
  Fixture f = setup();
  edit_config(f.ckpt, [](json& c) { c["intermediate_size"] = 768; });
  expect_pack_error(f, "model.safetensors: tensor 'model.layers.0.mlp.gate_proj.weight' has shape "
                       "[512, 256], expected [768, 256]");
}

TEST(PackerErrors, MissingTensor) {
  Fixture f = setup();
  drop_tensor(f.ckpt + "/model.safetensors", "model.layers.1.mlp.up_proj.weight");
  expect_pack_error(f, "model.safetensors: missing tensor 'model.layers.1.mlp.up_proj.weight'");
}

TEST(PackerErrors, UnexpectedTensor) {
  Fixture f = setup();
  edit_header(f.ckpt + "/model.safetensors", [](json& h) {
    h["model.layers.0.self_attn.q_proj.bias"] = {{"dtype", "F32"}, {"shape", {0}},
                                                 {"data_offsets", {0, 0}}};
  });
  expect_pack_error(f, "unexpected tensor 'model.layers.0.self_attn.q_proj.bias'");
}

TEST(PackerErrors, NonTernaryNamesTensorAndRow) {
  Fixture f = setup();
  poke(f.ckpt, "model.layers.0.self_attn.q_proj.weight", 3, 0, 0.5f);
  poke(f.ckpt, "model.layers.0.self_attn.q_proj.weight", 3, 1, -0.25f);
  expect_pack_error(f, "model.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight' row 3 is "
                       "not ternary (values 0.5 and 0.25): tern packs models trained ternary");
  // --ternarize quantizes it instead.
  PackOptions o = opts(f);
  o.force_ternarize = true;
  EXPECT_NO_THROW(pack_checkpoint(o));
  EXPECT_TRUE(fs::exists(f.out));
}

// Ternary Bonsai's rows: ternary, one scale per 128 weights. The message
// says what the row is and why it cannot be packed yet, not "not ternary".
TEST(PackerErrors, GroupScaledRowSaysSo) {
  Fixture f = setup();
  std::vector<float> row(256);
  for (size_t i = 0; i < row.size(); ++i) row[i] = float(int(i % 3) - 1) * (i < 128 ? 0.5f : 0.25f);
  poke(f.ckpt, "model.layers.0.self_attn.q_proj.weight", 3, 0, row);
  expect_pack_error(f, "row 3 is ternary with one scale per 128 weights (0.5 and 0.25), as Ternary Bonsai is");
}

TEST(PackerErrors, DenseNeedsTernarize) {
  Fixture f = setup("--mode dense --dtype bf16");
  expect_pack_error(f, "tensor 'model.layers.0.self_attn.q_proj.weight' row 0 is not ternary");
  PackOptions o = opts(f);
  o.force_ternarize = true;
  o.verify = true;
  PackReport r = pack_checkpoint(o);
  EXPECT_EQ(r.activation_mode, "float");
}

TEST(PackerErrors, FailureLateInThePackLeavesNothing) {
  Fixture f = setup();
  // The very last ternary tensor is bad: everything before it was processed.
  poke(f.ckpt, "model.layers.1.mlp.down_proj.weight", 255, 2, 1e9f);
  expect_pack_error(f, "tensor 'model.layers.1.mlp.down_proj.weight' row 255 is not ternary");
}

TEST(PackerErrors, ScaleOverflowsFp16) {
  Fixture f = setup();
  std::vector<float> row(256);
  for (size_t c = 0; c < row.size(); ++c) row[c] = c % 2 ? 1e6f : -1e6f;
  poke(f.ckpt, "model.layers.0.mlp.gate_proj.weight", 9, 0, row);
  expect_pack_error(f, "tensor 'model.layers.0.mlp.gate_proj.weight' row 9 scale 1000000 overflows");
}

TEST(PackerErrors, NonFiniteWeight) {
  Fixture f = setup();
  poke(f.ckpt, "model.layers.0.mlp.up_proj.weight", 4, 0, std::nanf(""));
  PackOptions o = opts(f);
  o.force_ternarize = true;
  expect_pack_error(f, "tensor 'model.layers.0.mlp.up_proj.weight' row 4 has a non-finite value", o);
}

TEST(PackerErrors, VocabSmallerThanTokenizer) {
  Fixture f = setup();
  edit_config(f.ckpt, [](json& c) { c["vocab_size"] = 500; });
  expect_pack_error(f, "config.json: vocab_size 500 is smaller than the 512 tokens of the tokenizer");
}

TEST(PackerErrors, OutputDirectoryNotWritable) {
  Fixture f = setup();
  PackOptions o = opts(f);
  o.output_path = f.dir + "/missing_dir/model.gguf";
  auto msg = error_of([&] { pack_checkpoint(o); });
  EXPECT_NE(msg.find("missing_dir"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(f.dir + "/missing_dir"));
  // A regular file where the directory should be (root ignores permission bits,
  // so this is the portable unwritable destination).
  write_text(f.outdir + "/file", "x");
  o.output_path = f.outdir + "/file/model.gguf";
  msg = error_of([&] { pack_checkpoint(o); });
  EXPECT_NE(msg.find("file/model.gguf"), std::string::npos) << msg;
  EXPECT_EQ(list_dir(f.outdir), std::vector<std::string>{"file"});
}

TEST(PackerErrors, WrongOutputType) {
  Fixture f = setup();
  PackOptions o = opts(f);
  o.type = gguf::TensorType::Q8_0;
  expect_pack_error(f, "output type must be TQ2_0, TQ1_0, PQ2_0 or Q2_0", o);
}

// The group types hold fp16 group scales: a float checkpoint ternary per
// row or group packs losslessly; a bitnet one (one f32 scale per tensor,
// which fp16 may round) stays a TQ type; a scale fp16 cannot hold is
// refused by tensor, row and group.
TEST(PackerErrors, GroupTypesNeedFp16ExactGroupScales) {
  Fixture f = setup("--mode bitnet");
  PackOptions o = opts(f);
  o.type = gguf::TensorType::PQ2_0;
  expect_pack_error(f, "--type PQ2_0 packs float checkpoints whose weights are ternary per group or per row; "
                       "this one's are absmean-per-tensor: use tq2_0 or tq1_0", o);
  // The f32 fixture's row scales are not fp16 values.
  Fixture g = setup();
  o = opts(g);
  o.type = gguf::TensorType::Q2_0;
  auto msg = error_of([&] { pack_checkpoint(o); });
  EXPECT_NE(msg.find("tensor 'model.layers.0.self_attn.q_proj.weight' row 0 group 0 (weights 0 to 63) has scale "),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("which fp16 cannot hold exactly (Q2_0 blocks store fp16 scales; tq2_0 keeps it exact)"),
            std::string::npos) << msg;
  std::vector<float> row(256);
  for (size_t i = 0; i < row.size(); ++i) row[i] = float(int(i % 3) - 1) * 0.5f;
  row[1] = 0.25f;
  poke(g.ckpt, "model.layers.0.self_attn.q_proj.weight", 0, 0, row);
  expect_pack_error(g, "row 0 group 0 (weights 0 to 63) is not ternary (values 0.5 and 0.25)", o);
}

// --fairy2i: a float LLaMA checkpoint only, even sides, finite values, 1-8 stages.
PackOptions fairy(const Fixture& f, int stages = 2) {
  PackOptions o = opts(f);
  o.fairy2i_stages = stages;
  return o;
}

TEST(PackerErrors, Fairy2iNeedsAFloatLlamaCheckpoint) {
  Fixture f = setup("--mode bitnet --dtype f32");
  expect_pack_error(f, "config.json: --fairy2i needs a float LlamaForCausalLM checkpoint", fairy(f));
}

TEST(PackerErrors, Fairy2iStagesOutOfRange) {
  Fixture f = setup("--mode dense --dtype f32");
  expect_pack_error(f, "--fairy2i-stages must be 1 to 8, not 9", fairy(f, 9));
}

TEST(PackerErrors, Fairy2iNeedsEvenSides) {
  Fixture f = setup("--mode dense --dtype f32 --intermediate 97");
  expect_pack_error(f, "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [97, 256]; Fairy2i splits", fairy(f));
}

TEST(PackerErrors, Fairy2iNonFiniteWeight) {
  Fixture f = setup("--mode dense --dtype f32");
  poke(f.ckpt, "model.layers.1.self_attn.o_proj.weight", 3, 5, std::numeric_limits<float>::infinity());
  expect_pack_error(f, "tensor 'model.layers.1.self_attn.o_proj.weight' row 3 has a non-finite value", fairy(f));
}

// Tied embeddings: the head is quantized from the embedding's values.
TEST(PackerErrors, Fairy2iTiedHeadIsQuantizedFromTheEmbedding) {
  Fixture f = setup("--mode dense --dtype f32 --tied");
  PackOptions o = fairy(f, 3);
  o.verify = true;
  pack_checkpoint(o);
  const gguf::File file = gguf::File::open(f.out);
  const gguf::TensorInfo* head = file.find_tensor("output.weight");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->type, gguf::TensorType::FAIRY2I);
  EXPECT_EQ(head->dims.size(), 3u);
  EXPECT_EQ(head->dims[2], 3u);
  EXPECT_EQ(file.find_tensor("token_embd.weight")->type, gguf::TensorType::F32);
  EXPECT_EQ(file.get("tern.scale.output.weight").as_f32_array("k").size(), 12u);
}
