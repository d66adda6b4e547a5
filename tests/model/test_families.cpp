// Every published ternary family, run by tern exactly as its reference
// computes it. The make_test_models fixture writes one tiny checkpoint per
// family in that family's own Hugging Face layout
// (tests/tools/families/make_family_checkpoint.py) and packs it to TQ2_0 and
// TQ1_0; tests/tools/families/reference.py is an independent numpy forward
// written from the families' modeling code. Checked: logits of a fixed
// sequence, greedy continuation through tern's incremental (KV cache)
// decode, and perplexity of a text sampled from the reference. The
// sensitivity tests show that each family feature the comparison relies on
// (activation function, int8 activations, sub-norms, the packed scale's
// direction) moves that perplexity far more than the tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "support/family_reference.h"
#include "support/gguf_rewrite.h"
#include "support/logits.h"
#include "support/test_env.h"
#include "tern/kernels.h"
#include "tern/context.h"
#include "tern/model.h"

namespace fs = std::filesystem;
using tern::test::quote;

namespace {

using tern::test::csv;
using tern::test::param_name;
using tern::test::perplexity;
using tern::test::reference_ids;
using tern::test::reference_logits;
using tern::test::rel_error;

struct FamilyCase {
  const char* name;       // make_family_checkpoint.py --family
  const char* gguf_arch;  // what tern must load it as
  tern::ActMode act;
  std::vector<const char*> mutations;  // reference.py --mutate variants relevant to it
  std::vector<const char*> types = {"tq2_0", "tq1_0"};  // the packs make_test_models writes
};

const std::vector<FamilyCase>& cases() {
  static const std::vector<FamilyCase> c{
      {"bitnet-2b4t", "bitnet-b1.58", tern::ActMode::Int8,
       {"silu-for-relu2", "float-activations", "no-sub-norms", "invert-scale"}},
      {"bitnet-2b4t-bf16", "bitnet-b1.58", tern::ActMode::Int8,
       {"silu-for-relu2", "float-activations", "no-sub-norms"}},
      {"falcon3", "llama", tern::ActMode::Int8,
       {"relu2-for-silu", "float-activations", "invert-scale"}},
      {"llama3-1.58", "llama", tern::ActMode::Int8,
       {"relu2-for-silu", "float-activations", "invert-scale"}},
      {"1bitllm", "bitnet", tern::ActMode::Int8,
       {"relu2-for-silu", "float-activations", "no-sub-norms"}},
      // 1bitLLM 3B's widths are not whole 256-blocks: the rows are padded.
      {"1bitllm-3b", "bitnet", tern::ActMode::Int8,
       {"relu2-for-silu", "float-activations", "no-sub-norms"}},
      {"trilm", "llama", tern::ActMode::Float, {"relu2-for-silu"}},
      // use_rms_norm: each ternary linear normalizes its own input.
      {"falcon-e", "llama", tern::ActMode::Int8,
       {"relu2-for-silu", "float-activations", "invert-scale", "no-linear-norms"}},
      // Qwen3: per-head q/k norms, q wider than the model, YaRN; tied with
      // one KV head.
      {"qwen3", "qwen3", tern::ActMode::Float, {"relu2-for-silu", "no-qk-norms", "no-yarn"}},
      {"qwen3-tied", "qwen3", tern::ActMode::Float, {"relu2-for-silu", "no-qk-norms"}},
      // Ternary Bonsai: a scale per 128 weights, which only the group types hold.
      {"bonsai", "qwen3", tern::ActMode::Float, {"relu2-for-silu", "no-qk-norms", "row-scales"}, {"pq2_0", "q2_0"}},
  };
  return c;
}

const FamilyCase& find_case(const std::string& name) {
  for (const auto& c : cases())
    if (name == c.name) return c;
  throw std::runtime_error("no family " + name);
}

// All ids below 512, the tiny tokenizer's vocabulary.
const std::vector<int32_t> kTokens{1, 17, 250, 3, 99, 400, 7, 7, 12, 300, 45, 2, 64, 128, 511, 200};
const std::vector<int32_t> kPrompt{1, 17, 250, 3};
constexpr int kGreedy = 24;
constexpr int kSampleSeed = 1;
constexpr int kSampled = 64;  // tokens, the prompt "1" included

fs::path family_dir(const std::string& family) {
  return tern::test::test_models() / ("family-" + family);
}
std::string checkpoint(const std::string& family) { return tern::test::family_checkpoint(family); }
std::string gguf_path(const std::string& family, const std::string& type) {
  return (family_dir(family) / (type + ".gguf")).string();
}

// A text of kSampled tokens drawn at temperature 1 from the reference model.
std::vector<int32_t> sampled_text(const std::string& ckpt, const fs::path& dir) {
  return reference_ids(ckpt,
                       "sample --seed " + std::to_string(kSampleSeed) + " --n " +
                           std::to_string(kSampled - 1) + " --prompt 1",
                       "sample", dir);
}

size_t vocab_of(const std::string& ckpt) {
  std::ifstream in(ckpt + "/config.json");
  std::string s((std::istreambuf_iterator<char>(in)), {});
  const auto p = s.find("\"vocab_size\"");
  return p == std::string::npos ? 0 : std::stoul(s.substr(s.find(':', p) + 1));
}

using Param = std::tuple<std::string, std::string>;  // family, tq2_0 | tq1_0

class Families : public ::testing::TestWithParam<Param> {
 protected:
  std::string family() const { return std::get<0>(GetParam()); }
  std::string file() const { return gguf_path(family(), std::get<1>(GetParam())); }
};

TEST_P(Families, LoadsAsItsFamily) {
  const FamilyCase& c = find_case(family());
  auto m = tern::Model::load(file());
  ASSERT_NE(m->config().family, nullptr);
  EXPECT_EQ(m->config().family->gguf_arch, c.gguf_arch);
  EXPECT_EQ(m->config().act_mode, c.act);
  EXPECT_EQ(size_t(m->config().vocab_size), vocab_of(checkpoint(family())));
}

// How a case runs: its default (for a float family, int16 activations,
// which reference.py's int16-activations variant rounds the same way) and,
// for a float family, exact float activations too.
struct ModeRun {
  tern::FloatActs acts;
  std::string variant;  // reference.py --mutate; "" the plain reference
};
std::vector<ModeRun> runs(const FamilyCase& c) {
  if (c.act == tern::ActMode::Int8) return {{tern::FloatActs::Int16, ""}};
  return {{tern::FloatActs::Int16, "int16-activations"}, {tern::FloatActs::Exact, ""}};
}
std::unique_ptr<tern::Model> load(const std::string& file, const ModeRun& r) {
  tern::LoadOptions lo;
  lo.float_acts = r.acts;
  return tern::Model::load(file, lo);
}

TEST_P(Families, LogitsMatchReference) {
  const fs::path dir = tern::test::test_dir();
  for (const ModeRun& r : runs(find_case(family()))) {
    const auto ref = reference_logits(checkpoint(family()), kTokens, dir, r.variant);
    auto m = load(file(), r);
    tern::Context ctx(*m);
    const auto s = ctx.forward(kTokens, 0, true);
    const std::vector<float> got(s.begin(), s.end());
    ASSERT_EQ(got.size(), ref.size());
    const double err = rel_error(got, ref);
    std::printf("[measure] %s %s%s logits max|diff|/max|ref| = %.3g\n", family().c_str(),
                std::get<1>(GetParam()).c_str(), m->int16_activations() ? " int16" : "", err);
    if (!m->int16_activations()) {
      EXPECT_LT(err, 1e-4) << r.variant;
      continue;
    }
    // Float noise (1e-7) puts some of the 65025 rounding steps' halfway
    // points between tern's x * s and the reference's: ~0.6% of inputs
    // round one step apart, which this random model amplifies to ~3e-4.
    // The plain reference, which does not round, is 10x further away
    // where the rounding moves the logits past that bound (TriLM: 4e-3).
    // Where it moves them less (Qwen3's q/k norms absorb it: 2.5e-4, the
    // size of the flips' noise), tern is within the bound of both and the
    // two cannot be told apart; its float kernels are checked at 1e-4.
    EXPECT_LT(err, 1e-3) << r.variant;
    const auto exact = reference_logits(checkpoint(family()), kTokens, dir);
    if (rel_error(ref, exact) > 1e-3) {
      EXPECT_LT(err, 0.3 * rel_error(got, exact)) << "int16 rounding is not the reference's";
    }
  }
}

// tern decodes one token at a time through its KV cache, choosing the argmax.
TEST_P(Families, GreedyIncrementalDecodeMatchesReference) {
  const fs::path dir = tern::test::test_dir();
  for (const ModeRun& r : runs(find_case(family()))) {
    const std::string mutate = r.variant.empty() ? "" : " --mutate " + r.variant;
    const auto want = reference_ids(checkpoint(family()),
                                    "greedy --n " + std::to_string(kGreedy) + " --prompt " + csv(kPrompt) + mutate,
                                    "greedy" + r.variant, dir);
    ASSERT_EQ(want.size(), kPrompt.size() + kGreedy);
    auto m = load(file(), r);
    tern::Context ctx(*m);
    const size_t V = size_t(m->config().vocab_size);
    std::vector<int32_t> ids = kPrompt;
    std::span<const float> last;
    for (size_t i = 0; i < kPrompt.size(); ++i) last = ctx.forward({&ids[i], 1}, int(i), false);
    while (ids.size() < want.size()) {
      ASSERT_EQ(last.size(), V);
      const int32_t next = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
      ids.push_back(next);
      last = ctx.forward({&ids.back(), 1}, int(ids.size() - 1), false);
    }
    EXPECT_EQ(ids, want) << r.variant;
  }
}

// For the int8 families the 0.1% bound is not far above what float rounding
// alone can do: an activation whose x * 127/absmax lies within float noise of
// a .5 boundary rounds one way in tern and the other in the reference, and
// one such flip moves this perplexity by ~1e-4..7e-3 (measured over sample
// seeds 1..12). The fixed seed's text has none large enough (|ratio - 1|
// <= 6.1e-4 measured); a failure here after a change of float evaluation
// order may be such a flip: LogitsMatchReference and the greedy test tell.
TEST_P(Families, PerplexityOfReferenceSampleMatches) {
  const fs::path dir = tern::test::test_dir();
  const std::string ckpt = checkpoint(family());
  const auto ids = sampled_text(ckpt, dir);
  ASSERT_EQ(ids.size(), size_t(kSampled));
  const size_t V = vocab_of(ckpt);
  for (const ModeRun& r : runs(find_case(family()))) {
    const auto ref = reference_logits(ckpt, ids, dir, r.variant);
    ASSERT_EQ(ref.size(), ids.size() * V);
    auto m = load(file(), r);
    tern::Context ctx(*m);
    const auto s = ctx.forward(ids, 0, true);
    const std::vector<float> got(s.begin(), s.end());
    ASSERT_EQ(got.size(), ref.size());
    const double want = perplexity(ref, ids, V), have = perplexity(got, ids, V);
    std::printf("[measure] %s %s%s perplexity tern %.6f reference %.6f ratio-1 %.3g\n",
                family().c_str(), std::get<1>(GetParam()).c_str(), m->int16_activations() ? " int16" : "",
                have, want, have / want - 1);
    EXPECT_NEAR(have / want, 1.0, 1e-3) << r.variant;
  }
}

std::vector<Param> all_params() {
  std::vector<Param> p;
  for (const auto& c : cases())
    for (const char* t : c.types) p.emplace_back(c.name, t);
  return p;
}

INSTANTIATE_TEST_SUITE_P(All, Families, ::testing::ValuesIn(all_params()), [](const auto& info) {
  return param_name(std::get<0>(info.param) + "_" + std::get<1>(info.param));
});

// 1bitLLM 3B's rows are padded to whole blocks and the activations with
// them (int8 and float paths pad differently). int8 sums are exact, so every
// kernel gives the same logits bit for bit; the same file switched to float
// activations matches the reference's float variant on every kernel.
TEST(PaddedRows, EveryKernelMatchesTheReference) {
  const fs::path dir = tern::test::test_dir();
  const std::string ckpt = checkpoint("1bitllm-3b"), int8_file = gguf_path("1bitllm-3b", "tq2_0");
  const std::string float_file = (dir / "float.gguf").string();
  tern::test::rewrite_file(int8_file, float_file, {}, [](auto&&...) {}, tern::test::TernKeys::Keep,
                           {{"tern.activation_mode", tern::gguf::Value::string("float")}});
  const auto ref_int8 = reference_logits(ckpt, kTokens, dir);
  const auto ref_float = reference_logits(ckpt, kTokens, dir, "float-activations");
  ASSERT_FALSE(ref_int8.empty());
  ASSERT_FALSE(ref_float.empty());
  std::vector<float> first_int8;
  int ran = 0;
  for (const tern::KernelSet* k : tern::all_kernel_sets()) {
    if (!k->available(tern::cpu_features())) continue;
    for (const auto& [file, mode, ref] : {std::tuple{int8_file, tern::ActMode::Int8, &ref_int8},
                                          std::tuple{float_file, tern::ActMode::Float, &ref_float}}) {
      if (!tern::kernel_supports(*k, mode)) continue;
      tern::LoadOptions lo;
      lo.kernel = k->name;
      lo.float_acts = tern::FloatActs::Exact;  // the float kernels, as the float variant computes
      auto m = tern::Model::load(file, lo);
      tern::Context ctx(*m);
      ASSERT_EQ(m->config().act_mode, mode);
      const auto sp = ctx.forward(kTokens, 0, true);
      const std::vector<float> got(sp.begin(), sp.end());
      EXPECT_LT(rel_error(got, *ref), 1e-4) << k->name << (mode == tern::ActMode::Int8 ? " int8" : " float");
      if (mode == tern::ActMode::Int8) {
        if (first_int8.empty()) first_int8 = got;
        EXPECT_EQ(got, first_int8) << k->name;
      }
      ++ran;
    }
  }
  EXPECT_GE(ran, 2);
}

// The checks above are only as good as the fixture's sensitivity: each
// family feature, computed wrong by the reference, must move the perplexity
// of the sampled text by far more than the 0.1% tern is held to.
class FamiliesSensitivity : public ::testing::TestWithParam<std::string> {};

TEST_P(FamiliesSensitivity, EveryFamilyFeatureMovesPerplexity) {
  const FamilyCase& c = find_case(GetParam());
  const fs::path dir = tern::test::test_dir();
  const std::string ckpt = checkpoint(c.name);
  const auto ids = sampled_text(ckpt, dir);
  ASSERT_EQ(ids.size(), size_t(kSampled));
  const size_t V = vocab_of(ckpt);
  const auto ref = reference_logits(ckpt, ids, dir);
  ASSERT_EQ(ref.size(), ids.size() * V);
  const double base = perplexity(ref, ids, V);
  // A model sampled from should not be near uniform (ppl ~ vocab) nor a
  // single repeated token (ppl ~ 1).
  EXPECT_LT(base, 0.1 * double(V));
  EXPECT_GT(base, 1.5);
  for (const char* mut : c.mutations) {
    const auto wrong = reference_logits(ckpt, ids, dir, mut);
    ASSERT_EQ(wrong.size(), ref.size()) << mut;
    const double p = perplexity(wrong, ids, V);
    std::printf("[measure] %s perplexity %.4f, with %s %.4f (%+.1f%%)\n", c.name, base, mut, p,
                100 * (p / base - 1));
    EXPECT_GT(std::fabs(p / base - 1), 0.01) << mut;
  }
}

INSTANTIATE_TEST_SUITE_P(All, FamiliesSensitivity,
                         ::testing::Values("bitnet-2b4t", "bitnet-2b4t-bf16", "falcon3", "llama3-1.58",
                                           "1bitllm", "1bitllm-3b", "trilm", "falcon-e", "qwen3", "qwen3-tied",
                                           "bonsai"),
                         [](const auto& info) { return param_name(info.param); });

}  // namespace
