// Whole-model tests: a tiny checkpoint made by tests/tools/make_tiny_checkpoint.py
// is packed by tern (the make_test_models fixture) and run; its logits must match tests/tools/ref_forward.py,
// an independent numpy implementation of the Hugging Face model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

#include "support/gguf_rewrite.h"
#include "support/logits.h"
#include "support/test_env.h"
#include "tern/error.h"
#include "tern/generate.h"
#include "tern/model.h"
#include "tern/tokenizer.h"

namespace fs = std::filesystem;
using tern::test::quote;

namespace {

using tern::test::rel_error;

const std::vector<int32_t> kTokens{1, 17, 250, 3, 99, 400, 7, 7, 12, 300, 45, 2, 64};

struct Packed {
  std::string checkpoint, tq2, tq1;
};

// The checkpoint of a mode and its TQ2_0 and TQ1_0 packs, made by the
// make_test_models fixture.
Packed packed(const std::string& mode) {
  const fs::path d = tern::test::test_models() / mode;
  return {(d / "hf").string(), (d / "tq2_0.gguf").string(), (d / "tq1_0.gguf").string()};
}

std::vector<float> reference_logits(const std::string& checkpoint,
                                   const std::vector<int32_t>& tokens = kTokens) {
  std::string csv;
  // Appended in two steps: "," + std::to_string(t) trips GCC 12's false
  // -Wrestrict on operator+(const char*, string&&).
  for (int32_t t : tokens) {
    if (!csv.empty()) csv += ',';
    csv += std::to_string(t);
  }
  const fs::path dir = tern::test::test_dir();
  const std::string out = (dir / "ref.bin").string();
  const auto r = tern::test::run(tern::test::python() + " " +
                                     quote(tern::test::source("tests/tools/ref_forward.py")) + " " +
                                     quote(checkpoint) + " " + csv + " " + quote(out),
                                 "ref", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out, std::ios::binary | std::ios::ate);
  std::vector<float> logits(size_t(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(logits.data()), std::streamsize(logits.size() * sizeof(float)));
  return logits;
}

std::vector<float> tern_logits(const std::string& path,
                               tern::FloatActs acts = tern::FloatActs::Int16) {
  tern::LoadOptions lo;
  lo.float_acts = acts;
  auto m = tern::Model::load(path, lo);
  tern::Context ctx(*m);
  auto s = ctx.forward(kTokens, 0, true);
  return {s.begin(), s.end()};
}

class WholeModel : public ::testing::TestWithParam<std::string> {};

TEST_P(WholeModel, LogitsMatchIndependentReference) {
  const Packed p = packed(GetParam());
  const auto ref = reference_logits(p.checkpoint);
  // ref_forward.py computes float activations exactly; int16 ones are held
  // to them in Int16Activations below.
  const auto got = tern_logits(p.tq2, tern::FloatActs::Exact);
  ASSERT_EQ(got.size(), ref.size());
  EXPECT_LT(rel_error(got, ref), 1e-4);
}

// A prompt that fills one tile of the value cache and part of the next
// (forward.cpp adds the tiles' products), past the tiny model's trained
// context (RoPE needs none): still the reference's logits at every
// position. In int8 mode reassociated sums move some activations across
// an int8 rounding step, amplified over the positions (1.06e-2 over 100
// positions both before the value cache was tiled and after); a misplaced
// value gives errors near 1.
TEST_P(WholeModel, LogitsMatchReferenceAcrossValueTiles) {
  const Packed p = packed(GetParam());
  const int n = tern::kKvPage + 100;
  std::vector<int32_t> tokens;
  for (int i = 0; i < n; ++i) tokens.push_back((kTokens[size_t(i * 5) % kTokens.size()] + 3 * i) % 512);
  const auto ref = reference_logits(p.checkpoint, tokens);
  tern::LoadOptions lo;
  lo.float_acts = tern::FloatActs::Exact;
  auto m = tern::Model::load(p.tq2, lo);
  tern::Context ctx(*m, {.ctx = n});
  ASSERT_EQ(ctx.n_ctx(), n);
  auto s = ctx.forward(tokens, 0, true);
  const std::vector<float> got(s.begin(), s.end());
  ASSERT_EQ(got.size(), ref.size());
  EXPECT_LT(rel_error(got, ref), m->config().act_mode == tern::ActMode::Int8 ? 3e-2 : 1e-4);
}

// A half-precision KV cache rounds every key and value once (F16: 2^-11
// relative, BF16: 2^-8), so the logits stay near the reference, and the two
// caches can be mixed. In int8 mode a rounded attention output can move an
// activation across an int8 rounding step, which the next layers amplify:
// the tiny random checkpoint then moves by about 2.5% (the bundled model's
// perplexity by 0.004%, docs/PERFORMANCE.md).
TEST_P(WholeModel, HalfPrecisionKvCacheStaysNearTheReference) {
  const Packed p = packed(GetParam());
  const auto ref = reference_logits(p.checkpoint);
  using tern::gguf::TensorType;
  const std::pair<TensorType, TensorType> caches[] = {
      {TensorType::F16, TensorType::F16}, {TensorType::BF16, TensorType::BF16}, {TensorType::F16, TensorType::F32}};
  for (auto [k, v] : caches) {
    auto m = tern::Model::load(p.tq2);
    tern::Context ctx(*m, {.cache_type_k = k, .cache_type_v = v});
    EXPECT_EQ(ctx.kv_bytes_at(0), int64_t(m->config().n_layers) * m->config().kv_dim() *
                                     (k == TensorType::F32 ? 4 : 2) + int64_t(m->config().n_layers) *
                                     m->config().kv_dim() * (v == TensorType::F32 ? 4 : 2));
    auto s = ctx.forward(kTokens, 0, true);
    const std::vector<float> got(s.begin(), s.end());
    ASSERT_EQ(got.size(), ref.size());
    const double err = rel_error(got, ref);
    const bool int8 = m->config().act_mode == tern::ActMode::Int8;
    EXPECT_LT(err, int8 ? 6e-2 : k == TensorType::BF16 ? 2e-2 : 2e-3) << int(k) << " " << int(v);
    EXPECT_GT(err, 0.0);
  }
  auto m = tern::Model::load(p.tq2);
  EXPECT_THROW(tern::Context(*m, {.cache_type_k = TensorType::Q8_0}), tern::Error);
}

TEST_P(WholeModel, Tq2AndTq1GiveIdenticalLogits) {
  const Packed p = packed(GetParam());
  EXPECT_EQ(tern_logits(p.tq2), tern_logits(p.tq1));
}

TEST_P(WholeModel, IncrementalDecodingMatchesOneBatch) {
  const Packed p = packed(GetParam());
  auto m = tern::Model::load(p.tq2);
  tern::Context ctx(*m);
  const auto batch = tern_logits(p.tq2);
  const size_t V = size_t(m->config().vocab_size);
  for (size_t i = 0; i < kTokens.size(); ++i) {
    auto s = ctx.forward(std::span<const int32_t>(&kTokens[i], 1), int(i), false);
    std::vector<float> one(s.begin(), s.end()), want(batch.begin() + i * V, batch.begin() + (i + 1) * V);
    EXPECT_LT(rel_error(one, want), 1e-5) << "position " << i;
  }
}

// Once its first product has checked it, the head leaves the file's mapping
// for pages of its own (Model::move_head), the tied embedding with it; the
// logits after the move equal, bit for bit, those of a model read whole
// (--no-mmap), whose head never moves.
TEST_P(WholeModel, HeadMovedOffTheMappingKeepsTheLogits) {
  const Packed p = packed(GetParam());
  auto mapped = tern::Model::load(p.tq2);
  tern::LoadOptions whole;
  whole.use_mmap = false;
  auto read = tern::Model::load(p.tq2, whole);
  tern::Context mapped_ctx(*mapped), read_ctx(*read);
  const auto* begin = static_cast<const uint8_t*>(mapped->weights().output.data);
  const tern::gguf::File& f = mapped->file();
  const auto in_file = [&](const void* q) {
    const auto* b = static_cast<const uint8_t*>(q);
    return std::any_of(f.tensors().begin(), f.tensors().end(),
                       [&](const tern::gguf::TensorInfo& t) { return b >= t.data && b < t.data + t.nbytes; });
  };
  ASSERT_TRUE(in_file(begin));
  for (size_t i = 0; i < kTokens.size(); ++i) {
    const std::span<const int32_t> t(&kTokens[i], 1);
    auto a = mapped_ctx.forward(t, int(i), false);
    const std::vector<float> got(a.begin(), a.end());
    auto b = read_ctx.forward(t, int(i), false);
    ASSERT_EQ(std::memcmp(got.data(), b.data(), got.size() * sizeof(float)), 0) << "position " << i;
    EXPECT_EQ(in_file(mapped->head().data), i == 0) << "position " << i;
  }
}

// A prompt longer than a block of attention queries (forward.cpp batches up
// to 16 tokens per KV head over the positions the last one sees) and than
// a tile of the value cache, stored across the tiles' boundary: every
// token's logits equal those of decoding it alone, bit for bit, in each KV
// cache type, also when the batch starts past position 0, and so do those
// of a batch of one block.
TEST_P(WholeModel, AttentionInQueryBlocksEqualsTokenByToken) {
  const Packed p = packed(GetParam());
  std::vector<int32_t> tokens;
  const int n = tern::kKvPage + 44;
  for (int i = 0; i < n; ++i) tokens.push_back((kTokens[size_t(i * 7) % kTokens.size()] + i) % 512);
  for (auto type : {tern::gguf::TensorType::F32, tern::gguf::TensorType::F16}) {
    auto m = tern::Model::load(p.tq2);
    tern::Context ctx(*m, {.ctx = n, .cache_type_k = type, .cache_type_v = type});
    const size_t V = size_t(m->config().vocab_size);
    // Three tokens are one block, whose attention items RoPE and store
    // their own heads; the rest are many blocks, stored in a pass before
    // them.
    const auto s3 = ctx.forward(std::span<const int32_t>(tokens.data(), 3), 0, true);
    const std::vector<float> first(s3.begin(), s3.end());
    const auto s = ctx.forward(std::span<const int32_t>(tokens.data() + 3, tokens.size() - 3), 3, true);
    const std::vector<float> batch(s.begin(), s.end());
    for (size_t i = 3; i < tokens.size(); ++i) {
      auto one = ctx.forward(std::span<const int32_t>(&tokens[i], 1), int(i), false);
      ASSERT_EQ(std::memcmp(one.data(), batch.data() + (i - 3) * V, V * sizeof(float)), 0)
          << "position " << i << " cache type " << int(type);
    }
    for (size_t i = 0; i < 3; ++i) {
      auto one = ctx.forward(std::span<const int32_t>(&tokens[i], 1), int(i), false);
      ASSERT_EQ(std::memcmp(one.data(), first.data() + i * V, V * sizeof(float)), 0)
          << "position " << i << " cache type " << int(type);
    }
  }
}

TEST_P(WholeModel, GreedyGenerationIsDeterministic) {
  const Packed p = packed(GetParam());
  auto once = [&] {
    auto m = tern::Model::load(p.tq2);
    tern::Context ctx(*m);
    tern::Tokenizer tok(m->file());
    tern::Sampler s({.temp = 0.0f, .top_k = 40, .top_p = 0.95f, .seed = 1});
    std::string text;
    tern::generate(ctx, tok, "In the beginning", tern::GenerateOptions{24}, s, [&](const std::string& t) { text += t; });
    return text;
  };
  const std::string a = once();
  EXPECT_EQ(a, once());
}

// Same seed, same input, same text on every kernel path the model's
// activation mode can take (float kernels differ from scalar only by
// reassociation, far below the gaps between these logits); a float model
// both with int16 activations (on the int8 kernels) and exact ones.
TEST_P(WholeModel, GreedyTextIsTheSameOnEveryKernel) {
  const Packed p = packed(GetParam());
  auto text_on = [&](const char* kernel, tern::FloatActs acts) {
    tern::LoadOptions lo;
    lo.kernel = kernel;
    lo.float_acts = acts;
    auto m = tern::Model::load(p.tq2, lo);
    tern::Context ctx(*m);
    tern::Tokenizer tok(m->file());
    tern::Sampler s({.temp = 0.0f, .top_k = 40, .top_p = 0.95f, .seed = 1});
    std::string text;
    tern::generate(ctx, tok, "In the beginning", tern::GenerateOptions{24}, s, [&](const std::string& t) { text += t; });
    return std::pair{text, std::string(m->kernels().name)};
  };
  const tern::ActMode mode = tern::Model::load(p.tq2)->config().act_mode;
  int ran = 0;
  for (tern::FloatActs acts : {tern::FloatActs::Int16, tern::FloatActs::Exact}) {
    const tern::ActMode kernel_mode =
        mode == tern::ActMode::Int8 || acts == tern::FloatActs::Int16 ? tern::ActMode::Int8 : tern::ActMode::Float;
    const auto want = text_on("scalar", acts);
    for (const tern::KernelSet* k : tern::all_kernel_sets()) {
      if (!k->available(tern::cpu_features()) || !tern::kernel_supports(*k, kernel_mode)) continue;
      const auto [text, used] = text_on(k->name, acts);
      EXPECT_EQ(used, k->name);
      EXPECT_EQ(text, want.first) << k->name;
      ++ran;
    }
    if (mode == tern::ActMode::Int8) break;  // it has one mode only
  }
  EXPECT_GE(ran, 1);
}

// A float model's int16 activations: the int8 sums are exact, so the logits
// are the same bit for bit on every kernel set, and they stay near the
// exact float run. Each input is off by up to max|x| / 65024; this random
// model's activations have outliers far above their rms, and its logits
// move by 1.7e-4 (relative to the largest). The bar that matters is the
// trained model's perplexity (ShippedModel.Int16ActivationsKeepFloatPerplexity)
// and reference.py's int16 variant (Families.LogitsMatchReference).
TEST(Int16Activations, SameLogitsOnEveryKernelAndNearExact) {
  const Packed p = packed("ternary");
  auto logits = [&](const char* kernel, tern::FloatActs acts) {
    tern::LoadOptions lo;
    lo.kernel = kernel;
    lo.float_acts = acts;
    auto m = tern::Model::load(p.tq2, lo);
    EXPECT_EQ(m->int16_activations(), acts == tern::FloatActs::Int16);
    tern::Context ctx(*m);
    auto s = ctx.forward(kTokens, 0, true);
    return std::vector<float>(s.begin(), s.end());
  };
  const auto exact = logits("scalar", tern::FloatActs::Exact);
  const auto want = logits("scalar", tern::FloatActs::Int16);
  const double err = rel_error(want, exact);
  EXPECT_LT(err, 1e-3);
  EXPECT_GT(err, 0.0);  // it did quantize
  int ran = 0;
  for (const tern::KernelSet* k : tern::all_kernel_sets()) {
    if (!k->available(tern::cpu_features()) || !tern::kernel_supports(*k, tern::ActMode::Int8)) continue;
    EXPECT_EQ(logits(k->name, tern::FloatActs::Int16), want) << k->name;
    ++ran;
  }
  EXPECT_GE(ran, 2);
  // An int8 model quantizes as it was trained, whatever the option says.
  tern::LoadOptions lo;
  lo.float_acts = tern::FloatActs::Exact;
  EXPECT_FALSE(tern::Model::load(packed("bitnet").tq2, lo)->int16_activations());
}

// --kernel auto times the int8-capable sets on each distinct linear shape
// and runs every linear on its shape's fastest; decode times within
// kDisplaceMargin of the fastest tie, and ties go to the fastest on a
// prompt batch (within the margin, the earlier set). The sums are exact,
// so the logits are those of any single set, bit for bit.
TEST(KernelAuto, TimesEachShapeOnceAndKeepsTheLogits) {
  for (const char* mode : {"bitnet", "ternary"}) {  // int8, and int16 activations
    const Packed p = packed(mode);
    tern::LoadOptions lo;
    lo.kernel = "auto";
    auto m = tern::Model::load(p.tq2, lo);
    const auto choices = m->kernel_choices();
    ASSERT_FALSE(choices.empty()) << mode;
    // One candidate per decode loop (a set with decodes_as times as that set).
    std::vector<std::string_view> loops;
    for (const tern::KernelSet* k : tern::all_kernel_sets()) {
      const std::string_view loop = k->decodes_as ? k->decodes_as : k->name;
      if (k->available(tern::cpu_features()) && tern::kernel_supports(*k, tern::ActMode::Int8) &&
          std::find(loops.begin(), loops.end(), loop) == loops.end())
        loops.push_back(loop);
    }
    const int candidates = int(loops.size());
    for (size_t i = 0; i < choices.size(); ++i) {
      const tern::KernelChoice& c = choices[i];
      for (size_t j = 0; j < i; ++j)
        EXPECT_FALSE(choices[j].rows == c.rows && choices[j].cols == c.cols && choices[j].type == c.type);
      // Every candidate but the scalar oracle (timed only when alone).
      EXPECT_EQ(int(c.seconds.size()), std::max(1, candidates - 1));
      double best = 1e30;
      for (const auto& [set, sec] : c.seconds) {
        EXPECT_GT(sec, 0.0) << set->name;
        best = std::min(best, sec);
      }
      // The chosen set's decode ties the fastest; so does every set timed
      // on a prompt, and those are all the sets that tie.
      std::vector<const tern::KernelSet*> tied;
      for (const auto& [set, sec] : c.seconds)
        if (sec * (1 - tern::kDisplaceMargin) <= best) tied.push_back(set);
      EXPECT_NE(std::find(tied.begin(), tied.end(), c.chosen), tied.end()) << c.chosen->name;
      if (tied.size() == 1) {
        EXPECT_TRUE(c.prompt_seconds.empty());
      } else {
        ASSERT_EQ(c.prompt_seconds.size(), tied.size());
        double fastest_prompt = 1e30;
        for (size_t t = 0; t < tied.size(); ++t) {
          EXPECT_EQ(c.prompt_seconds[t].first, tied[t]);
          EXPECT_GT(c.prompt_seconds[t].second, 0.0);
          fastest_prompt = std::min(fastest_prompt, c.prompt_seconds[t].second);
        }
        // The first tied set, displaced only by one more than the margin
        // faster on the prompt; so within the margin of the fastest.
        const std::pair<const tern::KernelSet*, double>* pick = &c.prompt_seconds[0];
        for (const auto& t : c.prompt_seconds)
          if (t.second < pick->second * (1 - tern::kDisplaceMargin)) pick = &t;
        EXPECT_EQ(c.chosen, pick->first) << c.chosen->name;
        EXPECT_LE(pick->second * (1 - tern::kDisplaceMargin), fastest_prompt);
      }
    }
    // Each linear runs on its shape's choice.
    for (const tern::LayerWeights& L : m->weights().layers)
      for (const tern::Linear* l : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
        const tern::KernelSet* want = nullptr;
        for (const tern::KernelChoice& c : choices)
          if (c.fits(l->w)) want = c.chosen;
        EXPECT_EQ(l->kernels, want);
      }
    tern::Context ctx(*m);
    auto s = ctx.forward(kTokens, 0, true);
    EXPECT_EQ(std::vector<float>(s.begin(), s.end()), tern_logits(p.tq2)) << mode;
  }
  // Float kernels round differently, so exact float activations are not tuned.
  tern::LoadOptions lo;
  lo.kernel = "auto";
  lo.float_acts = tern::FloatActs::Exact;
  EXPECT_TRUE(tern::Model::load(packed("ternary").tq2, lo)->kernel_choices().empty());
}

// A kernel set named on the command line that has no int8 path cannot run
// int16 activations: the error says how to get its float path.
TEST(Int16Activations, FloatOnlyKernelNamesTheWayOut) {
  const tern::KernelSet* float_only = nullptr;
  for (const tern::KernelSet* k : tern::all_kernel_sets())
    if (k->available(tern::cpu_features()) && !tern::kernel_supports(*k, tern::ActMode::Int8)) float_only = k;
  if (!float_only) GTEST_SKIP() << "no float-only kernel set runs on this CPU";
  tern::LoadOptions lo;
  lo.kernel = float_only->name;
  try {
    tern::Model::load(packed("ternary").tq2, lo);
    FAIL() << "loaded";
  } catch (const tern::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--float-act f32"), std::string::npos) << e.what();
  }
  lo.float_acts = tern::FloatActs::Exact;
  EXPECT_EQ(std::string(tern::Model::load(packed("ternary").tq2, lo)->kernels().name), float_only->name);
}

// bitnet: int8 activations; ternary: float; bf16: float with a BF16 output head.
INSTANTIATE_TEST_SUITE_P(Checkpoints, WholeModel, ::testing::Values("bitnet", "ternary", "bf16"),
                         [](const auto& info) {
                           return info.param == "bitnet" ? "Int8" : info.param == "ternary" ? "Float" : "Bf16Head";
                         });

TEST(ModelLoad, ReportsActivationModeFromFile) {
  EXPECT_EQ(tern::Model::load(packed("bitnet").tq2)->config().act_mode, tern::ActMode::Int8);
  EXPECT_EQ(tern::Model::load(packed("ternary").tq1)->config().act_mode, tern::ActMode::Float);
}

// The head is checked by its first product (Model::check_head): a finite
// row whose logit overflows is read again and let be, not taken for NaN in
// the file.
TEST(ModelLoad, OverflowingFiniteHeadRowIsNotABadFile) {
  const std::string big = (tern::test::test_dir() / "overflow.gguf").string();
  tern::test::rewrite_file(
      packed("bitnet").tq2, big, {},
      [&](const tern::gguf::TensorInfo& t, const tern::gguf::File&, tern::gguf::TensorType& type,
          std::vector<uint8_t>& b) {
        if (t.name != "token_embd.weight") return;  // tied: also the head
        ASSERT_EQ(type, tern::gguf::TensorType::F32);
        const size_t cols = size_t(t.dims[0]);
        for (size_t k = 0; k < cols; ++k) {  // the last row, no token of kTokens
          const float v = 3e38f;
          std::memcpy(b.data() + b.size() - 4 * (cols - k), &v, 4);
        }
      },
      tern::test::TernKeys::Keep);
  auto m = tern::Model::load(big);
  tern::Context ctx(*m);
  const auto logits = ctx.forward(kTokens, 0, false);
  EXPECT_FALSE(std::isfinite(logits.back()));
  for (size_t r = 0; r + 1 < logits.size(); ++r) ASSERT_TRUE(std::isfinite(logits[r])) << r;
}

TEST(ModelLoad, ContextOverflowIsAnError) {
  auto m = tern::Model::load(packed("ternary").tq2);
  tern::Context ctx(*m, {.ctx = 4});
  const std::vector<int32_t> five{1, 2, 3, 4, 5};
  EXPECT_THROW(ctx.forward(five, 0, false), tern::Error);
}

TEST(ModelLoad, TokenOutsideVocabularyIsAnError) {
  auto m = tern::Model::load(packed("ternary").tq2);
  tern::Context ctx(*m);
  const std::vector<int32_t> bad{1, 1 << 20};
  EXPECT_THROW(ctx.forward(bad, 0, false), tern::Error);
}

}  // namespace
