// llama.cpp reads tern's TQ2_0/TQ1_0 files as the same model. The goldens
// (tests/data/llamacpp_ppl_goldens.json, made by hand with
// tests/tools/make_llamacpp_ppl_goldens.sh through node-llama-cpp: CPU,
// default f16 KV cache) hold llama.cpp's perplexity of the text the family
// tests sample from the reference (reference.py sample --seed 1 --n 63
// --prompt 1; ids 1..63 scored, one sequence) on both packs of each family
// llama.cpp loads (arch llama: falcon3, llama3-1.58, trilm). CI needs no node.
//
// llama.cpp does not compute what the families' reference code computes:
// its TQ matmuls quantize the input to q8_K (one scale per 256 values), it
// uses the fp16 block scale, an f16 KV cache and f16 activations into the F16
// head (tests/tools/llamacpp_ppl_results.md). So tern (== reference.py) is
// only near the golden, while reference.py --mutate llamacpp, the same
// checkpoint in llama.cpp's arithmetic, must match it closely: a file that
// llama.cpp read as a different model (scale, row order, RoPE, norms, head)
// would not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "support/family_reference.h"
#include "support/test_env.h"
#include "tern/context.h"
#include "tern/model.h"

namespace fs = std::filesystem;
using tern::test::quote;
using tern::test::param_name;
using tern::test::perplexity;
using tern::test::reference_ids;
using tern::test::reference_logits;
const auto checkpoint = tern::test::family_checkpoint;

namespace {

// Per family: how far tern and reference.py --mutate llamacpp may be from
// llama.cpp's golden perplexity.
struct Bound {
  const char* family;
  // tern (== reference.py: test_families holds it to 0.1%) against llama.cpp:
  // the arithmetic differences above, as measured on this text plus margin.
  double tern;
  const char* why;
  // reference.py --mutate llamacpp against llama.cpp: the measured residual
  // plus the scatter of float noise. Flipping the last bit of 30% of the
  // values out of every RMSNorm and RoPE and into every f16 rounding (40
  // draws; another numpy or BLAS evaluates floats in another order) moves
  // the emulation by up to 0.60% (falcon3: q8_K codes and f16 values sit on
  // rounding boundaries, and this random model amplifies a flip), 0.24%
  // (llama3-1.58) and 0.058% (trilm). A misread file moves it by far more
  // (llamacpp_ppl_results.md).
  double emulation;
};
const Bound kBounds[] = {
    // q8_K equals tern's per-token int8 on 256-wide inputs and differs on
    // ffn_down's 512; fp16 block scale, f16 KV. Measured +0.77%.
    // Emulation measured +0.234%, with noise between +0.063% and +0.829%.
    {"falcon3", 0.02, "q8_K on 512-wide inputs, fp16 scale, f16 KV (measured +0.77%)", 0.01},
    // Measured -1.14%. Emulation -0.246%, with noise -0.485% .. -0.125%.
    {"llama3-1.58", 0.02, "q8_K on 512-wide inputs, fp16 scale, f16 KV (measured -1.14%)", 0.01},
    // Float activations in tern, q8_K on every linear in llama.cpp: measured
    // -11.45% (and -11.4% on another text, llamacpp_ppl_results.md).
    // Emulation -0.009%, with noise -0.067% .. 0.
    {"trilm", 0.13, "q8_K instead of float activations (measured -11.45%)", 0.0015},
    // Ternary Bonsai's Q2_0 file (mainline llama.cpp's type 42, 64-weight
    // groups): float activations in tern (int16 within 1e-4), Q8_0 per 32
    // values on every linear and the ternary head in llama.cpp, f16 KV.
    // Measured -0.95%; emulation -0.13%.
    {"bonsai", 0.02, "Q8_0 activations instead of float, f16 KV (measured -0.95%)", 0.01},
};

// The packs of each family that llama.cpp loads and the goldens cover.
std::vector<std::string> packs(const std::string& family) {
  if (family == "bonsai") return {"q2_0.gguf", "q1_0.gguf"};
  return {"tq2_0.gguf", "tq1_0.gguf"};
}

const Bound& bound(const std::string& family) {
  for (const auto& b : kBounds)
    if (family == b.family) return b;
  throw std::runtime_error("no bound for " + family);
}

nlohmann::json goldens() {
  std::ifstream in(tern::test::source("tests/data/llamacpp_ppl_goldens.json"));
  return nlohmann::json::parse(in);
}

const nlohmann::json* golden(const nlohmann::json& g, const std::string& family,
                             const std::string& file) {
  for (const auto& e : g["entries"])
    if (e["family"] == family && e["file"] == file) return &e;
  return nullptr;
}

using Param = std::tuple<std::string, std::string>;  // family, tq2_0.gguf | tq1_0.gguf

class LlamacppAgreement : public ::testing::TestWithParam<Param> {
 protected:
  std::string family() const { return std::get<0>(GetParam()); }
  std::string file() const { return std::get<1>(GetParam()); }
  // The golden entry's ids and ppl; fails the test if there is none.
  bool load(std::vector<int32_t>& ids, double& ppl) const {
    const auto g = goldens();
    const nlohmann::json* e = golden(g, family(), file());
    if (!e) {
      ADD_FAILURE() << "no golden for " << family() << " " << file()
                    << ": rerun tests/tools/make_llamacpp_ppl_goldens.sh";
      return false;
    }
    ids = (*e)["ids"].get<std::vector<int32_t>>();
    ppl = (*e)["ppl"].get<double>();
    return ids.size() > 1 && ppl > 1;
  }
};

// The goldens are of the text reference.py samples from today's fixture.
TEST_P(LlamacppAgreement, GoldenIdsAreTheFamilySample) {
  std::vector<int32_t> ids;
  double ppl = 0;
  ASSERT_TRUE(load(ids, ppl));
  const auto now = reference_ids(checkpoint(family()), "sample --seed 1 --n 63 --prompt 1", "sample",
                                 tern::test::test_dir());
  EXPECT_EQ(now, ids) << "the " << family()
                      << " fixture (make_family_checkpoint.py) or reference.py changed since the "
                         "llama.cpp goldens were made: rerun "
                         "tests/tools/make_llamacpp_ppl_goldens.sh (needs node-llama-cpp)";
}

TEST_P(LlamacppAgreement, TernPerplexityNearLlamacpp) {
  std::vector<int32_t> ids;
  double want = 0;
  ASSERT_TRUE(load(ids, want));
  const std::string path = (tern::test::test_models() / ("family-" + family()) / file()).string();
  auto m = tern::Model::load(path);
  tern::Context ctx(*m);
  const size_t V = size_t(m->config().vocab_size);
  const auto s = ctx.forward(ids, 0, true);
  const std::vector<float> got(s.begin(), s.end());
  ASSERT_EQ(got.size(), ids.size() * V);
  const double have = perplexity(got, ids, V);
  std::printf("[measure] %s %s tern %.6f llama.cpp %.6f (%+.3f%%)\n", family().c_str(),
              file().c_str(), have, want, 100 * (have / want - 1));
  const Bound& b = bound(family());
  EXPECT_LT(std::fabs(have / want - 1), b.tern) << b.why;
}

TEST_P(LlamacppAgreement, LlamacppArithmeticReferenceMatchesLlamacpp) {
  std::vector<int32_t> ids;
  double want = 0;
  ASSERT_TRUE(load(ids, want));
  const fs::path dir = tern::test::test_dir();
  const auto ref = reference_logits(checkpoint(family()), ids, dir, "llamacpp");
  ASSERT_FALSE(ref.empty());
  ASSERT_EQ(ref.size() % ids.size(), 0u);
  const double have = perplexity(ref, ids, ref.size() / ids.size());
  std::printf("[measure] %s %s reference.py --mutate llamacpp %.6f llama.cpp %.6f (%+.3f%%)\n",
              family().c_str(), file().c_str(), have, want, 100 * (have / want - 1));
  EXPECT_LT(std::fabs(have / want - 1), bound(family()).emulation);
}

// A Q6_K head (pack --output-type q6_k, the type llama-quantize gives heads
// by default) is read by llama.cpp as tern reads it: quantizing the head
// moves llama.cpp's perplexity by +1.70% and tern's by +1.32% (the int8
// activations per 256 values round differently); a misread layout (scale
// index, nibble or bit-pair order) would move either by far more.
TEST(LlamacppGoldens, Q6KHeadMovesPerplexityAsInLlamacpp) {
  const auto g = goldens();
  const nlohmann::json* q6 = golden(g, "llama3-1.58", "q6_k-head.gguf");
  const nlohmann::json* base = golden(g, "llama3-1.58", "tq2_0.gguf");
  ASSERT_TRUE(q6 && base) << "rerun tests/tools/make_llamacpp_ppl_goldens.sh";
  const auto ids = (*q6)["ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(ids, (*base)["ids"].get<std::vector<int32_t>>());
  auto ppl = [&](const char* file) {
    auto m = tern::Model::load((tern::test::test_models() / "family-llama3-1.58" / file).string());
    tern::Context ctx(*m);
    const auto s = ctx.forward(ids, 0, true);
    return perplexity(std::vector<float>(s.begin(), s.end()), ids, size_t(m->config().vocab_size));
  };
  const double tern_q6 = ppl("q6_k-head.gguf"), tern_base = ppl("tq2_0.gguf");
  const double cpp_q6 = (*q6)["ppl"].get<double>(), cpp_base = (*base)["ppl"].get<double>();
  std::printf("[measure] Q6_K head: tern %.6f (%+.3f%%), llama.cpp %.6f (%+.3f%%)\n", tern_q6,
              100 * (tern_q6 / tern_base - 1), cpp_q6, 100 * (cpp_q6 / cpp_base - 1));
  EXPECT_NE(tern_q6, tern_base);
  EXPECT_LT(std::fabs(tern_q6 / cpp_q6 - 1), bound("llama3-1.58").tern);
  EXPECT_LT(std::fabs((tern_q6 / tern_base) / (cpp_q6 / cpp_base) - 1), 0.01);
}

TEST(LlamacppGoldens, CoverEveryLoadableFamilyAndPack) {
  const auto g = goldens();
  EXPECT_FALSE(g["llama_cpp"].get<std::string>().empty());
  EXPECT_EQ(g["tokens"], "reference.py sample --seed 1 --n 63 --prompt 1");
  EXPECT_EQ(g["entries"].size(), 9u);  // and the Q6_K head above
  for (const auto& b : kBounds)
    for (const auto& f : packs(b.family))
      EXPECT_NE(golden(g, b.family, f), nullptr) << b.family << " " << f;
}

// Q1_0 (type 41: 128 signs and one fp16 scale a block) is read by llama.cpp
// as tern reads it (tern converts it to PQ2_0 codes at load). The fixture
// is the Bonsai fixture binarized (zeros made +1), so the family's sample
// scores badly on it (perplexity near 1e7): logits far apart, which any
// misread bit order or scale would move by orders of magnitude, while the
// arithmetic (Q8_0 against tern's int16 activations) moves the mean
// log-likelihood by a fraction of a percent.
TEST(LlamacppGoldens, BinaryQ1_0ReadsAsInLlamacpp) {
  const auto g = goldens();
  const nlohmann::json* q1 = golden(g, "bonsai", "q1_0.gguf");
  ASSERT_TRUE(q1) << "rerun tests/tools/make_llamacpp_ppl_goldens.sh";
  const auto ids = (*q1)["ids"].get<std::vector<int32_t>>();
  auto m = tern::Model::load((tern::test::test_models() / "family-bonsai" / "q1_0.gguf").string());
  tern::Context ctx(*m);
  const auto s = ctx.forward(ids, 0, true);
  const double have =
      perplexity(std::vector<float>(s.begin(), s.end()), ids, size_t(m->config().vocab_size));
  const double want = (*q1)["ppl"].get<double>();
  const double nll_have = std::log(have), nll_want = std::log(want);
  std::printf("[measure] bonsai q1_0.gguf tern %.6g llama.cpp %.6g (mean NLL %+.3f%%)\n", have, want,
              100 * (nll_have / nll_want - 1));
  EXPECT_LT(std::fabs(nll_have / nll_want - 1), 0.01);
}

INSTANTIATE_TEST_SUITE_P(
    All, LlamacppAgreement,
    ::testing::Combine(::testing::Values("falcon3", "llama3-1.58", "trilm"),
                       ::testing::Values("tq2_0.gguf", "tq1_0.gguf")),
    [](const auto& info) {
      return param_name(std::get<0>(info.param) + "_" + std::get<1>(info.param));
    });

INSTANTIATE_TEST_SUITE_P(
    Bonsai, LlamacppAgreement,
    ::testing::Values(Param{"bonsai", "q2_0.gguf"}),
    [](const auto& info) {
      return param_name(std::get<0>(info.param) + "_" + std::get<1>(info.param));
    });

}  // namespace
