// The tern binary as a user meets it: each bad input gives one line on
// stderr naming the file or flag, a non-zero exit, and no output file.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "support/test_env.h"

namespace fs = std::filesystem;
using tern::test::expect_one_line_error;
using tern::test::quote;

namespace {

// The tiny int8-mode model the make_test_models fixture packed with the CLI.
std::string model_path() { return (tern::test::test_models() / "bitnet" / "tq2_0.gguf").string(); }

// Each test gets its own directory for inputs it writes and captured output.
class Cli : public ::testing::Test {
 protected:
  tern::test::RunResult cli(const std::string& args, const std::string& tag = "out") {
    return tern::test::tern_cli(args, tag, dir_);
  }
  std::string write_file(const std::string& name, const std::string& bytes) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  const fs::path dir_ = tern::test::test_dir();
};
using CliErrors = Cli;

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(Cli, GenerateStreamsTextAndReportsSpeed) {
  auto r = cli("generate -m " + quote(model_path()) + " -p 'In the beginning' -n 12 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  EXPECT_NE(r.err.find("tok/s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(", kernel "), std::string::npos) << r.err;
}

TEST_F(Cli, SameSeedSameText) {
  const std::string args = "generate -m " + quote(model_path()) + " -p 'And God said' -n 16 --seed 42";
  auto a = cli(args, "a"), b = cli(args, "b");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST_F(Cli, PerplexityPrintsLlamaCppFinalLine) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "In the beginning God created the heaven and the earth. ";
  const std::string f = write_file("ppl.txt", text);
  auto r = cli("perplexity -m " + quote(model_path()) + " -f " + quote(f) + " -c 32 --chunks 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[1]"), std::string::npos);
  EXPECT_NE(r.out.find("[3]"), std::string::npos);
  EXPECT_EQ(r.out.find("[4]"), std::string::npos);
  EXPECT_NE(r.out.find("Final estimate: PPL = "), std::string::npos) << r.out;
}

// llama.cpp's -ctk / -ctv: a half-precision cache moves the perplexity a
// little and not at all to garbage; an unknown type is a one-line error.
TEST_F(Cli, CacheTypesAsLlamaCpp) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "And God said, Let there be light: and there was light. ";
  const std::string f = write_file("ppl_kv.txt", text);
  auto ppl = [&](const std::string& flags) {
    auto r = cli("perplexity -m " + quote(model_path()) + " -f " + quote(f) + " -c 32 --chunks 3 " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.find("PPL = ");
    return at == std::string::npos ? -1.0 : std::stod(r.out.substr(at + 6));
  };
  const double exact = ppl(""), half = ppl("-ctk f16 -ctv f16"), mixed = ppl("-ctk bf16");
  ASSERT_GT(exact, 1.0);
  EXPECT_NEAR(half, exact, exact * 0.01);
  EXPECT_NEAR(mixed, exact, exact * 0.02);
  auto g = cli("generate -m " + quote(model_path()) + " -p x -n 4 -s 1 -ctv f16");
  EXPECT_EQ(g.exit_code, 0) << g.err;
  expect_one_line_error(cli("generate -m " + quote(model_path()) + " -p x -ctk q4_0"), "q4_0");
}

TEST_F(Cli, InfoDescribesModelAndCpu) {
  auto r = cli("info " + quote(model_path()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"activation mode: int8", "TQ2_0", "bits/weight", "kernel:", "cpu features:",
                        "blk.0.attn_q.weight"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

// tern info names PrismML's group types as stored and what they run as.
TEST_F(Cli, InfoNamesTheGroupTypesAndTheirLayout) {
  const auto bonsai = tern::test::test_models() / "family-bonsai";
  const std::pair<const char*, const char*> cases[] = {
      {"pq2_0.gguf", "ternary: 1.25 M weights in PQ2_0, 2.1250 bits/weight\n"},
      {"ptq1_0.gguf", "ternary: 1.25 M weights in PTQ1_0, 1.7500 bits/weight, repacked to PQ2_0 at load\n"},
      {"q1_0.gguf", "binary: 1.25 M weights in Q1_0, 1.1250 bits/weight, repacked to PQ2_0 at load\n"},
      {"q2_0-g128.gguf", "type 42:         declared Q2_0 but in 128-weight blocks"}};
  for (auto [file, line] : cases) {
    auto r = cli("info " + quote((bonsai / file).string()), file);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(line), std::string::npos) << file << "\n" << r.out;
  }
  EXPECT_EQ(cli("info " + quote((bonsai / "q2_0.gguf").string())).out.find("type 42:"), std::string::npos);
}

// A float-activation model runs on int16 activations unless --float-act
// f32 asks for the float kernels; the two perplexities differ, but barely.
TEST_F(Cli, FloatActChoosesFloatModelInputs) {
  const std::string m = (tern::test::test_models() / "ternary" / "tq2_0.gguf").string();
  auto info = cli("info " + quote(m));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("activation mode: float, run as int16"), std::string::npos) << info.out;
  const std::string text = quote(tern::test::source("models/revelation.txt"));
  auto ppl = [&](const std::string& flags) {
    auto r = cli("perplexity -m " + quote(m) + " -f " + text + " -c 64 --chunks 4 " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto at = r.out.find("PPL = ");
    return at == std::string::npos ? -1.0 : std::stod(r.out.substr(at + 6));
  };
  const double i16 = ppl(""), f32 = ppl("--float-act f32");
  ASSERT_GT(f32, 1.0);
  EXPECT_NE(i16, f32);
  EXPECT_NEAR(i16, f32, f32 * 1e-3);
  EXPECT_EQ(ppl("--float-act i16"), i16);
  // int8: lossy, so neither the float nor the int16 figure, but close.
  const double i8 = ppl("--float-act i8");
  EXPECT_NE(i8, i16);
  EXPECT_NEAR(i8, f32, f32 * 5e-2);
  EXPECT_NE(cli("info " + quote(m) + " --float-act i8").out.find("activation mode: float, run as int8"),
            std::string::npos);
  expect_one_line_error(cli("generate -m " + quote(m) + " -p x --float-act i4"), "--float-act");
}

TEST_F(Cli, InfoShowsKernelAutoChoices) {
  auto r = cli("info " + quote(model_path()) + " --kernel auto");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(--kernel auto: linears by shape below)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" runs on "), std::string::npos) << r.out;
  EXPECT_EQ(cli("info " + quote(model_path())).out.find(" runs on "), std::string::npos);
}

TEST_F(Cli, InfoNamesPaddedRows) {
  // 1bitLLM 3B's widths (here 200 and 540) are stored as whole 256-blocks.
  const std::string m = (tern::test::test_models() / "family-1bitllm-3b" / "tq1_0.gguf").string();
  auto r = cli("info " + quote(m));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("padded rows:     200 -> 256, 540 -> 768"), std::string::npos) << r.out;
  EXPECT_EQ(cli("info " + quote(model_path())).out.find("padded rows"), std::string::npos);
}

TEST_F(Cli, InfoNamesLinearInputNorms) {
  const std::string m = (tern::test::test_models() / "family-falcon-e" / "tq2_0.gguf").string();
  auto r = cli("info " + quote(m));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(", an RMSNorm inside every ternary linear)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("blk.0.ffn_down.rms_norm.weight"), std::string::npos) << r.out;
}

TEST_F(Cli, KernelsListsScalarAsSelectedWhenForced) {
  auto r = cli("kernels --kernel scalar");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.out.find("scalar");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find(" available"), std::string::npos) << line;
  EXPECT_NE(line.find(" selected"), std::string::npos) << line;
  // Scalar serves every mode, Fairy2i's phase kernel too.
  EXPECT_NE(line.find("float+int8+fairy2i+fairy2i-int8"), std::string::npos) << line;
  EXPECT_NE(line.find("selected(fairy2i)"), std::string::npos) << line;
  EXPECT_NE(line.find("selected(fairy2i-int8)"), std::string::npos) << line;
}

TEST_F(Cli, BenchReportsPromptAndGeneration) {
  auto r = cli("bench -m " + quote(model_path()) + " -p 8 -n 4 -r 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pp"), std::string::npos);
  EXPECT_NE(r.out.find("tg"), std::string::npos);
}

TEST_F(CliErrors, UnknownFlag) {
  expect_one_line_error(cli("generate --bogus -p x"), "bogus");
}

TEST_F(CliErrors, NegativeCount) {
  expect_one_line_error(cli("generate -m " + quote(model_path()) + " -p x -n -5"), "-5");
}

TEST_F(CliErrors, NonNumericThreads) {
  expect_one_line_error(cli("generate -m " + quote(model_path()) + " -p x -t x"), "x");
}

TEST_F(CliErrors, MissingModelFile) {
  expect_one_line_error(cli("generate -m /nonexistent/m.gguf -p x"),
                        "/nonexistent/m.gguf");
}

TEST_F(CliErrors, DirectoryAsModel) {
  const std::string d = dir_.string();
  expect_one_line_error(cli("info " + quote(d)), d);
}

TEST_F(CliErrors, WrongMagic) {
  const std::string p = write_file("magic.gguf", "GGML" + std::string(60, '\0'));
  expect_one_line_error(cli("info " + quote(p)), p);
}

TEST_F(CliErrors, TruncatedFileAtSeveralCutPoints) {
  const std::string whole = read_file(model_path());
  for (size_t cut : {size_t(0), size_t(3), size_t(24), size_t(100), size_t(5000), whole.size() / 2,
                     whole.size() - 1}) {
    const std::string p = write_file("trunc.gguf", whole.substr(0, cut));
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expect_one_line_error(cli("info " + quote(p)), p);
  }
}

TEST_F(CliErrors, PromptLongerThanContext) {
  expect_one_line_error(
      cli("generate -m " + quote(model_path()) +
          " -c 8 -p 'one two three four five six seven eight nine ten eleven'"),
      "context");
}

TEST_F(CliErrors, TextTooShortForPerplexity) {
  const std::string f = write_file("short.txt", "Too short.");
  expect_one_line_error(cli("perplexity -m " + quote(model_path()) + " -f " + quote(f)),
                        f);
}

// TERN_KERNEL picks the set when --kernel is not given (the CLI reads it
// and hands it to the library as a load option); --kernel wins over it.
TEST_F(Cli, KernelFromTheEnvironment) {
  const std::string exe = quote(TERN_EXE), m = quote(model_path());
  auto r = tern::test::run("TERN_KERNEL=scalar " + exe + " info " + m, "env", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kernel:          scalar\n"), std::string::npos) << r.out;
  r = tern::test::run("TERN_KERNEL=nope " + exe + " info " + m + " --kernel scalar", "env2", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kernel:          scalar\n"), std::string::npos) << r.out;
  expect_one_line_error(tern::test::run("TERN_KERNEL=nope " + exe + " generate -m " + m + " -p x", "env3", dir_),
                        "TERN_KERNEL=nope: unknown kernel");
}

TEST_F(CliErrors, UnknownKernel) {
  expect_one_line_error(cli("generate -m " + quote(model_path()) + " -p x --kernel nope"),
                        "nope");
}

TEST_F(CliErrors, PackMissingDirectoryLeavesNoOutput) {
  const std::string out = (dir_ / "never.gguf").string();
  expect_one_line_error(cli("pack /nonexistent/ckpt -o " + quote(out)),
                        "/nonexistent/ckpt");
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(CliErrors, PackNonTernaryWithoutFlagNamesTensorAndLeavesNoOutput) {
  const std::string hf = (tern::test::test_models() / "dense" / "hf").string();
  const std::string out = (dir_ / "dense.gguf").string();
  expect_one_line_error(cli("pack " + quote(hf) + " -o " + quote(out)),
                        "not ternary");
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  const auto r = cli("pack " + quote(hf) + " -o " + quote(out) + " --ternarize", "ok");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
}

TEST_F(CliErrors, PackTypeIsCaseInsensitive) {
  // The flag's check accepts any case, so the mapping must too: "Tq1_0"
  // once passed the check and was packed as TQ2_0.
  const std::string hf = (tern::test::test_models() / "bitnet" / "hf").string();
  const std::string out = (dir_ / "mixed.gguf").string();
  auto r = cli("pack " + quote(hf) + " -o " + quote(out) + " --type Tq1_0", "pack-mixed");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cli("info " + quote(out), "info-mixed");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("TQ1_0"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("TQ2_0"), std::string::npos) << r.out;
}

}  // namespace

namespace {

// llama.cpp's sampling flags: -l bans or moves a token, the penalties and
// --min-p take their ranges, and a bad value is a one-line error. On the
// bundled model, whose greedy text is words.
TEST(CliSampling, LogitBiasPenaltiesAndMinP) {
  const auto dir = tern::test::test_dir();
  const std::string gen = "generate -p 'In the beginning' -n 8 --temp 0";
  auto plain = tern::test::tern_cli(gen, "plain", dir);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  // Every id of the text banned: the text changes; a tiny bias on them does not.
  auto ids = tern::test::tern_cli("tokenize --ids --no-bos -p " + quote(plain.out.substr(0, plain.out.size() - 1)),
                                  "ids", dir);
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  std::string ban, nudge;
  for (size_t at = 1; at < ids.out.size();) {
    const size_t end = ids.out.find_first_of(",]", at);
    const std::string id = ids.out.substr(at, end - at);
    ban += " -l " + id + "-inf";
    nudge += " --logit-bias " + id + "+0.0001";
    at = ids.out.find_first_not_of(", ", end + 1);
    if (ids.out[end] == ']') break;
  }
  auto banned = tern::test::tern_cli(gen + ban, "banned", dir);
  ASSERT_EQ(banned.exit_code, 0) << banned.err;
  EXPECT_NE(banned.out, plain.out);
  EXPECT_EQ(tern::test::tern_cli(gen + nudge, "nudged", dir).out, plain.out);
  auto penalties =
      tern::test::tern_cli(gen + " --presence-penalty 1.5 --frequency-penalty 0.5 --min-p 0.1", "penalties", dir);
  EXPECT_EQ(penalties.exit_code, 0) << penalties.err;
  for (const char* bad : {"-l x", "-l 5", "-l 5+x", "-l 99999+1", "--min-p 2", "--presence-penalty nan"})
    expect_one_line_error(tern::test::tern_cli(gen + " " + bad, "bad", dir), "");
}

}  // namespace
