// The tokenizer's parts on small hand-made inputs: UTF-8 repair, the regex
// engine's Unicode classes, added-token matching rules, split behaviors,
// and every malformed-input error the issue lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>

#include "support/test_env.h"
#include "tern/error.h"
#include "tern/tokenizer.h"
#include "tern/tokenizer_spec.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

using nlohmann::json;
using namespace tern::tok;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tern::Error& e) {
    return e.what();
  }
  return "(no error)";
}

int lines_of(const std::string& s) { return 1 + int(std::count(s.begin(), s.end(), '\n')); }

// A byte-level BPE tokenizer.json over a handful of tokens.
json byte_level_json() {
  json vocab = json::object();
  int id = 0;
  for (const char* t : {"h", "e", "l", "o", "\xC4\xA0" /* Ġ, the mapped space */, "he", "ll", "hell", "hello",
                        "\xC4\xA0h", "w", "r", "d", "!"})
    vocab[t] = id++;
  return {{"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", {"h e", "l l", "he ll", "hell o", "\xC4\xA0 h"}},
            {"ignore_merges", false}}},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"}, {"pattern", {{"Regex", " ?\\p{L}+|\\s+|[^\\s\\p{L}]+"}}}, {"behavior", "Isolated"}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"added_tokens", json::array()}};
}

tern::Tokenizer make(const json& j) {
  return tern::Tokenizer(parse_tokenizer_json(j.dump(), "tok.json"), "tok.json");
}

std::vector<int32_t> ids(const tern::Tokenizer& t, const std::string& s) {
  tern::EncodeOptions o;
  o.add_special = false;
  return t.encode(s, o);
}

TEST(Utf8, LossyReplacesEachMaximalInvalidSubpart) {
  EXPECT_EQ(utf8_lossy("abc"), "abc");
  EXPECT_EQ(utf8_lossy("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8_lossy("\xE2\x82"), "\xEF\xBF\xBD");                    // truncated 3-byte: one
  EXPECT_EQ(utf8_lossy("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");         // overlong: two
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), std::string(3 * 3, ' ').replace(0, 9, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), "\xEF\xBF\xBD");                // truncated emoji: one
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(Regex, LettersAssignedAfterPcre2sUnicodeCountAsLetters) {
  // U+1C89 CYRILLIC CAPITAL LETTER TJE (Unicode 16): a letter to the
  // oracle, unassigned to Debian 12's PCRE2.
  std::vector<std::pair<size_t, size_t>> m;
  Regex("\\p{L}+").find_all("a\xE1\xB2\x89" "b", m);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0], std::make_pair(size_t(0), size_t(5)));
  Regex("[^\\p{L}]+").find_all("\xE1\xB2\x89", m);
  EXPECT_TRUE(m.empty());
  // Only the named classes are widened; quoting and other escapes pass through.
  EXPECT_EQ(widen_unicode_classes("\\Q\\p{L}\\E[\\]\\p{Lu}]"), "\\Q\\p{L}\\E[\\]\\p{Lu}]");
  EXPECT_NE(widen_unicode_classes("\\p{N}").find("\\x{"), std::string::npos);
}

TEST(Regex, BadPatternsAndRunawayBacktrackingAreErrors) {
  EXPECT_NE(error_of([] { Regex("(unclosed"); }).find("does not compile"), std::string::npos);
  std::vector<std::pair<size_t, size_t>> m;
  const std::string text(40, 'a');
  EXPECT_NE(error_of([&] { Regex("(a+)+$").find_all(text + "!", m); }), "(no error)");
}

TEST(AddedTokens, LeftmostLongestWithStripAndSingleWord) {
  std::vector<AddedToken> all = {
      {"<a>", 1, true}, {"<ab>", 2, true}, {"X", 3, false, false, false, true /*single_word*/},
      {"[L]", 4, false, true /*lstrip*/}, {"[R]", 5, false, false, true /*rstrip*/}};
  AddedTokens raw(all, false);
  std::vector<Segment> s;
  auto cut = [&](const std::string& text, bool special = true) {
    s.clear();
    raw.split(text, 0, special, s);
    std::string out;
    for (const Segment& g : s) {
      if (g.id >= 0) {
        out += '#';
        out += std::to_string(g.id);
      } else {
        out += '\'';
        out += g.text;
        out += '\'';
      }
    }
    return out;
  };
  EXPECT_EQ(cut("x<ab>y<a>"), "'x'#2'y'#1");
  EXPECT_EQ(cut("x<ab>y", false), "'x<ab>y'");  // special tokens not parsed
  EXPECT_EQ(cut("aXb X"), "'aXb '#3");             // single_word: not inside a word
  EXPECT_EQ(cut("a  [L]b"), "'a'#4'b'");           // lstrip takes the spaces before
  EXPECT_EQ(cut("a[R]  b"), "'a'#5'b'");           // rstrip takes the spaces after
}

TEST(Pipeline, ByteLevelBpeMergesByRankAndRoundTrips) {
  const tern::Tokenizer t = make(byte_level_json());
  EXPECT_EQ(ids(t, "hello"), (std::vector<int32_t>{8}));
  EXPECT_EQ(ids(t, "hell"), (std::vector<int32_t>{7}));
  // " hello": "h e" (rank 0) merges before "Ġ h" (rank 4), so Ġ stays alone.
  EXPECT_EQ(ids(t, "he hello"), (std::vector<int32_t>{5, 4, 8}));
  EXPECT_EQ(t.decode(ids(t, "he hello!")), "he hello!");
  EXPECT_EQ(t.kind(), "BPE (byte-level)");
}

TEST(Pipeline, SplitBehaviors) {
  // Digits, with each behavior, seen through which words reach the model.
  auto words_of = [](const char* behavior, bool invert) {
    json j = byte_level_json();
    j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", "l"}}}, {"behavior", behavior}, {"invert", invert}};
    j["decoder"] = nullptr;
    // With no decoder, decode joins tokens with spaces: the word boundaries.
    const tern::Tokenizer t = make(j);
    return ids(t, "hello");
  };
  EXPECT_EQ(words_of("Isolated", false), (std::vector<int32_t>{5, 2, 2, 3}));
  EXPECT_EQ(words_of("Removed", false), (std::vector<int32_t>{5, 3}));
  EXPECT_EQ(words_of("MergedWithPrevious", false), (std::vector<int32_t>{5, 2, 2, 3}));
  EXPECT_EQ(words_of("MergedWithNext", false), (std::vector<int32_t>{5, 2, 2, 3}));
  EXPECT_EQ(words_of("Contiguous", false), (std::vector<int32_t>{5, 6, 3}));
  EXPECT_EQ(words_of("Removed", true), (std::vector<int32_t>{2, 2}));
}

TEST(Pipeline, MetaspacePrependsOnlyAtTheStartWithSchemeFirst) {
  json vocab = {{"\xE2\x96\x81", 0}, {"a", 1}, {"b", 2}, {"\xE2\x96\x81" "a", 3}, {"<s>", 4}};
  json j = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\xE2\x96\x81 a"}}}},
            {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"},
                               {"split", true}}},
            {"decoder", {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}}},
            {"added_tokens", {{{"id", 4}, {"content", "<s>"}, {"special", true}}}}};
  const tern::Tokenizer t = make(j);
  EXPECT_EQ(ids(t, "a a"), (std::vector<int32_t>{3, 3}));
  EXPECT_EQ(ids(t, "<s>a"), (std::vector<int32_t>{4, 1}));  // not at offset 0: no "▁"
  EXPECT_EQ(t.decode(ids(t, "a a")), "a a");
}

TEST(Pipeline, ByteFallbackSpellsUnknownCharactersInBytes) {
  json vocab = {{"<unk>", 0}, {"a", 1}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 2 + b;
  }
  json j = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}, {"byte_fallback", true},
                       {"unk_token", "<unk>"}}},
            {"decoder", {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}}}};
  const tern::Tokenizer t = make(j);
  EXPECT_EQ(ids(t, "a\xC3\xA9"), (std::vector<int32_t>{1, 2 + 0xC3, 2 + 0xA9}));
  EXPECT_EQ(t.decode(ids(t, "a\xC3\xA9")), "a\xC3\xA9");
  EXPECT_EQ(t.piece_bytes(2 + 0xC3), "\xC3");
}

// GPT-2's byte-level character for byte b (the bytes here: printable
// ones stand for themselves; 0x81 is the 35th unprintable byte, U+0123).
std::string byte_char(uint8_t b) {
  const uint32_t cp = b == 0x81 ? 0x123 : b;
  std::string s;
  if (cp < 0x80) s += char(cp);
  else s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
  return s;
}

TEST(Pipeline, UnicodeNormalizersComposeAndDecomposeAsHuggingFaceDoes) {
  // "e" + COMBINING ACUTE, the CJK compatibility ideograph U+F900, the
  // Angstrom sign, the fi ligature.
  const std::string text = "e\xCC\x81 \xEF\xA4\x80 \xE2\x84\xAB \xEF\xAC\x81";
  EXPECT_EQ(unicode_normalize(text, UnicodeForm::NFC), "\xC3\xA9 \xE8\xB1\x88 \xC3\x85 \xEF\xAC\x81");
  EXPECT_EQ(unicode_normalize(text, UnicodeForm::NFD), "e\xCC\x81 \xE8\xB1\x88 A\xCC\x8A \xEF\xAC\x81");
  EXPECT_EQ(unicode_normalize(text, UnicodeForm::NFKC), "\xC3\xA9 \xE8\xB1\x88 \xC3\x85 fi");
  EXPECT_EQ(unicode_normalize(text, UnicodeForm::NFKD), "e\xCC\x81 \xE8\xB1\x88 A\xCC\x8A fi");
  // NUL bytes are text, not an end.
  EXPECT_EQ(unicode_normalize(std::string("a\0e\xCC\x81", 5), UnicodeForm::NFC), std::string("a\0\xC3\xA9", 4));
  EXPECT_EQ(unicode_normalize("", UnicodeForm::NFC), "");
  // In a tokenizer.json: the composed and the decomposed spelling get the
  // same ids, as the model saw them in training.
  json j = byte_level_json();
  j["normalizer"] = {{"type", "NFC"}};
  const std::string a3 = byte_char(0xC3), a9 = byte_char(0xA9);  // U+00E9 is C3 A9
  for (const std::string& t : {a3, a9, a3 + a9, byte_char(0xCC), byte_char(0x81)})  // U+0301 is CC 81
    j["model"]["vocab"][t] = int(j["model"]["vocab"].size());
  j["model"]["merges"].push_back(a3 + " " + a9);
  const tern::Tokenizer nfc = make(j);
  EXPECT_EQ(ids(nfc, "e\xCC\x81"), ids(nfc, "\xC3\xA9"));
  EXPECT_EQ(ids(nfc, "\xC3\xA9").size(), 1u);
  j["normalizer"] = nullptr;
  EXPECT_EQ(ids(make(j), "e\xCC\x81").size(), 3u);  // e, then the accent's two bytes
}

TEST(GgufVocab, Qwen2FilesNormalizeToNfcAsTheirTokenizerJsonDoes) {
  // A file with llama.cpp's keys only (its converter drops the normalizer):
  // pre "qwen2" brings Qwen's NFC back, other pre-tokenizers do not.
  const auto path = (tern::test::test_dir() / "qwen2.gguf").string();
  const std::string a3 = byte_char(0xC3), a9 = byte_char(0xA9);
  auto open = [&](const char* pre) {
    tern::gguf::Writer w(path);
    w.set("tokenizer.ggml.model", tern::gguf::Value::string("gpt2"));
    w.set("tokenizer.ggml.tokens", tern::gguf::Value::string_array(
                                       {"e", a3 + a9, a3, a9, byte_char(0xCC), byte_char(0x81)}));
    w.set("tokenizer.ggml.merges", tern::gguf::Value::string_array({a3 + " " + a9}));
    w.set("tokenizer.ggml.pre", tern::gguf::Value::string(pre));
    w.write_header();
    w.finish();
    return tern::Tokenizer(tern::gguf::File::open(path));
  };
  EXPECT_EQ(ids(open("qwen2"), "e\xCC\x81"), (std::vector<int32_t>{1}));
  EXPECT_EQ(ids(open("deepseek-r1-qwen"), "e\xCC\x81"), (std::vector<int32_t>{0, 4, 5}));
}

TEST(TokenizerJson, MalformedFilesAreOneLineErrorsNamingTheFile) {
  auto err = [](const std::string& text) { return error_of([&] { parse_tokenizer_json(text, "bad/tokenizer.json"); }); };
  EXPECT_NE(err("{not json").find("bad/tokenizer.json: not valid JSON"), std::string::npos);
  json j = byte_level_json();
  j["model"]["type"] = "Unigram";
  EXPECT_NE(err(j.dump()).find("model type 'Unigram' is not supported"), std::string::npos);
  j = byte_level_json();
  j["model"]["merges"].push_back("q z");
  EXPECT_NE(err(j.dump()).find("names unknown token 'q'"), std::string::npos);
  j = byte_level_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(\\p{L";
  const std::string e = err(j.dump());
  EXPECT_NE(e.find("bad/tokenizer.json: "), std::string::npos) << e;
  EXPECT_NE(e.find("does not compile"), std::string::npos) << e;
  j = byte_level_json();
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  EXPECT_NE(err(j.dump()).find("pre_tokenizer 'BertPreTokenizer' is not supported"), std::string::npos);
  j = byte_level_json();
  j["model"]["vocab"] = 7;
  EXPECT_NE(err(j.dump()).find("model.vocab"), std::string::npos);
  j = byte_level_json();
  j["added_tokens"] = {{{"id", "x"}, {"content", "<x>"}}};
  EXPECT_NE(err(j.dump()).find("lacks 'id'"), std::string::npos);
  EXPECT_EQ(lines_of(err("[]")), 1);
}

TEST(GgufVocab, InconsistentArraysAndIdsAreErrors) {
  const auto path = (tern::test::test_dir() / "v.gguf").string();
  auto write = [&](const std::function<void(tern::gguf::Writer&)>& f, bool embd = false) {
    tern::gguf::Writer w(path);
    w.set("tokenizer.ggml.model", tern::gguf::Value::string("llama"));
    w.set("tokenizer.ggml.tokens", tern::gguf::Value::string_array({"<unk>", "<s>", "</s>", "a"}));
    f(w);
    if (embd) w.add_tensor("token_embd.weight", tern::gguf::TensorType::F32, {4, 5});
    w.write_header();
    if (embd) w.write_tensor("token_embd.weight", std::vector<uint8_t>(4 * 5 * 4));
    w.finish();
    return error_of([&] { tern::Tokenizer t(tern::gguf::File::open(path)); });
  };
  EXPECT_EQ(write([](auto&) {}), "(no error)");
  std::string e = write([](auto& w) { w.set("tokenizer.ggml.scores", tern::gguf::Value::f32_array(std::vector<float>{0, 0})); });
  EXPECT_NE(e.find("tokenizer.ggml.scores has 2 entries, tokenizer.ggml.tokens has 4"), std::string::npos) << e;
  e = write([](auto& w) { w.set("tokenizer.ggml.eos_token_id", tern::gguf::Value::u32(9)); });
  EXPECT_NE(e.find("eos_token_id = 9 is out of range"), std::string::npos) << e;
  e = write([](auto& w) { w.set("tokenizer.ggml.model", tern::gguf::Value::string("t5")); });
  EXPECT_NE(e.find("'t5'"), std::string::npos) << e;
  e = write([](auto& w) {
    w.set("tokenizer.ggml.model", tern::gguf::Value::string("gpt2"));
    w.set("tokenizer.ggml.merges", tern::gguf::Value::string_array({"a a"}));
    w.set("tokenizer.ggml.pre", tern::gguf::Value::string("no-such-pre"));
  });
  EXPECT_NE(e.find("tokenizer.ggml.pre 'no-such-pre'"), std::string::npos) << e;
  EXPECT_NE(e.find(path), std::string::npos) << e;
  // A vocabulary that does not cover the embedding rows.
  e = write([](auto&) {}, true);
  EXPECT_NE(e.find("has 4 tokens but token_embd.weight has 5 rows"), std::string::npos) << e;
}

TEST(GgufVocab, MissingPreTokenizerFallsBackAsLlamaCppDoesAndSaysSo) {
  const auto path = (tern::test::test_dir() / "nopre.gguf").string();
  {
    tern::gguf::Writer w(path);
    w.set("tokenizer.ggml.model", tern::gguf::Value::string("gpt2"));
    w.set("tokenizer.ggml.tokens", tern::gguf::Value::string_array({"a", "b", "ab"}));
    w.set("tokenizer.ggml.merges", tern::gguf::Value::string_array({"a b"}));
    w.write_header();
    w.finish();
  }
  const tern::Tokenizer t(tern::gguf::File::open(path));
  ASSERT_EQ(t.notes().size(), 1u);
  EXPECT_NE(t.notes()[0].find("'default'"), std::string::npos);
  EXPECT_EQ(ids(t, "ab"), (std::vector<int32_t>{2}));
  EXPECT_THROW(t.decode(std::vector<int32_t>{3}), tern::Error);  // id out of range
}

}  // namespace

namespace {

// Fuzzer findings (tests/fuzz): each input once crashed or misbehaved.
TEST(FuzzRegressions, ByteShapedTokensWithoutHexDigitsAreText) {
  json j = byte_level_json();
  j["model"]["vocab"]["<0xZZ>"] = 14;
  j["model"]["vocab"]["<0x?1>"] = 15;
  j["decoder"] = {{"type", "ByteFallback"}};
  j["pre_tokenizer"] = nullptr;
  const tern::Tokenizer t = make(j);
  EXPECT_EQ(t.piece_bytes(14), "<0xZZ>");
  EXPECT_EQ(t.token_piece(15), "<0x?1>");
  EXPECT_EQ(t.decode(std::vector<int32_t>{14, 0}), "<0xZZ>h");
}

TEST(FuzzRegressions, AnIdFarBeyondTheVocabularyIsRefusedNotAllocated) {
  const std::string e =
      error_of([] { parse_tokenizer_json(R"({"model":{"type":"BPE","vocab":{"a":0,"b":1000000000},"merges":[]}})", "t.json"); });
  EXPECT_NE(e.find("has id 1000000000, beyond what 2 tokens can use"), std::string::npos) << e;
}

TEST(FuzzRegressions, AnAddedTokenThatIsNotWholeUtf8NeverCutsACharacter) {
  const auto path = (tern::test::test_dir() / "partial.gguf").string();
  {
    tern::gguf::Writer w(path);
    w.set("tokenizer.ggml.model", tern::gguf::Value::string("gpt2"));
    w.set("tokenizer.ggml.pre", tern::gguf::Value::string("llama-bpe"));
    // "\xC3" alone is half of "é"; as a control token it must never match.
    w.set("tokenizer.ggml.tokens", tern::gguf::Value::string_array({"\xC3\x83", "\xC2\xA9", "\xC3", "x", "\xC3\x83\xC2\xA9"}));
    w.set("tokenizer.ggml.token_type", tern::gguf::Value::i32_array(std::vector<int32_t>{1, 1, 3, 1, 1}));
    w.set("tokenizer.ggml.merges", tern::gguf::Value::string_array({"\xC3\x83 \xC2\xA9"}));
    w.set("tokenizer.ggml.add_bos_token", tern::gguf::Value::boolean(false));
    w.write_header();
    w.finish();
  }
  const tern::Tokenizer t(tern::gguf::File::open(path));
  const auto got = ids(t, "\xC3\xA9");  // é: bytes C3 A9, byte-level "Ã©"
  EXPECT_EQ(got, (std::vector<int32_t>{4}));
}

}  // namespace
