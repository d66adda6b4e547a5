// Helpers for the GGUF tests: a scratch directory, a byte builder for
// hand-made (often deliberately broken) files, and error capture.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tern/error.h"
#include "tern/gguf.h"

namespace tern::gguf::test {

namespace fs = std::filesystem;

// A fresh, empty directory per test under $TERN_TEST_TMP.
inline fs::path scratch_dir() {
  const char* env = std::getenv("TERN_TEST_TMP");
  fs::path root = env && *env ? fs::path(env) : fs::temp_directory_path() / "tern-test";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = root / (std::string(info->test_suite_name()) + "." + info->name() + "." +
                         std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

inline std::vector<uint8_t> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_all(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

struct Bytes {
  std::vector<uint8_t> b;
  Bytes& raw(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
    return *this;
  }
  Bytes& u8(uint8_t x) { return raw(&x, 1); }
  Bytes& u32(uint32_t x) { return raw(&x, 4); }
  Bytes& u64(uint64_t x) { return raw(&x, 8); }
  Bytes& str(std::string_view s) {
    u64(s.size());
    return raw(s.data(), s.size());
  }
  Bytes& pad_to(size_t a) {
    while (b.size() % a) b.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
  // A tensor info record.
  Bytes& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
};

inline Bytes header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
  Bytes b;
  b.raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
  return b;
}

// The error File::parse raises for `bytes`, or "<no error>". The copy gives
// the parser a buffer of exactly that size, so ASan sees any overread.
inline std::string parse_error(const std::vector<uint8_t>& bytes, const std::string& name = "m.gguf") {
  std::vector<uint8_t> exact(bytes);
  try {
    File::parse(exact, name);
  } catch (const tern::Error& e) {
    return e.what();
  }
  return "<no error>";
}

inline std::string open_error(const std::string& path) {
  try {
    File::open(path);
  } catch (const tern::Error& e) {
    return e.what();
  }
  return "<no error>";
}

inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(rng());
  return v;
}

inline Value scalar(ValueType t, uint64_t u, int64_t i = 0, double f = 0) {
  Value v;
  v.type = t;
  v.u = u;
  v.i = i;
  v.f = f;
  return v;
}

#define EXPECT_CONTAINS(haystack, needle)                                            \
  do {                                                                               \
    const std::string h_ = (haystack);                                               \
    EXPECT_NE(h_.find(needle), std::string::npos) << "message: " << h_ << "\nwanted: " << (needle); \
  } while (0)

}  // namespace tern::gguf::test
