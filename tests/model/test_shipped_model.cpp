// The bundled model (models/, trained by tools/train). The packer must
// reproduce the shipped files byte for byte, so packer and model never drift
// apart; tern must agree with the PyTorch training code's own evaluation
// (models/kjv-bitnet-6m/eval.json); and its greedy text is pinned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include "pack/packer.h"
#include "support/gguf_rewrite.h"
#include "support/test_env.h"
#include "tern/generate.h"
#include "tern/kernels.h"
#include "tern/context.h"
#include "tern/model.h"
#include "tern/tokenizer.h"

namespace fs = std::filesystem;

namespace {

const fs::path kModels = fs::path(TERN_SOURCE_DIR) / "models";
const std::string kCheckpoint = (kModels / "kjv-bitnet-6m").string();
const std::string kTq2 = (kModels / "kjv-bitnet-6m-tq2_0.gguf").string();
const std::string kTq1 = (kModels / "kjv-bitnet-6m-tq1_0.gguf").string();

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ShippedModel, PackReproducesShippedFilesByteForByte) {
  const fs::path dir = tern::test::test_dir();
  for (auto [type, shipped] : {std::pair{tern::gguf::TensorType::TQ2_0, kTq2},
                               std::pair{tern::gguf::TensorType::TQ1_0, kTq1}}) {
    tern::pack::PackOptions o;
    o.input_dir = kCheckpoint;
    o.output_path = (dir / fs::path(shipped).filename()).string();
    o.type = type;
    tern::pack::pack_checkpoint(o);
    const std::string want = slurp(shipped), got = slurp(o.output_path);
    ASSERT_FALSE(want.empty()) << shipped;
    EXPECT_TRUE(got == want) << shipped << " differs from a fresh pack of " << kCheckpoint
                             << " (" << got.size() << " vs " << want.size() << " bytes)";
  }
}

// The reference vector the PyTorch evaluation wrote into eval.json for
// "In the beginning God created the heaven and the earth.".
const std::vector<int32_t> kRefIds{1, 1021, 261, 2236, 394, 3360, 261, 763, 270, 261, 642, 4057};
const std::vector<int32_t> kRefArgmax{4049, 261, 499, 4049, 271, 261, 819, 4049, 642, 642, 4057, 13};
const std::vector<std::pair<int32_t, float>> kRefLastTop5{
    {13, 14.5598f}, {300, 9.0147f}, {2410, 8.6796f}, {2760, 8.0174f}, {509, 7.7069f}};

TEST(ShippedModel, AgreesWithPyTorchOnAVerse) {
  auto m = tern::Model::load(kTq2);
  tern::Context ctx(*m);
  tern::Tokenizer tok(m->file());
  EXPECT_EQ(tok.encode("In the beginning God created the heaven and the earth."), kRefIds);
  auto logits = ctx.forward(kRefIds, 0, true);
  const size_t V = size_t(m->config().vocab_size);
  for (size_t i = 0; i < kRefIds.size(); ++i) {
    const float* row = logits.data() + i * V;
    EXPECT_EQ(std::max_element(row, row + V) - row, kRefArgmax[i]) << "position " << i;
  }
  // Int8 rounding flips between the two implementations move logits by a
  // few hundredths; the training code measured up to 0.1 at magnitude ~15.
  const float* last = logits.data() + (kRefIds.size() - 1) * V;
  for (auto [id, value] : kRefLastTop5) EXPECT_NEAR(last[id], value, 0.1f) << "token " << id;
}

TEST(ShippedModel, Tq2AndTq1GiveIdenticalLogits) {
  auto a = tern::Model::load(kTq2), b = tern::Model::load(kTq1);
  tern::Context ctx_a(*a), ctx_b(*b);
  auto la = ctx_a.forward(kRefIds, 0, true);
  const std::vector<float> first(la.begin(), la.end());
  auto lb = ctx_b.forward(kRefIds, 0, true);
  EXPECT_TRUE(std::equal(first.begin(), first.end(), lb.begin(), lb.end()));
}

std::string greedy_text(const std::string& path, const std::string& kernel = "") {
  tern::LoadOptions lo;
  lo.kernel = kernel;
  auto m = tern::Model::load(path, lo);
  tern::Context ctx(*m);
  tern::Tokenizer tok(m->file());
  tern::Sampler greedy({.temp = 0.0f, .top_k = 40, .top_p = 0.95f, .seed = 0});
  std::string text;
  tern::generate(ctx, tok, "And Jesus said unto them", tern::GenerateOptions{24}, greedy,
                 [&](const std::string& t) { text += t; });
  return text;
}

const char* const kGolden = ", I am not worthy to be.\nAnd he said unto them, I am not worthy of you: for";

TEST(ShippedModel, GreedyContinuationIsGolden) { EXPECT_EQ(greedy_text(kTq2), kGolden); }

// Int8 sums are exact on every kernel, so the text cannot depend on the path.
TEST(ShippedModel, GreedyTextIsTheSameOnEveryKernel) {
  for (const tern::KernelSet* k : tern::all_kernel_sets()) {
    if (!k->available(tern::cpu_features()) || !tern::kernel_supports(*k, tern::ActMode::Int8))
      continue;
    for (const std::string& path : {kTq2, kTq1})
      EXPECT_EQ(greedy_text(path, k->name), kGolden) << k->name << " " << path;
  }
}

TEST(ShippedModel, RevelationPerplexityMatchesPyTorch) {
  auto m = tern::Model::load(kTq2);
  tern::Tokenizer tok(m->file());
  const auto tokens = tok.encode(slurp((kModels / "revelation.txt").string()));
  ASSERT_EQ(tokens.size(), 16115u);  // eval.json's count
  // The first 8 chunks keep the test quick; eval.txt's running value after
  // chunk 8 is 37.2966 (and 33.5773 over all 62 chunks).
  const auto r = tern::perplexity(*m, {}, tokens, tok.bos(), 256, 8, nullptr);
  EXPECT_EQ(r.n_chunks, 8);
  EXPECT_NEAR(r.ppl, 37.2966, 37.2966 * 0.005);
}

// The model switched to float activations is a trained float-activation
// model (the ternary weights see x itself, not its int8 rounding), the
// case of TriLM: int16 activations must keep its perplexity on all of
// Revelation within 0.01% of exact float, the bar issue 11 set for them.
TEST(ShippedModel, Int16ActivationsKeepFloatPerplexity) {
  const std::string float_file = (tern::test::test_dir() / "kjv-float.gguf").string();
  tern::test::rewrite_file(kTq2, float_file, {}, [](auto&&...) {}, tern::test::TernKeys::Keep,
                           {{"tern.activation_mode", tern::gguf::Value::string("float")}});
  double ppl[2] = {0, 0};
  for (tern::FloatActs acts : {tern::FloatActs::Exact, tern::FloatActs::Int16}) {
    tern::LoadOptions lo;
    lo.float_acts = acts;
    auto m = tern::Model::load(float_file, lo);
    ASSERT_EQ(m->int16_activations(), acts == tern::FloatActs::Int16);
    tern::Tokenizer tok(m->file());
    const auto tokens = tok.encode(slurp((kModels / "revelation.txt").string()));
    ppl[int(acts == tern::FloatActs::Int16)] = tern::perplexity(*m, {}, tokens, tok.bos(), 256, -1, nullptr).ppl;
  }
  std::printf("[measure] Revelation perplexity, float activations: exact %.6f, int16 %.6f, ratio-1 %.3g\n",
              ppl[0], ppl[1], ppl[1] / ppl[0] - 1);
  EXPECT_NEAR(ppl[1] / ppl[0], 1.0, 1e-4);
  EXPECT_NE(ppl[1], ppl[0]);  // the int16 run did quantize
}

}  // namespace
