// Speculative decoding through the binary: greedy text as without drafts,
// the acceptance on stderr, and the flags' errors.
#include <gtest/gtest.h>

#include "support/test_env.h"

using tern::test::expect_one_line_error;
using tern::test::quote;

namespace {

std::string model(const char* name) { return quote((tern::test::test_models() / name).string()); }

class CliSpeculative : public ::testing::Test {
 protected:
  tern::test::RunResult cli(const std::string& args, const std::string& tag = "out") {
    return tern::test::tern_cli(args, tag, dir_);
  }
  const std::filesystem::path dir_ = tern::test::test_dir();
};

TEST_F(CliSpeculative, GreedyTextIsUnchangedAndTheAcceptanceIsReported) {
  const std::string gen = "generate -m " + model("bitnet/tq2_0.gguf") + " -p 'In the beginning' -n 48 --temp 0";
  auto plain = cli(gen, "plain");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto twin = cli(gen + " -md " + model("bitnet/tq1_0.gguf") + " --draft-max 5", "twin");
  ASSERT_EQ(twin.exit_code, 0) << twin.err;
  EXPECT_EQ(twin.out, plain.out);
  EXPECT_NE(twin.err.find("acceptance 1.000"), std::string::npos) << twin.err;
  auto other = cli(gen + " --model-draft " + model("ternary/tq2_0.gguf"), "other");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(other.out, plain.out);
  auto lookup = cli(gen + " --lookup --draft-min 2", "lookup");
  ASSERT_EQ(lookup.exit_code, 0) << lookup.err;
  EXPECT_EQ(lookup.out, plain.out);
  EXPECT_NE(lookup.err.find("speculative (lookup"), std::string::npos) << lookup.err;
}

TEST_F(CliSpeculative, ChatRepliesAreUnchanged) {
  const std::string chat = "sh -c \"printf 'Hello\\nAnd then\\n' | " + quote(TERN_EXE) + " chat -m " +
                           model("bpe/tq2_0.gguf") + " -n 16 --temp 0";
  auto plain = tern::test::run(chat + "\"", "plain", dir_);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto lookup = tern::test::run(chat + " --lookup\"", "lookup", dir_);
  ASSERT_EQ(lookup.exit_code, 0) << lookup.err;
  EXPECT_EQ(lookup.out, plain.out);
  EXPECT_NE(lookup.err.find("speculative (lookup"), std::string::npos) << lookup.err;
}

TEST_F(CliSpeculative, BadFlagsAreOneLineErrors) {
  const std::string gen = "generate -m " + model("bitnet/tq2_0.gguf") + " -p x -n 4";
  // Another vocabulary: both files named.
  auto r = cli(gen + " -md " + model("bpe/tq2_0.gguf"));
  expect_one_line_error(r, "vocabulary");
  EXPECT_NE(r.err.find("bpe/tq2_0.gguf"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bitnet/tq2_0.gguf"), std::string::npos) << r.err;
  expect_one_line_error(cli(gen + " --lookup --draft-max 0"), "draft-max");
  expect_one_line_error(cli(gen + " --lookup --draft-max 2 --draft-min 3"), "draft-min");
  expect_one_line_error(cli(gen + " --lookup -md " + model("bitnet/tq1_0.gguf")), "exclude");
  expect_one_line_error(cli(gen + " --lookup -np 2"), "one sequence");
  expect_one_line_error(cli(gen + " -md /nonexistent/d.gguf"), "/nonexistent/d.gguf");
}

}  // namespace
