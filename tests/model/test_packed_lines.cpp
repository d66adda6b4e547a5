// The packed-lines perplexity protocol of Fairy2i-W2's evaluation
// (generate.h): how lines become sequences, including the published code's
// edge cases, and how a sequence is scored.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/test_env.h"
#include "tern/error.h"
#include "tern/generate.h"
#include "tern/context.h"
#include "tern/model.h"

namespace {

using Seqs = std::vector<std::vector<int32_t>>;

TEST(PackLineItems, PacksGreedilySkipsLongItemsAndKeepsThePublishedEdgeCases) {
  const Seqs items{{10, 11}, {12, 13, 14}, {15}, {16, 17, 18, 19, 20, 21, 22, 23},
                   {24, 25, 26, 27, 28, 29, 30}, {31}};
  // n_ctx 8, BOS 1, EOS 2: the 8-token item is 9 with its EOS and skipped;
  // the 7-token one fits alone but with BOS makes a 9-token sequence, which
  // the published code keeps because another sequence follows it.
  const Seqs want{{1, 10, 11, 2, 12, 13, 14, 2}, {1, 15, 2}, {1, 24, 25, 26, 27, 28, 29, 30, 2}, {1, 31, 2}};
  EXPECT_EQ(tern::pack_line_items(items, 1, 2, 8), want);
  // ... and drops when it is the last.
  const Seqs last_too_long{{1, 10, 11, 2, 12, 13, 14, 2}, {1, 15, 2}};
  EXPECT_EQ(tern::pack_line_items({items.begin(), items.end() - 1}, 1, 2, 8), last_too_long);
  // Without BOS the sequences are the items with their EOS, no more.
  EXPECT_EQ(tern::pack_line_items({{5, 6}, {7}}, -1, 2, 4), (Seqs{{5, 6, 2}, {7, 2}}));
  EXPECT_TRUE(tern::pack_line_items({{5, 6, 7, 8}}, 1, 2, 4).empty());
}

// Every prediction after the first position counts; one made from an EOS is
// not scored. Recomputed here from the model's own logits.
TEST(PerplexityPackedLines, ScoresAsThePublishedLoss) {
  auto m = tern::Model::load((tern::test::test_models() / "ternary" / "tq2_0.gguf").string());
  const int32_t bos = 1, eos = 2;
  const Seqs items{{17, 250, 3}, {99, 400}, {7, 7, 12, 300, 45}, {64}, {128, 511, 200, 9}};
  const int ctx = 9;
  const Seqs seqs = tern::pack_line_items(items, bos, eos, ctx);
  ASSERT_EQ(seqs.size(), 3u);
  double nll = 0;
  int64_t count = 0, scored = 0;
  const size_t V = size_t(m->config().vocab_size);
  for (const auto& seq : seqs) {
    tern::Context c(*m, {.ctx = ctx});
    const auto logits = c.forward(seq, 0, true);
    for (size_t i = 0; i + 1 < seq.size(); ++i) {
      ++count;
      if (seq[i] == eos) continue;
      const float* row = logits.data() + i * V;
      double mx = row[0], sum = 0;
      for (size_t j = 1; j < V; ++j) mx = std::max(mx, double(row[j]));
      for (size_t j = 0; j < V; ++j) sum += std::exp(double(row[j]) - mx);
      nll -= double(row[seq[i + 1]]) - mx - std::log(sum);
      ++scored;
    }
  }
  std::vector<double> running;
  const tern::PerplexityResult r =
      tern::perplexity_packed_lines(*m, {}, items, bos, eos, ctx, -1, [&](int, double p) { running.push_back(p); });
  EXPECT_EQ(r.n_chunks, 3);
  EXPECT_EQ(r.n_counted, count);
  EXPECT_EQ(r.n_scored, scored);
  EXPECT_LT(scored, count);
  EXPECT_NEAR(r.ppl, std::exp(nll / double(count)), 1e-6 * r.ppl);
  ASSERT_EQ(running.size(), 3u);
  EXPECT_DOUBLE_EQ(running.back(), r.ppl);
  // At most one sequence when asked.
  EXPECT_EQ(tern::perplexity_packed_lines(*m, {}, items, bos, eos, ctx, 1, {}).n_chunks, 1);
}

TEST(PerplexityPackedLines, NothingThatFitsIsAnError) {
  auto m = tern::Model::load((tern::test::test_models() / "ternary" / "tq2_0.gguf").string());
  EXPECT_THROW(tern::perplexity_packed_lines(*m, {}, {{5, 6, 7, 8, 9}}, 1, 2, 4, -1, {}), tern::Error);
  EXPECT_THROW(tern::perplexity_packed_lines(*m, {}, {{5}}, 1, -1, 8, -1, {}), tern::Error);
}

TEST(PerplexityPackedLines, TheCommandLineRunsIt) {
  const auto dir = tern::test::test_dir();
  const std::string text = (dir / "lines.txt").string();
  {
    std::FILE* f = std::fopen(text.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(" = Heading = \n\n In the beginning God created the heaven and the earth .\n"
               " And the earth was without form , and void .\n\n And God said , Let there be light .\n",
               f);
    std::fclose(f);
  }
  const std::string model = (tern::test::test_models() / "ternary" / "tq2_0.gguf").string();
  const auto r = tern::test::tern_cli("perplexity -m " + tern::test::quote(model) + " -f " + tern::test::quote(text) +
                                          " --packed-lines -c 32",
                                      "ppl", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Final estimate: PPL = "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("tokens scored of"), std::string::npos) << r.err;
}

}  // namespace
