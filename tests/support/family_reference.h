// Running tests/tools/families/reference.py (the independent numpy forward
// of every family) from a test, and scoring its output: shared by the family
// and llama.cpp-agreement tests.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/test_env.h"

namespace tern::test {

// The Hugging Face checkpoint of a family fixture (make_test_models).
inline std::string family_checkpoint(const std::string& family) {
  return (test_models() / ("family-" + family) / "hf").string();
}

inline std::string csv(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t t : ids) {
    if (!s.empty()) s += ',';
    s += std::to_string(t);
  }
  return s;
}

// Runs reference.py on a checkpoint; `args` after the command.
inline void reference(const std::string& ckpt, const std::string& args, const std::string& tag,
                      const std::filesystem::path& dir) {
  const auto r = run(python() + " " + quote(source("tests/tools/families/reference.py")) + " " +
                         quote(ckpt) + " " + args,
                     tag, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// The float32 values of a file the reference wrote; empty if it is missing.
inline std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::vector<float> v(size_t(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
  return v;
}

// Logits [ids][vocab] of the reference, or of one of its --mutate variants.
inline std::vector<float> reference_logits(const std::string& ckpt, const std::vector<int32_t>& ids,
                                           const std::filesystem::path& dir,
                                           const std::string& mutate = "") {
  const std::string tag = "logits" + (mutate.empty() ? "" : "-" + mutate);
  const std::string out = (dir / (tag + ".bin")).string();
  reference(ckpt,
            "logits " + csv(ids) + " " + quote(out) + (mutate.empty() ? "" : " --mutate " + mutate),
            tag, dir);
  return read_floats(out);
}

// The ids a reference command (sample, greedy) writes; `args` before OUT.
inline std::vector<int32_t> reference_ids(const std::string& ckpt, const std::string& args,
                                          const std::string& tag, const std::filesystem::path& dir) {
  const std::string out = (dir / (tag + ".txt")).string();
  reference(ckpt, args + " " + quote(out), tag, dir);
  std::ifstream in(out);
  std::vector<int32_t> ids;
  std::string tok;
  while (std::getline(in, tok, ',')) ids.push_back(std::stoi(tok));
  return ids;
}

// exp(mean NLL of ids[1..]) from logits [n][vocab], in double.
inline double perplexity(const std::vector<float>& logits, const std::vector<int32_t>& ids,
                         size_t vocab) {
  double nll = 0;
  for (size_t i = 1; i < ids.size(); ++i) {
    const float* z = &logits[(i - 1) * vocab];
    const double mx = *std::max_element(z, z + vocab);
    double sum = 0;
    for (size_t v = 0; v < vocab; ++v) sum += std::exp(double(z[v]) - mx);
    nll -= double(z[ids[i]]) - mx - std::log(sum);
  }
  return std::exp(nll / double(ids.size() - 1));
}

// A gtest parameter name from a family or file name ("llama3-1.58" -> "llama3_1_58").
inline std::string param_name(const std::string& s) {
  std::string n;
  for (char c : s) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
}

}  // namespace tern::test
