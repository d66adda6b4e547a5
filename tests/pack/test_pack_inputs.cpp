// Unit tests of the packer's pieces: config.json, tokenizer.model and the
// ternarization / permutation math.
#include <gtest/gtest.h>

#include <cmath>

#include "pack/hf_config.h"
#include "pack/ternarize.h"
#include "pack_test_util.h"

using namespace tern::pack;
using namespace tern::pack::testing;

namespace {


std::string config_with(const std::string& dir, const std::string& extra) {
  std::string path = dir + "/config.json";
  write_text(path, R"({"architectures":["LlamaForCausalLM"],"hidden_size":256,)"
                   R"("intermediate_size":512,"num_hidden_layers":2,"num_attention_heads":4,)"
                   R"("vocab_size":512,"rms_norm_eps":1e-6,"max_position_embeddings":64)" +
                       extra + "}");
  return path;
}

}  // namespace

TEST(PackHfConfig, DefaultsAndValues) {
  auto dir = test_dir();
  HfConfig c = load_config(config_with(dir, ""));
  EXPECT_EQ(c.hidden_size, 256u);
  EXPECT_EQ(c.n_kv_heads, 4u);  // defaults to the head count
  EXPECT_EQ(c.head_dim, 64u);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.bos_token_id.has_value());
  EXPECT_FALSE(c.is_bitnet());

  c = load_config(config_with(dir, R"(,"num_key_value_heads":2,"head_dim":32,"rope_theta":500000,)"
                                   R"("tie_word_embeddings":true,"bos_token_id":5,"eos_token_id":[7,8],)"
                                   R"("quantization_config":{"quant_method":"bitnet"})"));
  EXPECT_EQ(c.n_kv_heads, 2u);
  EXPECT_EQ(c.head_dim, 32u);
  EXPECT_EQ(c.q_rows(), 128u);
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.0f);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 5u);
  EXPECT_EQ(c.eos_token_id, 7u);
  EXPECT_TRUE(c.is_bitnet());
}

TEST(PackHfConfig, Errors) {
  auto dir = test_dir();
  auto msg = error_of([&] { load_config(dir + "/config.json"); });
  EXPECT_NE(msg.find("config.json: not found"), std::string::npos) << msg;

  write_text(dir + "/config.json", "{\"hidden_size\": 256,\n");
  msg = error_of([&] { load_config(dir + "/config.json"); });
  EXPECT_NE(msg.find("config.json: invalid JSON"), std::string::npos) << msg;

  write_text(dir + "/config.json", R"({"architectures":["MistralForCausalLM"],"model_type":"mistral"})");
  msg = error_of([&] { load_config(dir + "/config.json"); });
  EXPECT_NE(msg.find("config.json: unsupported architecture 'MistralForCausalLM' (tern packs "
                     "LlamaForCausalLM, BitnetForCausalLM, BitNetForCausalLM, Qwen3ForCausalLM)"),
            std::string::npos) << msg;

  // 1bitLLM names its own class: the BitNet family, with its sub-norms.
  write_text(dir + "/config.json", R"({"architectures":["BitnetForCausalLM"],"model_type":"llama"})");
  msg = error_of([&] { load_config(dir + "/config.json"); });
  EXPECT_NE(msg.find("missing 'hidden_size'"), std::string::npos) << msg;

  msg = error_of([&] { load_config(config_with(dir, R"(,"num_key_value_heads":3)")); });
  EXPECT_NE(msg.find("not a multiple of num_key_value_heads 3"), std::string::npos) << msg;
  msg = error_of([&] { load_config(config_with(dir, R"(,"num_key_value_heads":-1)")); });
  EXPECT_NE(msg.find("'num_key_value_heads' must be a positive integer"), std::string::npos) << msg;
  msg = error_of([&] { load_config(config_with(dir, R"(,"rope_scaling":{"type":"linear","factor":2})")); });
  EXPECT_NE(msg.find("rope_scaling"), std::string::npos) << msg;
  msg = error_of([&] { load_config(config_with(dir, R"(,"quantization_config":{"quant_method":"gptq"})")); });
  EXPECT_NE(msg.find("quant_method 'gptq' is not supported"), std::string::npos) << msg;
  msg = error_of([&] {
    load_config(config_with(
        dir, R"(,"quantization_config":{"quant_method":"bitnet","use_rms_norm":true,"rms_norm_eps":-1})"));
  });
  EXPECT_NE(msg.find("quantization_config.rms_norm_eps must be a positive number"), std::string::npos) << msg;
  // Found by fuzz_hf_config: positive as a double, 0 or infinite as the f32
  // the model computes with.
  for (const char* eps : {R"(,"rms_norm_eps":1e-205)", R"(,"rope_theta":1e39)"}) {
    msg = error_of([&] { load_config(config_with(dir, eps)); });
    EXPECT_NE(msg.find("must be a positive number that fits in f32"), std::string::npos) << eps << ": " << msg;
  }
  msg = error_of([&] {
    load_config(config_with(dir, R"(,"quantization_config":{"quant_method":"bitnet","linear_class":"foo"})"));
  });
  EXPECT_NE(msg.find("linear_class 'foo' is not supported"), std::string::npos) << msg;
  msg = error_of([&] { load_config(config_with(dir, R"(,"hidden_act":"gelu")")); });
  EXPECT_NE(msg.find("hidden_act \"gelu\" is not supported (LlamaForCausalLM uses silu)"), std::string::npos) << msg;
}

// YaRN as transformers reads it: the explicit factor, the trained context
// from original_max_position_embeddings or else max_position_embeddings,
// betas only when the config overrides them.
TEST(PackHfConfig, YarnRopeScaling) {
  const std::string dir = test_dir();
  HfConfig c = load_config(config_with(dir, R"(,"rope_scaling":{"rope_type":"yarn","factor":4.0,)"
                                            R"("original_max_position_embeddings":32768})"));
  ASSERT_TRUE(c.yarn);
  EXPECT_EQ(c.yarn->factor, 4.0);
  EXPECT_EQ(c.yarn->original_ctx, 32768u);
  EXPECT_FALSE(c.yarn->beta_fast);
  c = load_config(config_with(dir, R"(,"rope_scaling":{"type":"yarn","factor":2,"beta_fast":16,"truncate":true})"));
  ASSERT_TRUE(c.yarn);
  EXPECT_EQ(c.yarn->original_ctx, c.max_position_embeddings);
  EXPECT_EQ(c.yarn->beta_fast, 16.0);
  EXPECT_FALSE(load_config(config_with(dir, R"(,"rope_scaling":{"rope_type":"default"})")).yarn);
}

// The family comes from architectures[0]; the weight_scale convention from
// linear_class, else the family's default.
TEST(PackHfConfig, FamilyAndScaleConvention) {
  auto dir = test_dir();
  HfConfig c = load_config(config_with(dir, R"(,"quantization_config":{"quant_method":"bitnet"})"));
  EXPECT_EQ(c.family->gguf_arch, "llama");
  EXPECT_EQ(c.scale_convention, tern::ScaleConvention::Divide);
  EXPECT_TRUE(c.int8_activations());
  c = load_config(config_with(dir, R"(,"quantization_config":{"quant_method":"bitnet","linear_class":"autobitlinear"})"));
  EXPECT_EQ(c.scale_convention, tern::ScaleConvention::Multiply);
  c = load_config(config_with(dir, ""));
  EXPECT_FALSE(c.int8_activations());  // TriLM: float activations
}

TEST(PackTernarize, AbsmeanRoundsHalfToEven) {
  // mean |w| = 1, so w * (1/s) = w: 0.5 -> 0, 1.5 -> 2 -> clamp 1, -0.5 -> -0.
  std::vector<float> w = {0.5f, -0.5f, 1.5f, -1.5f, 0.0f, 1.0f, 0.51f, -2.49f};
  float s = absmean_scale(w.data(), w.size());
  double mean = 0;
  for (float x : w) mean += std::fabs(x);
  EXPECT_EQ(s, static_cast<float>(mean / w.size()));
  std::vector<int8_t> t(w.size());
  std::vector<float> unit(w.size());
  for (size_t i = 0; i < w.size(); ++i) unit[i] = w[i];
  absmean_trits(unit.data(), unit.size(), 1.0f, t.data());
  EXPECT_EQ(t, (std::vector<int8_t>{0, 0, 1, -1, 0, 1, 1, -1}));
  std::vector<float> zeros(16, 0.0f);
  EXPECT_EQ(absmean_scale(zeros.data(), zeros.size()), 1e-5f);
}

TEST(PackTernarize, ExactRowScale) {
  float a = 0, b = 0;
  std::vector<float> ok = {0.25f, 0, -0.25f, 0.25f};
  EXPECT_EQ(exact_row_scale(ok.data(), ok.size(), &a, &b), 0.25f);
  std::vector<float> zero(4, 0.0f);
  EXPECT_EQ(exact_row_scale(zero.data(), zero.size(), &a, &b), 0.0f);
  std::vector<float> bad = {0.5f, 0, -0.5f, 0.25f};
  EXPECT_FALSE(exact_row_scale(bad.data(), bad.size(), &a, &b).has_value());
  EXPECT_EQ(a, 0.5f);
  EXPECT_EQ(b, 0.25f);
  std::vector<int8_t> t(4);
  sign_trits(bad.data(), 4, t.data());
  EXPECT_EQ(t, (std::vector<int8_t>{1, 0, -1, 1}));
}

TEST(PackTernarize, PermutationMatchesConverterReshape) {
  // numpy: W.reshape(n_head, 2, D/2, cols).swapaxes(1, 2).reshape(rows, cols),
  // evaluated by index arithmetic on the 4-D view.
  const uint32_t n_head = 3, D = 8, rows = n_head * D;
  auto perm = qk_row_permutation(rows, n_head);
  ASSERT_EQ(perm.size(), rows);
  uint32_t out = 0;
  for (uint32_t h = 0; h < n_head; ++h)           // axis 0
    for (uint32_t i = 0; i < D / 2; ++i)          // axis 1 after swap (was 2)
      for (uint32_t j = 0; j < 2; ++j, ++out)     // axis 2 after swap (was 1)
        EXPECT_EQ(perm[out], h * D + j * (D / 2) + i) << out;
  // Head 0, D = 8: rows 0,4,1,5,2,6,3,7.
  EXPECT_EQ(std::vector<uint32_t>(perm.begin(), perm.begin() + 8),
            (std::vector<uint32_t>{0, 4, 1, 5, 2, 6, 3, 7}));
}

TEST(PackTernarize, F16Exactness) {
  std::vector<float> yes = {1.0f, -0.5f, 65504.0f, 0.0f, -0.0f, 6.103515625e-05f};
  EXPECT_TRUE(fits_f16_exactly(yes.data(), yes.size()));
  std::vector<float> no = {1.0f, 1e-30f};
  EXPECT_FALSE(fits_f16_exactly(no.data(), no.size()));
  std::vector<float> big = {70000.0f};
  EXPECT_FALSE(fits_f16_exactly(big.data(), big.size()));
}
