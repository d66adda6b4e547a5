// Helpers shared by tests that need files: a scratch directory, running the
// Python test tools, and running the tern binary.
#pragma once
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace tern::test {

inline std::filesystem::path scratch(const std::string& name) {
  const char* env = std::getenv("TERN_TEST_TMP");
  std::filesystem::path p = std::filesystem::path(env ? env : "/tmp/tern-test") / name;
  std::filesystem::create_directories(p);
  return p;
}

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

// Runs a shell command, capturing stdout and stderr through files.
inline RunResult run(const std::string& cmd, const std::string& tag) {
  const std::filesystem::path dir = scratch("run");
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

inline RunResult tern_cli(const std::string& args, const std::string& tag) {
  return run(quote(TERN_EXE) + " " + args, tag);
}

inline std::string python() { return "/usr/bin/python3"; }
inline std::string source(const std::string& rel) {
  return (std::filesystem::path(TERN_SOURCE_DIR) / rel).string();
}

}  // namespace tern::test
