// tern bench as a llama-bench user drives it: list-valued flags, -pg, and
// the md/csv/json/jsonl outputs with llama-bench's field names.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_env.h"

using tern::test::quote;

namespace {

std::string model_path() { return (tern::test::test_models() / "bitnet" / "tq2_0.gguf").string(); }

class CliBench : public ::testing::Test {
 protected:
  tern::test::RunResult cli(const std::string& args) { return tern::test::tern_cli(args, "out", dir_); }
  const std::filesystem::path dir_ = tern::test::test_dir();
};

TEST_F(CliBench, JsonHasOneObjectPerTestAndThreadCount) {
  auto r = cli("bench -m " + quote(model_path()) + " -p 8 -n 4,2 -pg 4,3 -t 1,2 -r 2 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 8u) << r.out;  // (pp8, tg4, tg2, pp4+tg3) x (1, 2 threads)
  const int want[4][2] = {{8, 0}, {0, 4}, {0, 2}, {4, 3}};
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& t = j[i];
    EXPECT_EQ(t["n_threads"], i < 4 ? 1 : 2);
    EXPECT_EQ(t["n_prompt"], want[i % 4][0]);
    EXPECT_EQ(t["n_gen"], want[i % 4][1]);
    EXPECT_EQ(t["samples_ns"].size(), 2u);
    EXPECT_GT(t["avg_ts"].get<double>(), 0);
    EXPECT_GT(t["model_n_params"].get<int64_t>(), 0);
    EXPECT_GT(t["read_gbps"].get<double>(), 0) << "the roof is measured by default";
    // Only a decode test has bytes per token, hence a fraction of the roof.
    const bool tg = t["n_prompt"] == 0;
    EXPECT_EQ(t["bytes_per_token"].get<int64_t>() > 0, tg) << t.dump();
    EXPECT_EQ(t["roof_fraction"].get<double>() > 0, tg) << t.dump();
  }
}

TEST_F(CliBench, CsvAndJsonLinesAndMarkdown) {
  auto csv = cli("bench -m " + quote(model_path()) + " -p 4 -n 2 -r 1 -o csv --no-roof");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream in(csv.out);
  std::string header, row;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("model_filename,model_type,model_size,model_n_params,", 0), 0u) << header;
  int rows = 0;
  while (std::getline(in, row)) ++rows;
  EXPECT_EQ(rows, 2);

  auto jl = cli("bench -m " + quote(model_path()) + " -p 0 -n 2 -r 1 -o jsonl --no-roof");
  ASSERT_EQ(jl.exit_code, 0) << jl.err;
  const nlohmann::json t = nlohmann::json::parse(jl.out);
  EXPECT_EQ(t["n_gen"], 2);
  EXPECT_EQ(t["read_gbps"].get<double>(), 0) << "--no-roof";

  auto md = cli("bench -m " + quote(model_path()) + " -p 4 -n 2 -r 1 --no-roof");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| model "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("pp4"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("tg2"), std::string::npos) << md.out;
}

TEST_F(CliBench, BadFlagsAreOneLineErrors) {
  for (const char* args : {"-pg 8", "-pg 8,x", "-o xml", "-t 0", "-p 0 -n 0", "-r 0"}) {
    auto r = cli("bench -m " + quote(model_path()) + " " + std::string(args));
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_LT(r.exit_code, 128) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
}

}  // namespace

namespace {

double final_ppl(const std::string& out) {
  const size_t at = out.find("PPL = ");
  EXPECT_NE(at, std::string::npos) << out;
  return at == std::string::npos ? 0 : std::stod(out.substr(at + 6));
}

// A Q8_0 or Q6_K head (pack --output-type) is read by every command and
// costs the bundled model a small, nonzero amount of perplexity (measured:
// +0.001% and +0.054%, docs/PERFORMANCE.md). Its embeddings are tied, so
// every token's row is read from the quantized tensor too.
template <class Cli>
void quantized_head_runs_and_costs_little(Cli cli, const std::filesystem::path& dir, const std::string& type) {
  const std::string out = (dir / (type + ".gguf")).string();
  auto p = cli("pack " + quote(tern::test::source("models/kjv-bitnet-6m")) + " -o " + quote(out) +
               " --output-type " + type + " --verify");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::string text = quote(tern::test::source("models/revelation.txt"));
  auto base = cli("perplexity -f " + text + " --chunks 4");
  auto q8 = cli("perplexity -m " + quote(out) + " -f " + text + " --chunks 4");
  ASSERT_EQ(base.exit_code, 0) << base.err;
  ASSERT_EQ(q8.exit_code, 0) << q8.err;
  const double a = final_ppl(base.out), b = final_ppl(q8.out);
  EXPECT_NE(a, b) << "the head did change";
  EXPECT_LT(std::fabs(b - a) / a, 0.005) << a << " vs " << b;
  auto bench = cli("bench -m " + quote(out) + " -p 4 -n 2 -r 1 -o jsonl --no-roof");
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
}

TEST_F(CliBench, Q8HeadRunsAndCostsLittle) {
  quantized_head_runs_and_costs_little([this](const std::string& a) { return cli(a); }, dir_, "q8_0");
}
TEST_F(CliBench, Q6HeadRunsAndCostsLittle) {
  quantized_head_runs_and_costs_little([this](const std::string& a) { return cli(a); }, dir_, "q6_k");
}

}  // namespace
