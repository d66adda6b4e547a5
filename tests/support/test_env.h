// Helpers shared by tests that need files: a scratch directory, running the
// Python test tools, and running the tern binary.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace tern::test {

// A fresh, empty directory for the running test: ctest runs every test as
// its own process, in parallel, so no two tests may share a scratch file.
inline std::filesystem::path test_dir() {
  const char* env = std::getenv("TERN_TEST_TMP");
  const std::filesystem::path root =
      env && *env ? std::filesystem::path(env) : std::filesystem::temp_directory_path() / "tern-test";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  const std::filesystem::path dir = root / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The tiny checkpoints and packs made by the make_test_models fixture:
// <dir>/{bitnet,ternary}/{hf,tq2_0.gguf,tq1_0.gguf} and <dir>/dense/hf.
inline std::filesystem::path test_models() { return TERN_TEST_MODELS; }

inline std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs a shell command, capturing stdout and stderr through files in dir.
inline RunResult run(const std::string& cmd, const std::string& tag,
                     const std::filesystem::path& dir) {
  const std::string out = (dir / (tag + ".out")).string(), err = (dir / (tag + ".err")).string();
  const int rc = std::system((cmd + " >" + quote(out) + " 2>" + quote(err) + " </dev/null").c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  RunResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

inline RunResult tern_cli(const std::string& args, const std::string& tag,
                          const std::filesystem::path& dir) {
  return run(quote(TERN_EXE) + " " + args, tag, dir);
}

// The error contract of the binary: a non-zero exit that is no signal,
// exactly one line on stderr, mentioning `what`.
inline void expect_one_line_error(const RunResult& r, const std::string& what) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.exit_code, 128) << "killed by a signal";
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
}

inline std::string python() { return "/usr/bin/python3"; }
inline std::string source(const std::string& rel) {
  return (std::filesystem::path(TERN_SOURCE_DIR) / rel).string();
}

}  // namespace tern::test
