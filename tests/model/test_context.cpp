// Contexts: many sequences in one batch, their pages of the KV cache shared
// and copied, and a batch's bad entries. The bar is the bits: a token's
// logits in any batch, beside any other sequences, equal those of its
// sequence decoded alone one token at a time, on every kernel set.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "support/test_env.h"
#include "tern/context.h"
#include "tern/error.h"
#include "tern/model.h"

namespace {

using tern::BatchToken;

// A file of the make_test_models fixture and how it is run.
struct Case {
  const char* file;  // under test_models()
  tern::FloatActs acts;
};
const Case kCases[] = {
    {"bitnet/tq2_0.gguf", tern::FloatActs::Int16},          // int8 activations
    {"bitnet/tq1_0.gguf", tern::FloatActs::Int16},
    {"ternary/tq2_0.gguf", tern::FloatActs::Int16},         // float model, int16 digits
    {"ternary/tq2_0.gguf", tern::FloatActs::Exact},         // float kernels
    {"family-1bitllm-3b/tq2_0.gguf", tern::FloatActs::Int16},  // rows padded to whole blocks
    {"family-falcon-e/tq2_0.gguf", tern::FloatActs::Int16},    // linears with their own norms
    {"family-qwen3/tq2_0.gguf", tern::FloatActs::Int16},       // q/k norms, YaRN past 64 positions
    {"family-bonsai/pq2_0.gguf", tern::FloatActs::Int16},      // group scales
    {"family-bonsai/q2_0.gguf", tern::FloatActs::Exact},       // group scales, float kernels
    {"family-bonsai/ptq1_0.gguf", tern::FloatActs::Int16},     // converted to PQ2_0 at load
    {"family-bonsai/q1_0.gguf", tern::FloatActs::Exact},
    {"fairy2i/w2.gguf", tern::FloatActs::Exact},            // phase linears
};

std::string path_of(const Case& c) { return (tern::test::test_models() / c.file).string(); }

// The sets that can run a case, scalar last.
std::vector<const tern::KernelSet*> sets_for(const tern::Model& m) {
  std::vector<const tern::KernelSet*> sets;
  const tern::ActMode mode = m.act_digits() ? tern::ActMode::Int8 : tern::ActMode::Float;
  for (const tern::KernelSet* k : tern::all_kernel_sets())
    if (k->available(tern::cpu_features()) && tern::kernel_supports(*k, mode, m.config().phase)) sets.push_back(k);
  return sets;
}

std::unique_ptr<tern::Model> load(const Case& c, const char* kernel) {
  tern::LoadOptions lo;
  lo.kernel = kernel;
  lo.float_acts = c.acts;
  lo.threads = 1;
  return tern::Model::load(path_of(c), lo);
}

// Sequence s's tokens: lengths from 3 to past one KV page.
std::vector<std::vector<int32_t>> sequences(int n, int vocab) {
  std::vector<std::vector<int32_t>> seqs;
  for (int s = 0; s < n; ++s) {
    const int len = s == 1 ? tern::kKvPage + 30 : 3 + (s * 7) % 29;
    std::vector<int32_t> t;
    for (int i = 0; i < len; ++i) t.push_back(int32_t((s * 131 + i * 17 + (i * i) % 7) % vocab));
    seqs.push_back(t);
  }
  return seqs;
}

// Each token's logits with its sequence decoded alone, a token per step.
std::vector<std::vector<float>> alone(const tern::Model& m, const std::vector<int32_t>& seq) {
  tern::Context ctx(m, {.ctx = int(seq.size()), .threads = 1});
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < seq.size(); ++i) {
    const auto l = ctx.forward({&seq[i], 1}, int(i), false);
    out.emplace_back(l.begin(), l.end());
  }
  return out;
}

bool same_bits(std::span<const float> a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), b.size() * sizeof(float)) == 0;
}

// Steps over all sequences at once: in each, a sequence feeds a chunk of 1
// to 9 tokens (its prompt) or, every third step, one token; some sit a
// step out. Every entry asks for logits, which must be its alone bits.
void check_mixed_batches(const tern::Model& m, int n_seqs, int threads) {
  const auto seqs = sequences(n_seqs, m.config().vocab_size);
  std::vector<std::vector<std::vector<float>>> want;
  for (const auto& s : seqs) want.push_back(alone(m, s));
  tern::Context ctx(m, {.ctx = 2048, .max_seqs = n_seqs, .max_batch = 24, .threads = threads});
  std::vector<size_t> done(seqs.size(), 0);
  for (int step = 0;; ++step) {
    std::vector<BatchToken> batch;
    for (size_t s = 0; s < seqs.size(); ++s) {
      if ((step + int(s)) % 5 == 4) continue;  // sits this step out
      const size_t take = std::min(seqs[s].size() - done[s], step % 3 == 2 ? size_t(1) : 1 + (s + size_t(step)) % 9);
      for (size_t i = done[s]; i < done[s] + take; ++i) batch.push_back({seqs[s][i], int(s), int(i), true});
    }
    if (batch.empty()) {
      bool all = true;
      for (size_t s = 0; s < seqs.size(); ++s) all = all && done[s] == seqs[s].size();
      if (all) break;
      continue;
    }
    const auto logits = ctx.decode(batch);
    const size_t V = size_t(m.config().vocab_size);
    ASSERT_EQ(logits.size(), batch.size() * V);
    for (size_t e = 0; e < batch.size(); ++e) {
      const BatchToken& b = batch[e];
      ASSERT_TRUE(same_bits(logits.subspan(e * V, V), want[size_t(b.seq)][size_t(b.pos)]))
          << "step " << step << ", sequence " << b.seq << ", position " << b.pos;
    }
    for (const BatchToken& b : batch) done[size_t(b.seq)] = size_t(b.pos) + 1;
  }
  for (size_t s = 0; s < seqs.size(); ++s) EXPECT_EQ(ctx.seq_length(int(s)), int(seqs[s].size()));
}

TEST(Context, MixedBatchesGiveEveryTokenItsLogitsAlone) {
  int ran = 0;
  for (const Case& c : kCases) {
    const auto probe = load(c, "");
    for (const tern::KernelSet* k : sets_for(*probe)) {
      SCOPED_TRACE(std::string(c.file) + " on " + k->name);
      const auto m = load(c, k->name);
      check_mixed_batches(*m, 16, 2);
      ++ran;
    }
  }
  EXPECT_GE(ran, int(std::size(kCases)));
}

TEST(Context, BatchSizesFromOneToSixteenSequences) {
  const auto m = load(kCases[0], "");
  for (int n : {1, 2, 3, 5, 8, 13, 16}) {
    SCOPED_TRACE(std::to_string(n) + " sequences");
    check_mixed_batches(*m, n, 1 + n % 2);
  }
}

// A prompt evaluated once and shared by three continuations, whose first
// writes land in the shared partial page: each continuation's logits are
// those of its whole text alone, and the prompt's owner is untouched.
TEST(Context, SharedPromptPagesAreCopiedOnWrite) {
  const auto m = load(kCases[0], "");
  const int V = m->config().vocab_size;
  std::vector<int32_t> prompt;
  for (int i = 0; i < tern::kKvPage + 20; ++i) prompt.push_back((i * 37 + 5) % V);
  tern::Context ctx(*m, {.ctx = 4 * (tern::kKvPage + 40), .max_seqs = 4, .threads = 2});
  ctx.forward(prompt, 0, false, 0);
  for (int s = 1; s < 4; ++s) ctx.seq_share(0, s);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(ctx.seq_length(s), int(prompt.size()));
  for (int step = 0; step < 6; ++step) {
    std::vector<BatchToken> batch;
    for (int s = 0; s < 4; ++s) batch.push_back({(s * 50 + step * 3) % V, s, int(prompt.size()) + step, true});
    const auto logits = ctx.decode(batch);
    for (int s = 0; s < 4; ++s) {
      std::vector<int32_t> whole = prompt;
      for (int j = 0; j <= step; ++j) whole.push_back((s * 50 + j * 3) % V);
      tern::Context lone(*m, {.ctx = int(whole.size()), .threads = 1});
      const auto want = lone.forward(whole, 0, false);
      ASSERT_TRUE(same_bits(logits.subspan(size_t(s) * V, size_t(V)), {want.begin(), want.end()}))
          << "sequence " << s << " step " << step;
    }
  }
  // Cut back into the shared page and rewritten differently: the others keep theirs.
  ctx.seq_truncate(2, 10);
  EXPECT_EQ(ctx.seq_length(2), 10);
  const int32_t t = 7;
  ctx.decode(std::vector<BatchToken>{{t, 2, 10, false}});
  std::vector<int32_t> three = prompt;
  for (int j = 0; j < 6; ++j) three.push_back((3 * 50 + j * 3) % V);
  const int32_t next = 11;
  const auto got = ctx.forward({&next, 1}, int(three.size()), false, 3);
  const std::vector<float> have(got.begin(), got.end());
  three.push_back(next);
  tern::Context lone(*m, {.ctx = int(three.size()), .threads = 1});
  const auto want = lone.forward(three, 0, false);
  EXPECT_TRUE(same_bits(want, have));
}

// A full cache refuses the batch that does not fit and keeps every
// sequence as it was; removing a sequence gives its pages to the next.
TEST(Context, FullCacheRefusesTheBatchAndRemovedPagesAreReused) {
  const auto m = load(kCases[0], "");
  const int P = tern::kKvPage;
  // Three pages: two for 300 positions, one more for the second sequence.
  tern::Context ctx(*m, {.ctx = 300, .max_seqs = 2, .threads = 1});
  const std::vector<int32_t> a(size_t(P), 5), b(size_t(P), 9);
  ctx.forward(a, 0, false, 0);
  ctx.forward(b, 0, false, 1);
  std::vector<BatchToken> more;
  for (int i = 0; i < 60; ++i) more.push_back({3, 0, P + i, false});
  EXPECT_THROW(ctx.decode(more), tern::Error);  // past n_ctx
  ctx.decode(std::vector<BatchToken>{{4, 0, P, false}});  // the third page
  try {
    ctx.decode(std::vector<BatchToken>{{1, 0, P + 1, false}, {2, 1, P, false}});
    ADD_FAILURE() << "a batch past the cache ran";
  } catch (const tern::Error& e) {
    EXPECT_NE(std::string(e.what()).find("KV cache is full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ctx.seq_length(0), P + 1);
  EXPECT_EQ(ctx.seq_length(1), P);
  const std::pair<int, int> grow{1, 1};
  EXPECT_FALSE(ctx.fits({&grow, 1}));
  ctx.seq_remove(0);
  EXPECT_TRUE(ctx.fits({&grow, 1}));
  const int32_t t = 3;
  const auto got = ctx.forward({&t, 1}, P, false, 1);
  std::vector<int32_t> whole = b;
  whole.push_back(t);
  tern::Context lone(*m, {.ctx = int(whole.size()), .threads = 1});
  const auto want = lone.forward(whole, 0, false);
  EXPECT_TRUE(same_bits(got, {want.begin(), want.end()}));
}

TEST(Context, BadBatchEntriesAreRefusedAndChangeNothing) {
  const auto m = load(kCases[0], "");
  tern::Context ctx(*m, {.ctx = 64, .max_seqs = 3, .threads = 1});
  const std::vector<int32_t> p{1, 2, 3};
  ctx.forward(p, 0, false, 0);
  const std::vector<std::vector<BatchToken>> bad{
      {},                                              // empty
      {{1, 0, 2, true}},                               // overwrites position 2
      {{1, 0, 4, true}},                               // skips position 3
      {{1, 3, 0, true}},                               // no sequence 3
      {{1, -1, 0, true}},
      {{1, 1, 0, true}, {2, 0, 3, true}, {3, 1, 1, true}},  // sequence 1 in two places
      {{1, 1, 0, true}, {2, 1, 2, true}},              // a gap
      {{1, 0, 3, true}, {100000, 1, 0, true}},         // token outside the vocabulary
      {{-1, 1, 0, true}},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_THROW(ctx.decode(bad[i]), tern::Error) << "batch " << i;
    EXPECT_EQ(ctx.seq_length(0), 3) << "batch " << i;
    EXPECT_EQ(ctx.seq_length(1), 0) << "batch " << i;
  }
  EXPECT_THROW(ctx.forward(p, 5, false, 0), tern::Error);  // past what it holds
  EXPECT_THROW(ctx.seq_share(0, 3), tern::Error);
  EXPECT_THROW(tern::Context(*m, {.max_seqs = 0}), tern::Error);
  // And the context still runs.
  const auto l = ctx.decode(std::vector<BatchToken>{{4, 0, 3, true}, {5, 1, 0, true}});
  EXPECT_EQ(l.size(), 2 * size_t(m->config().vocab_size));
}

}  // namespace
