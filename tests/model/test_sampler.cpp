// The sampler on hand-made logits: greedy, min-p, logit bias and OpenAI's
// presence and frequency penalties, and the distribution speculative
// decoding compares.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "tern/generate.h"

namespace {

// Counts of 4000 draws with fresh seeds.
std::map<int32_t, int> draws(tern::SamplerParams p, const std::vector<float>& logits) {
  std::map<int32_t, int> n;
  for (int s = 0; s < 4000; ++s) {
    p.seed = uint64_t(s);
    tern::Sampler sm(p);
    ++n[sm.sample(logits)];
  }
  return n;
}

const std::vector<float> kLogits{2.0f, 1.0f, 0.0f, -1.0f, 1.5f};

TEST(Sampler, GreedyIsTheLargestLogit) {
  tern::Sampler s({.temp = 0.0f, .top_k = 40, .top_p = 0.95f, .seed = 1});
  EXPECT_EQ(s.sample(kLogits), 0);
  tern::Sampler::Dist d;
  s.distribution(kLogits, d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].first, 0);
  EXPECT_EQ(d[0].second, 1.0);
}

TEST(Sampler, MinPKeepsTokensNearTheMostLikely) {
  tern::SamplerParams p{.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 0};
  EXPECT_EQ(draws(p, kLogits).size(), 5u);
  // At temperature 1 the probabilities relative to the best are e^0, e^-0.5,
  // e^-1, e^-2, e^-3: min-p 0.3 keeps tokens 0, 4 and 1.
  p.min_p = 0.3f;
  const auto n = draws(p, kLogits);
  EXPECT_EQ(n.size(), 3u);
  EXPECT_TRUE(n.count(0) && n.count(4) && n.count(1));
  tern::Sampler s(p);
  tern::Sampler::Dist d;
  s.distribution(kLogits, d);
  double sum = 0;
  for (auto [t, q] : d) sum += q;
  EXPECT_EQ(d.size(), 3u);
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(Sampler, LogitBiasMovesAndBans) {
  tern::SamplerParams p{.temp = 0.0f, .top_k = 40, .top_p = 0.95f, .seed = 0};
  p.logit_bias = {{0, -std::numeric_limits<float>::infinity()}};
  tern::Sampler banned(p);
  EXPECT_EQ(banned.sample(kLogits), 4);  // the next largest
  p.logit_bias = {{3, 10.0f}};
  tern::Sampler raised(p);
  EXPECT_EQ(raised.sample(kLogits), 3);
  p.logit_bias = {{99, 10.0f}};  // outside the logits: no effect
  tern::Sampler outside(p);
  EXPECT_EQ(outside.sample(kLogits), 0);
}

// OpenAI's rule: logit -= presence * (count > 0) + frequency * count, over
// the tokens accepted so far.
TEST(Sampler, PenaltiesCountTheAcceptedTokens) {
  tern::SamplerParams p{.temp = 0.0f, .top_k = 40, .top_p = 0.95f, .seed = 0};
  p.presence_penalty = 0.6f;
  tern::Sampler s(p);
  EXPECT_EQ(s.sample(kLogits), 0);
  s.accept(0);  // 2.0 - 0.6 = 1.4 < 1.5
  EXPECT_EQ(s.sample(kLogits), 4);
  s.accept(0);  // presence counts once
  EXPECT_EQ(s.sample(kLogits), 4);
  p.presence_penalty = 0;
  p.frequency_penalty = 0.3f;
  tern::Sampler f(p);
  f.accept(0);  // 1.7: still the largest
  EXPECT_EQ(f.sample(kLogits), 0);
  f.accept(0);  // 1.4
  EXPECT_EQ(f.sample(kLogits), 4);
  tern::Sampler::Dist d;
  f.distribution(kLogits, d);
  EXPECT_EQ(d[0].first, 4);
  // Without penalties, accepted tokens change nothing.
  tern::Sampler plain({.temp = 0.0f, .top_k = 40, .top_p = 0.95f, .seed = 0});
  for (int i = 0; i < 5; ++i) plain.accept(0);
  EXPECT_EQ(plain.sample(kLogits), 0);
}

}  // namespace
