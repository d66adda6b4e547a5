// Fairy2i-W2 (docs/FAIRY2I.md) end to end: a tiny LLaMA-2-layout checkpoint
// with the quantizer's edge cases planted (tests/tools/fairy2i/
// make_checkpoint.py), packed with --fairy2i by the make_test_models
// fixture, checked against the independent numpy reference: every code and
// scale (check_pack.py), the logits, a greedy incremental decode and the
// perplexity of a text the reference samples (reference.py --fairy2i), on
// every kernel set that has a Fairy2i path, bit for bit alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "support/family_reference.h"
#include "support/logits.h"
#include "support/test_env.h"
#include "tern/error.h"
#include "tern/kernels.h"
#include "tern/context.h"
#include "tern/model.h"

namespace fs = std::filesystem;

namespace {

using tern::test::csv;
using tern::test::perplexity;
using tern::test::quote;
using tern::test::rel_error;

const std::vector<int32_t> kTokens{1, 17, 250, 3, 99, 400, 7, 7, 12, 300, 45, 2, 64, 128, 511, 200};
const std::vector<int32_t> kPrompt{1, 17, 250, 3};
constexpr int kGreedy = 24;
constexpr int kSampled = 64;
constexpr size_t kVocab = 512;

std::string checkpoint() { return (tern::test::test_models() / "fairy2i" / "hf").string(); }
std::string packed(int stages) {
  return (tern::test::test_models() / "fairy2i" / ("w" + std::to_string(stages) + ".gguf")).string();
}

std::string fairy(int stages) { return " --fairy2i " + std::to_string(stages); }

// The reference's logits [ids][vocab] of the checkpoint run as Fairy2i.
std::vector<float> reference_logits(const std::vector<int32_t>& ids, int stages, const fs::path& dir,
                                    const std::string& tag) {
  const std::string out = (dir / (tag + ".bin")).string();
  tern::test::reference(checkpoint(), "logits " + csv(ids) + " " + quote(out) + fairy(stages), tag, dir);
  return tern::test::read_floats(out);
}

// The input modes a Fairy2i model runs in: float (the published model),
// int16 and int8 through the int8 kernels (--float-act).
const tern::FloatActs kActs[] = {tern::FloatActs::Exact, tern::FloatActs::Int16, tern::FloatActs::Int8};
const char* act_name(tern::FloatActs a) {
  return a == tern::FloatActs::Exact ? "f32" : a == tern::FloatActs::Int16 ? "i16" : "i8";
}
// How far from the reference each mode's logits may be (max |diff| /
// max |ref|): float rounding, int16's 1e-4 input error, int8's per-token
// absmax rounding.
double tolerance(tern::FloatActs a) { return a == tern::FloatActs::Int8 ? 5e-2 : 1e-4; }

std::vector<const tern::KernelSet*> phase_sets(tern::FloatActs acts) {
  const tern::ActMode mode = acts == tern::FloatActs::Exact ? tern::ActMode::Float : tern::ActMode::Int8;
  std::vector<const tern::KernelSet*> sets;
  for (const tern::KernelSet* k : tern::all_kernel_sets())
    if (k->available(tern::cpu_features()) && tern::kernel_supports(*k, mode, true)) sets.push_back(k);
  return sets;
}

std::unique_ptr<tern::Model> load(int stages, tern::FloatActs acts, const tern::KernelSet* k = nullptr) {
  tern::LoadOptions lo;
  lo.float_acts = acts;
  if (k) lo.kernel = k->name;
  return tern::Model::load(packed(stages), lo);
}

TEST(Fairy2i, PackedCodesAndScalesMatchTheReference) {
  for (int stages : {1, 2}) {
    const auto r = tern::test::run(tern::test::python() + " " +
                                       quote(tern::test::source("tests/tools/fairy2i/check_pack.py")) + " " +
                                       quote(checkpoint()) + " " + quote(packed(stages)) + " " +
                                       std::to_string(stages),
                                   "check" + std::to_string(stages), tern::test::test_dir());
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }
}

TEST(Fairy2i, LoadsAsItsFamily) {
  auto m = load(2, tern::FloatActs::Exact);
  const tern::Config& c = m->config();
  EXPECT_EQ(c.family->gguf_arch, "fairy2i");
  EXPECT_TRUE(c.phase);
  EXPECT_EQ(c.act_mode, tern::ActMode::Float);
  EXPECT_EQ(size_t(c.vocab_size), kVocab);
  EXPECT_EQ(m->weights().layers[0].wq.phase.stages, 2);
  EXPECT_EQ(m->weights().output_phase.phase.rows, int64_t(kVocab / 2));
  // Unasked, the inputs stay float, as the published model computes them.
  auto plain = tern::Model::load(packed(2));
  EXPECT_FALSE(plain->int16_activations());
  EXPECT_FALSE(plain->int8_float_activations());
  EXPECT_TRUE(plain->kernels().phase_gemm != nullptr) << plain->kernels().name;
}

// Every kernel set with a Fairy2i path for an input mode gives the same
// logits bit for bit, within that mode's tolerance of the reference, for
// one and two stages.
TEST(Fairy2i, LogitsMatchTheReferenceOnEveryKernel) {
  const fs::path dir = tern::test::test_dir();
  for (int stages : {1, 2}) {
    const auto ref = reference_logits(kTokens, stages, dir, "logits" + std::to_string(stages));
    ASSERT_EQ(ref.size(), kTokens.size() * kVocab);
    for (tern::FloatActs acts : kActs) {
      std::vector<float> first;
      for (const tern::KernelSet* k : phase_sets(acts)) {
        auto m = load(stages, acts, k);
        tern::Context ctx(*m);
        const auto s = ctx.forward(kTokens, 0, true);
        const std::vector<float> got(s.begin(), s.end());
        const double err = rel_error(got, ref);
        std::printf("[measure] fairy2i W%d %s %s logits max|diff|/max|ref| = %.3g\n", stages, act_name(acts),
                    k->name, err);
        EXPECT_LT(err, tolerance(acts)) << k->name << " " << act_name(acts);
        if (first.empty()) first = got;
        EXPECT_EQ(got, first) << k->name << " " << act_name(acts) << " differs from " << phase_sets(acts)[0]->name;
      }
    }
  }
}

// One stage is a much coarser model: the comparison above tells them apart.
TEST(Fairy2i, StagesMoveTheLogitsFarBeyondTheTolerance) {
  const fs::path dir = tern::test::test_dir();
  const auto one = reference_logits(kTokens, 1, dir, "one");
  auto m = load(2, tern::FloatActs::Exact);
  tern::Context ctx(*m);
  const auto s = ctx.forward(kTokens, 0, true);
  EXPECT_GT(rel_error(std::vector<float>(s.begin(), s.end()), one), 1e-2);
}

TEST(Fairy2i, GreedyIncrementalDecodeMatchesTheReference) {
  const fs::path dir = tern::test::test_dir();
  const auto want = tern::test::reference_ids(
      checkpoint(), "greedy --n " + std::to_string(kGreedy) + " --prompt " + csv(kPrompt) + fairy(2), "greedy", dir);
  ASSERT_EQ(want.size(), kPrompt.size() + kGreedy);
  // int8's rounding may change a close greedy choice: float and int16 only.
  for (tern::FloatActs acts : {tern::FloatActs::Exact, tern::FloatActs::Int16})
    for (const tern::KernelSet* k : phase_sets(acts)) {
      auto m = load(2, acts, k);
      tern::Context ctx(*m);
      std::vector<int32_t> ids = kPrompt;
      std::span<const float> last;
      for (size_t i = 0; i < kPrompt.size(); ++i) last = ctx.forward({&ids[i], 1}, int(i), false);
      while (ids.size() < want.size()) {
        ids.push_back(int32_t(std::max_element(last.begin(), last.end()) - last.begin()));
        last = ctx.forward({&ids.back(), 1}, int(ids.size() - 1), false);
      }
      EXPECT_EQ(ids, want) << k->name << " " << act_name(acts);
    }
}

TEST(Fairy2i, PerplexityOfReferenceSampleMatches) {
  const fs::path dir = tern::test::test_dir();
  const auto ids = tern::test::reference_ids(
      checkpoint(), "sample --seed 1 --n " + std::to_string(kSampled - 1) + " --prompt 1" + fairy(2), "sample", dir);
  ASSERT_EQ(ids.size(), size_t(kSampled));
  const auto ref = reference_logits(ids, 2, dir, "sample-logits");
  ASSERT_EQ(ref.size(), ids.size() * kVocab);
  const double want = perplexity(ref, ids, kVocab);
  for (tern::FloatActs acts : kActs) {
    auto m = load(2, acts);
    tern::Context ctx(*m);
    const auto s = ctx.forward(ids, 0, true);
    const double have = perplexity({s.begin(), s.end()}, ids, kVocab);
    std::printf("[measure] fairy2i W2 %s perplexity tern %.6f reference %.6f ratio-1 %.3g\n", act_name(acts), have,
                want, have / want - 1);
    // int8 on random weights: its cost on a trained model is in docs/PERFORMANCE.md.
    EXPECT_NEAR(have / want, 1.0, acts == tern::FloatActs::Int8 ? 1e-2 : 1e-3) << act_name(acts);
  }
}

// A forced kernel set without a Fairy2i path for the input mode is refused, by name.
TEST(Fairy2i, KernelWithoutAFairy2iPathIsRefusedByName) {
  int refused = 0;
  for (tern::FloatActs acts : kActs)
    for (const tern::KernelSet* k : tern::all_kernel_sets()) {
      const bool has = acts == tern::FloatActs::Exact ? k->phase_gemm != nullptr : k->phase_gemm_i8 != nullptr;
      if (!k->available(tern::cpu_features()) || has) continue;
      tern::LoadOptions lo;
      lo.kernel = k->name;
      lo.float_acts = acts;
      try {
        tern::Model::load(packed(2), lo);
        ADD_FAILURE() << k->name << " loaded a Fairy2i file with " << act_name(acts) << " inputs";
      } catch (const tern::Error& e) {
        EXPECT_NE(std::string(e.what()).find("has no Fairy2i path"), std::string::npos) << e.what();
        ++refused;
      }
    }
  std::printf("[measure] %d kernel set and input mode pairs refused\n", refused);
}

}  // namespace
