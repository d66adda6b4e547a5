// The tern binary as a user meets it: each bad input gives one line on
// stderr naming the file or flag, a non-zero exit, and no output file.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "support/test_env.h"

namespace fs = std::filesystem;
using tern::test::quote;
using tern::test::tern_cli;

namespace {

// A tiny model packed through the CLI itself, made once.
const std::string& model_path() {
  static const std::string path = [] {
    const fs::path dir = tern::test::scratch("cli");
    const std::string hf = (dir / "hf").string(), out = (dir / "tiny.gguf").string();
    auto r = tern::test::run(tern::test::python() + " " +
                                 quote(tern::test::source("tests/tools/make_tiny_checkpoint.py")) +
                                 " " + quote(hf) + " --mode bitnet --seed 3",
                             "cli-make");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = tern_cli("pack " + quote(hf) + " -o " + quote(out), "cli-pack");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }();
  return path;
}

int lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

// The error contract: non-zero exit, exactly one line on stderr, mentioning `what`.
void expect_one_line_error(const tern::test::RunResult& r, const std::string& what) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.exit_code, 128) << "killed by a signal";
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
}

std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string p = (tern::test::scratch("cli") / name).string();
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Cli, GenerateStreamsTextAndReportsSpeed) {
  auto r = tern_cli("generate -m " + quote(model_path()) + " -p 'In the beginning' -n 12 --temp 0",
                    "gen");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  EXPECT_NE(r.err.find("tok/s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kernel scalar"), std::string::npos) << r.err;
}

TEST(Cli, SameSeedSameText) {
  const std::string args = "generate -m " + quote(model_path()) + " -p 'And God said' -n 16 --seed 42";
  auto a = tern_cli(args, "seed-a"), b = tern_cli(args, "seed-b");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(Cli, PerplexityPrintsLlamaCppFinalLine) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning God created the heaven and the earth. ";
  const std::string f = write_file("ppl.txt", text);
  auto r = tern_cli("perplexity -m " + quote(model_path()) + " -f " + quote(f) + " -c 32 --chunks 3",
                    "ppl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[1]"), std::string::npos);
  EXPECT_NE(r.out.find("[3]"), std::string::npos);
  EXPECT_EQ(r.out.find("[4]"), std::string::npos);
  EXPECT_NE(r.out.find("Final estimate: PPL = "), std::string::npos) << r.out;
}

TEST(Cli, InfoDescribesModelAndCpu) {
  auto r = tern_cli("info " + quote(model_path()), "info");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"activation mode: int8", "TQ2_0", "bits/weight", "kernel:", "cpu features:",
                        "blk.0.attn_q.weight"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(Cli, KernelsListsScalarAsSelectedWhenForced) {
  auto r = tern_cli("kernels --kernel scalar", "kernels");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.out.find("scalar");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find(" available"), std::string::npos) << line;
  EXPECT_NE(line.find(" selected"), std::string::npos) << line;
}

TEST(Cli, BenchReportsPromptAndGeneration) {
  auto r = tern_cli("bench -m " + quote(model_path()) + " -p 8 -n 4 -r 1", "bench");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pp"), std::string::npos);
  EXPECT_NE(r.out.find("tg"), std::string::npos);
}

TEST(CliErrors, UnknownFlag) {
  expect_one_line_error(tern_cli("generate --bogus -p x", "e-flag"), "bogus");
}

TEST(CliErrors, NegativeCount) {
  expect_one_line_error(tern_cli("generate -m " + quote(model_path()) + " -p x -n -5", "e-neg"), "-5");
}

TEST(CliErrors, NonNumericThreads) {
  expect_one_line_error(tern_cli("generate -m " + quote(model_path()) + " -p x -t x", "e-thr"), "x");
}

TEST(CliErrors, MissingModelFile) {
  expect_one_line_error(tern_cli("generate -m /nonexistent/m.gguf -p x", "e-miss"),
                        "/nonexistent/m.gguf");
}

TEST(CliErrors, DirectoryAsModel) {
  const std::string d = tern::test::scratch("cli-dir").string();
  expect_one_line_error(tern_cli("info " + quote(d), "e-dir"), d);
}

TEST(CliErrors, WrongMagic) {
  const std::string p = write_file("magic.gguf", "GGML" + std::string(60, '\0'));
  expect_one_line_error(tern_cli("info " + quote(p), "e-magic"), p);
}

TEST(CliErrors, TruncatedFileAtSeveralCutPoints) {
  const std::string whole = read_file(model_path());
  for (size_t cut : {size_t(0), size_t(3), size_t(24), size_t(100), size_t(5000), whole.size() / 2,
                     whole.size() - 1}) {
    const std::string p = write_file("trunc.gguf", whole.substr(0, cut));
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expect_one_line_error(tern_cli("info " + quote(p), "e-trunc"), p);
  }
}

TEST(CliErrors, PromptLongerThanContext) {
  expect_one_line_error(
      tern_cli("generate -m " + quote(model_path()) +
                   " -c 8 -p 'one two three four five six seven eight nine ten eleven'",
               "e-ctx"),
      "context");
}

TEST(CliErrors, TextTooShortForPerplexity) {
  const std::string f = write_file("short.txt", "Too short.");
  expect_one_line_error(tern_cli("perplexity -m " + quote(model_path()) + " -f " + quote(f), "e-ppl"),
                        f);
}

TEST(CliErrors, UnknownKernel) {
  expect_one_line_error(tern_cli("generate -m " + quote(model_path()) + " -p x --kernel nope", "e-k"),
                        "nope");
}

TEST(CliErrors, PackMissingDirectoryLeavesNoOutput) {
  const std::string out = (tern::test::scratch("cli") / "never.gguf").string();
  expect_one_line_error(tern_cli("pack /nonexistent/ckpt -o " + quote(out), "e-pack"),
                        "/nonexistent/ckpt");
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliErrors, PackNonTernaryWithoutFlagNamesTensorAndLeavesNoOutput) {
  const fs::path dir = tern::test::scratch("cli-dense");
  const std::string hf = (dir / "hf").string(), out = (dir / "dense.gguf").string();
  fs::remove(out);  // from an earlier run of this test
  auto r = tern::test::run(tern::test::python() + " " +
                               quote(tern::test::source("tests/tools/make_tiny_checkpoint.py")) +
                               " " + quote(hf) + " --mode dense --seed 5",
                           "cli-make-dense");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_one_line_error(tern_cli("pack " + quote(hf) + " -o " + quote(out), "e-dense"),
                        "not ternary");
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  r = tern_cli("pack " + quote(hf) + " -o " + quote(out) + " --ternarize", "dense-ok");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
}

}  // namespace
