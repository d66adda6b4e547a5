// Many sequences through the binary: generate -np (continuations of one
// prompt), generate --prompts-file (a data set, -np at a time), bench -npl.
// Each sequence's text is the one `generate` gives it alone with its seed.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_env.h"

namespace fs = std::filesystem;
using tern::test::expect_one_line_error;
using tern::test::quote;

namespace {

std::string model_path() { return (tern::test::test_models() / "bitnet" / "tq2_0.gguf").string(); }

class CliParallel : public ::testing::Test {
 protected:
  tern::test::RunResult cli(const std::string& args, const std::string& tag = "out") {
    return tern::test::tern_cli("generate -m " + quote(model_path()) + " " + args, tag, dir_);
  }
  // What plain generate prints for one prompt and seed, without its final newline.
  std::string alone(const std::string& prompt, int seed, int n) {
    auto r = cli("-p " + quote(prompt) + " -n " + std::to_string(n) + " --seed " + std::to_string(seed),
                 "alone" + std::to_string(seed));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
    return r.out;
  }
  std::string write_file(const std::string& name, const std::string& bytes) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  const fs::path dir_ = tern::test::test_dir();
};

// A text as a JSON string holds it: invalid UTF-8 (a byte token of the tiny
// model) replaced by U+FFFD.
std::string as_json_text(const std::string& s) {
  return nlohmann::json::parse(nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

TEST_F(CliParallel, ContinuationsAreBlocksOfTheTextsOfSuccessiveSeeds) {
  auto r = cli("-p 'And God said' -n 20 -np 3 --seed 42");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string want;
  for (int i = 0; i < 3; ++i) want += "sequence " + std::to_string(i) + ":\n\n" + alone("And God said", 42 + i, 20) + "\n\n";
  EXPECT_EQ(r.out, want);
  EXPECT_NE(r.err.find("over 3 sequences"), std::string::npos) << r.err;
  // Long form, and greedy: every continuation is the same text.
  auto g = cli("-p 'And God said' -n 12 --parallel 2 --temp 0");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const size_t second = g.out.find("sequence 1:\n\n");
  ASSERT_NE(second, std::string::npos) << g.out;
  EXPECT_EQ(g.out.substr(second + 14), g.out.substr(14, second - 14));
}

TEST_F(CliParallel, BadCountsAreOneLineErrors) {
  expect_one_line_error(cli("-p x -np 0"), "parallel");
  // Four sequences of 400 tokens do not fit 512 positions (in pages of 256,
  // plus one page for each further sequence).
  expect_one_line_error(cli("-p 'In the beginning' -n 400 -np 4 -c 512 --ignore-eos"), "-np 4");
  expect_one_line_error(cli("--output x.jsonl -p x"), "--output");
  expect_one_line_error(cli("-n 4"), "--prompts-file");
}

TEST_F(CliParallel, PromptsFileGivesOneLineEachInOrderAndErrorsOfTheirOwn) {
  std::string longest;
  for (int i = 0; i < 40; ++i) longest += "and the LORD said ";
  const std::string prompts = write_file(
      "p.txt", "In the beginning\nAnd God said\n\n{\"prompt\": \"The LORD is my shepherd\", \"id\": 7}\n{\"bad json\n" +
                   longest + "\nJesus wept");
  const std::string out = (dir_ / "out.jsonl").string();
  auto r = cli("--prompts-file " + quote(prompts) + " -np 2 -c 128 -n 10 --seed 5 --output " + quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  std::vector<nlohmann::json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(lines.size(), 7u);
  const char* const ok[] = {"In the beginning", "And God said", nullptr, "The LORD is my shepherd", nullptr, nullptr,
                            "Jesus wept"};
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["index"], i);
    if (!ok[i]) {
      EXPECT_EQ(lines[i]["finish_reason"], "error") << lines[i].dump();
      EXPECT_FALSE(lines[i]["error"].get<std::string>().empty());
      continue;
    }
    EXPECT_EQ(lines[i]["prompt"], ok[i]);
    EXPECT_EQ(lines[i]["finish_reason"], "length") << lines[i].dump();
    EXPECT_EQ(lines[i]["tokens"].size(), 10u);
    EXPECT_EQ(lines[i]["text"], as_json_text(alone(ok[i], 5 + int(i), 10))) << "line " << i;
  }
  EXPECT_EQ(lines[2]["error"], "empty prompt");
  EXPECT_EQ(lines[4]["error"], "not a JSON object");
  EXPECT_NE(lines[5]["error"].get<std::string>().find("a sequence holds 64"), std::string::npos) << lines[5].dump();
  // Without --output the lines go to stdout, the same.
  auto s = cli("--prompts-file " + quote(prompts) + " -np 3 -c 192 -n 10 --seed 5", "stdout");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  std::istringstream lines_out(s.out);
  std::string first;
  std::getline(lines_out, first);
  EXPECT_EQ(nlohmann::json::parse(first), lines[0]);
}

TEST_F(CliParallel, MissingPromptsFileLeavesNoOutput) {
  const std::string out = (dir_ / "out.jsonl").string();
  expect_one_line_error(cli("--prompts-file /nonexistent/p.txt --output " + quote(out)), "/nonexistent/p.txt");
  EXPECT_FALSE(fs::exists(out));
  expect_one_line_error(cli("--prompts-file " + quote(write_file("empty.txt", "")) + " --output " + quote(out)),
                        "no prompt");
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir_)) EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos);
}

TEST_F(CliParallel, BenchNplRowsHaveTheirSequenceCounts) {
  auto r = tern::test::tern_cli("bench -m " + quote(model_path()) + " -p 8 -n 4 -npl 1,3 -r 1 -o json --no-roof",
                                "bench", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 6u) << r.out;  // pp8, tg4, then pp8 and tg4 @ d8 for 1 and 3 sequences
  const int want[6][4] = {{8, 0, 1, 0}, {0, 4, 1, 0}, {8, 0, 1, 0}, {0, 4, 1, 8}, {8, 0, 3, 0}, {0, 4, 3, 8}};
  for (size_t i = 0; i < j.size(); ++i) {
    EXPECT_EQ(j[i]["n_prompt"], want[i][0]) << i;
    EXPECT_EQ(j[i]["n_gen"], want[i][1]) << i;
    EXPECT_EQ(j[i]["n_seq"], want[i][2]) << i;
    EXPECT_EQ(j[i]["n_depth"], want[i][3]) << i;
    EXPECT_GT(j[i]["avg_ts"].get<double>(), 0);
  }
}

}  // namespace

namespace {

// llama-perplexity's n_seq: chunks shorter than -b run as sequences of one
// batch, and every figure is the same as one chunk at a time.
TEST(CliPerplexityBatches, ChunksAsSequencesGiveTheSameFigures) {
  const auto dir = tern::test::test_dir();
  const std::string text = quote(tern::test::source("models/revelation.txt"));
  for (const char* model : {"bitnet/tq2_0.gguf", "ternary/tq1_0.gguf"}) {
    const std::string args = "perplexity -m " + quote((tern::test::test_models() / model).string()) + " -f " + text +
                             " -c 64 --chunks 12";
    auto one = tern::test::tern_cli(args + " -b 1", "one", dir), many = tern::test::tern_cli(args, "many", dir),
         some = tern::test::tern_cli(args + " -b 300", "some", dir);
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_NE(one.out.find("[12]"), std::string::npos) << one.out;
    EXPECT_EQ(many.out, one.out) << model;
    EXPECT_EQ(some.out, one.out) << model;
  }
}

}  // namespace
