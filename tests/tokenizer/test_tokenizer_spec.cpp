// The tokenizer as data: SentencePiece and tokenizer.json files -> Spec, and
// Spec <-> GGUF keys.
#include <gtest/gtest.h>

#include "pack/pack_test_util.h"
#include "tern/error.h"
#include "tern/tokenizer.h"
#include "tern/tokenizer_spec.h"

using namespace tern::tok;
using tern::pack::testing::error_of;
using tern::pack::testing::test_dir;
using tern::pack::testing::write_text;

namespace {
const std::string kTokenizer = TERN_SOURCE_DIR "/tests/data/tiny_tokenizer.model";
}  // namespace

TEST(SentencePieceSpec, PiecesScoresAndTypes) {
  Spec t = load_sentencepiece(kTokenizer);
  ASSERT_EQ(t.tokens.size(), 512u);
  EXPECT_EQ(t.scores.size(), 512u);
  EXPECT_EQ(t.tokens[0], "<unk>");
  EXPECT_EQ(t.types[0], kUnknown);
  EXPECT_EQ(t.tokens[1], "<s>");
  EXPECT_EQ(t.types[1], kControl);
  EXPECT_EQ(t.types[2], kControl);
  EXPECT_EQ(t.tokens[3], "<sep>");
  EXPECT_EQ(t.types[3], kUserDefined);
  EXPECT_EQ(t.tokens[4], "<0x00>");
  EXPECT_EQ(t.types[4], kByte);
  EXPECT_EQ(t.types[259], kByte);
  EXPECT_EQ(t.types[260], kNormal);
  EXPECT_EQ(t.bos, 1);
  EXPECT_EQ(t.eos, 2);
  EXPECT_EQ(t.unk, 0);
  EXPECT_EQ(t.pad, -1);
  EXPECT_GT(t.spm_model.size(), 1000u);

  t.pad_to(515);
  ASSERT_EQ(t.tokens.size(), 515u);
  EXPECT_EQ(t.tokens[512], "<unused_0>");
  EXPECT_EQ(t.tokens[514], "<unused_2>");
  EXPECT_EQ(t.types[514], kUnused);
  EXPECT_EQ(t.scores[514], 0.0f);
}

TEST(SentencePieceSpec, Errors) {
  auto dir = test_dir();
  auto msg = error_of([&] { load_sentencepiece(dir + "/tokenizer.model"); });
  EXPECT_NE(msg.find("tokenizer.model: not found"), std::string::npos) << msg;
  write_text(dir + "/tokenizer.model", "this is not a protobuf");
  msg = error_of([&] { load_sentencepiece(dir + "/tokenizer.model"); });
  EXPECT_NE(msg.find("tokenizer.model: not a SentencePiece model"), std::string::npos) << msg;
  EXPECT_THROW(spm_piece_types({0x0a, 0x05, 0x01}), tern::Error);  // field 1 runs past the end
}


// fuzz_sentencepiece found a tokenizer.model whose "<s>" was no longer a
// control piece: the Spec said "add BOS" with no BOS id, and encode put -1
// in front of every text. Such a tokenizer is refused when it is built.
TEST(SentencePieceSpec, AddingABosItDoesNotHaveIsAnError) {
  Spec t = load_sentencepiece(kTokenizer);
  ASSERT_TRUE(t.add_bos);
  t.bos = -1;
  const std::string msg = error_of([&] { tern::Tokenizer tok(std::move(t), "tokenizer.model"); });
  EXPECT_EQ(msg, "tokenizer.model: the tokenizer adds a BOS token at the start but defines none");
}
