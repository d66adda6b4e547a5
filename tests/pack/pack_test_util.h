// Shared helpers of the packer tests: scratch directories and tiny
// checkpoints made by tests/tools/make_tiny_checkpoint.py.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "tern/error.h"

namespace tern::pack::testing {

namespace fs = std::filesystem;

// A fresh directory per test: ctest runs tests in parallel processes.
inline std::string test_dir() {
  const char* env = std::getenv("TERN_TEST_TMP");
  fs::path root = env && *env ? fs::path(env) : fs::path(TERN_BINARY_DIR) / "tests" / "tmp";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  fs::path dir = root / "pack" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// Runs the generator; `args` e.g. "--mode ternary --dtype bf16 --untied".
inline std::string make_checkpoint(const std::string& dir, const std::string& args) {
  std::string cmd = "/usr/bin/python3 '" TERN_SOURCE_DIR "/tests/tools/make_tiny_checkpoint.py' '" +
                    dir + "' " + args;
  int rc = std::system(cmd.c_str());
  if (rc != 0) throw std::runtime_error("make_tiny_checkpoint.py failed: " + cmd);
  return dir;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

inline void write_text(const std::string& path, const std::string& s) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << s;
}

inline std::string read_text(const std::string& path) {
  auto b = read_bytes(path);
  return std::string(b.begin(), b.end());
}

// The message of the tern::Error `fn` throws; fails the test if none.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const tern::Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "error is not one line: " << msg;
    return msg;
  }
  ADD_FAILURE() << "expected a tern::Error";
  return "";
}

// Names of files in `dir` (to prove no output or temporary was left).
inline std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace tern::pack::testing
