// Every committed tokenizer (tests/data/tokenizers/<name>/) against golden
// ids from Hugging Face's own `tokenizers` (tests/tools/tokenizer_goldens):
// ids with and without special tokens, special-token text left as text,
// decode, a 1 MB random-Unicode string and the whole King James Bible. Each
// tokenizer runs twice: straight from its checkpoint files, and after a
// round trip through the GGUF keys the packer writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer_test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using namespace tern::test;
const fs::path kData = kTokenizerData;

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kData / "goldens"))
    if (e.path().extension() == ".json" && fs::is_directory(kData / e.path().stem()))
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class Goldens : public ::testing::TestWithParam<std::string> {};

void check_cases(const tern::Tokenizer& tok, const json& g) {
  for (const json& c : g["cases"]) {
    const std::string name = c["name"];
    const std::string text = c.contains("hex") ? from_hex(c["hex"]) : c["text"].get<std::string>();
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const auto ids = tok.encode(text);
    EXPECT_EQ(ids, want) << name;
    tern::EncodeOptions bare;
    bare.add_special = false;
    EXPECT_EQ(tok.encode(text, bare), c["ids_no_special"].get<std::vector<int32_t>>()) << name;
    if (c.contains("ids_no_parse_special")) {
      tern::EncodeOptions lit;
      lit.parse_special = false;
      EXPECT_EQ(tok.encode(text, lit), c["ids_no_parse_special"].get<std::vector<int32_t>>()) << name;
    }
    EXPECT_EQ(tok.decode(want), c["decoded"].get<std::string>()) << name;
  }
}

void check_big(const tern::Tokenizer& tok, const json& b, const std::string& text) {
  const std::string name = b["name"];
  ASSERT_EQ(text.size(), b["text_bytes"].get<size_t>()) << name << ": not the text the goldens were made from";
  ASSERT_EQ(hex64(fnv1a64_bytes(text.data(), text.size())), b["text_fnv1a64"].get<std::string>()) << name;
  const auto ids = tok.encode(text);
  const size_t block = b["block_size"];
  const auto& blocks = b["block_fnv1a64"];
  // Point at the first block of ids that differs, to make a failure readable.
  for (size_t k = 0; k < blocks.size() && k * block < ids.size(); ++k) {
    const size_t end = std::min(ids.size(), (k + 1) * block);
    if (fnv_ids(ids, k * block, end) != blocks[k].get<std::string>()) {
      ADD_FAILURE() << name << ": ids differ in block " << k << " (from byte " << b["block_byte_offset"][k]
                    << " of the text)";
      break;
    }
  }
  EXPECT_EQ(ids.size(), b["count"].get<size_t>()) << name;
  EXPECT_EQ(fnv_ids(ids, 0, ids.size()), b["fnv1a64"].get<std::string>()) << name;
  if (b.value("decoded_equals_text", false)) {
    EXPECT_EQ(tok.decode(ids), text) << name;
  }
}

TEST_P(Goldens, SmallCasesFromCheckpointAndFromGguf) {
  const json g = json::parse(slurp(kData / "goldens" / (GetParam() + ".json")));
  const tern::tok::Spec s = tern::tok::load_checkpoint_tokenizer((kData / GetParam()).string());
  {
    SCOPED_TRACE("from the checkpoint");
    check_cases(tern::Tokenizer(s, GetParam()), g);
  }
  {
    SCOPED_TRACE("through GGUF keys");
    check_cases(*through_gguf(s, GetParam(), true), g);
  }
  {
    SCOPED_TRACE("through llama.cpp's keys only");
    check_cases(*through_gguf(s, GetParam(), false), g);
  }
  if (s.pre == "llama-bpe" && s.tokens.size() >= 128256) {
    // Llama 3's vocabulary with no pre name (bitnet.cpp's 2B-4T I2_S file):
    // still the model's own tokenization, and stderr says why.
    SCOPED_TRACE("through llama.cpp's keys without tokenizer.ggml.pre");
    const auto tok = through_gguf(s, GetParam(), false, true);
    ASSERT_EQ(tok->notes().size(), 1u);
    EXPECT_NE(tok->notes()[0].find("its vocabulary is Llama 3's"), std::string::npos) << tok->notes()[0];
    check_cases(*tok, g);
  }
}

TEST_P(Goldens, RandomUnicodeAndKingJamesBible) {
  const json g = json::parse(slurp(kData / "goldens" / (GetParam() + ".json")));
  const tern::tok::Spec s = tern::tok::load_checkpoint_tokenizer((kData / GetParam()).string());
  // Llama 3's vocabulary is recognised without its pre name (bitnet.cpp's
  // I2_S files): the KJV and the random text still get the model's ids.
  const bool llama3 = s.pre == "llama-bpe" && s.tokens.size() >= 128256;
  const auto tok = through_gguf(s, GetParam(), !llama3, llama3);
  for (const json& b : g["big"]) {
    const std::string name = b["name"];
    std::string text;
    if (name == "kjv") {
      text = kjv_text();
      ASSERT_FALSE(text.empty()) << "tests/tools/kjv_text.sh failed: install bible-kjv";
    } else {
      text = slurp(fs::path(TERN_SOURCE_DIR) / b["source"].get<std::string>());
    }
    check_big(*tok, b, text);
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, Goldens, ::testing::ValuesIn(golden_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
