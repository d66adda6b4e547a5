// GGUF vocabularies written by other tools (llama.cpp's converter,
// bitnet.cpp) carry no tokenizer.json rules, only llama.cpp's keys. These
// are the rules llama.cpp itself applies to such files, as a pipeline.
#include <map>

#include "tern/error.h"
#include "tokenizer/engines.h"
#include "tokenizer/pipeline.h"

namespace tern::tok {

namespace {

struct PreRule {
  std::vector<const char*> names;
  std::vector<const char*> regexes;  // applied in turn, each splitting the pieces of the last
  bool ignore_merges = false;
  // A Hugging Face normalizer the tokenizer.json files of these models carry
  // and llama.cpp skips ("NFC" for Qwen2 and Qwen3), or null.
  const char* normalizer = nullptr;
};

// llama.cpp's tokenizer.ggml.pre names (src/llama-vocab.cpp) for the
// pre-tokenizers of the model families tern runs, with the regexes of the
// tokenizer.json files they stand for.
const std::vector<PreRule>& pre_rules() {
  static const std::vector<PreRule> rules = {
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "dbrx", "smaug-bpe"},
       {kLlama3Pattern},
       true},
      {{"gpt-2", "phi-2", "mpt", "olmo", "jais"}, {kGpt2Pattern}, false},
      // Every Qwen2 / Qwen2.5 / Qwen3 tokenizer.json normalizes to NFC first;
      // tern follows Hugging Face there, so text with e.g. CJK compatibility
      // ideographs gets the model's ids, not llama.cpp's.
      {{"qwen2"}, {kQwen2Pattern}, false, "NFC"},
      {{"stablelm2", "deepseek-r1-qwen"}, {kQwen2Pattern}, false},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {"\\p{N}", kGpt2Pattern},
       false},
      {{"falcon"},
       {"[\\p{P}\\$\\+<=>\\^~\\|`]+", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
        "[0-9][0-9][0-9]"},
       false},
      {{"default"},
       {"[\\p{P}\\$\\+<=>\\^~\\|]+", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
        "\\p{N}+", "[0-9][0-9][0-9]"},
       false},
  };
  return rules;
}

// Llama 3's byte-level vocabulary (Llama 3.x, BitNet b1.58 2B-4T,
// Llama3-8B-1.58): 128000 BPE tokens, then its special tokens from
// <|begin_of_text|>; every model with it splits text with Llama 3's regex.
bool is_llama3_vocab(const Spec& s) {
  return s.model == "gpt2" && s.tokens.size() >= 128256 && s.tokens[128000] == "<|begin_of_text|>" &&
         s.tokens[128001] == "<|end_of_text|>" && s.tokens[0] == "!";
}

Json split_step(const char* regex) {
  return Json{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}

}  // namespace

Json llamacpp_pipeline(const Spec& s, std::string& note) {
  Json p = Json::object();
  if (s.model == "llama") {
    // llama.cpp's SPM path: spaces escaped as "▁", one prepended to every
    // text segment, score-ranked merges, byte fallback.
    Json norm = Json::array();
    if (s.add_space_prefix) norm.push_back({{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}});
    norm.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}});
    p["normalizer"] = {{"type", "Sequence"}, {"normalizers", norm}};
    p["pre_tokenizer"] = nullptr;
    Json dec = Json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                            {{"type", "ByteFallback"}},
                            {{"type", "Fuse"}}});
    if (s.add_space_prefix) dec.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    p["decoder"] = {{"type", "Sequence"}, {"decoders", dec}};
    p["model"] = {{"byte_fallback", true}};
    return p;
  }
  std::string name = s.pre;
  if (name.empty() && is_llama3_vocab(s)) {
    // bitnet.cpp's BitNet 2B-4T I2_S file carries Llama 3's vocabulary and
    // no pre name; llama.cpp's 'default' rules would give the KJV 3% more
    // tokens than the model's own tokenizer (and another perplexity).
    name = "llama-bpe";
    note = "the file has no tokenizer.ggml.pre; its vocabulary is Llama 3's, so tern uses Llama 3's "
           "pre-tokenizer (llama.cpp would use its 'default' one and tokenize differently)";
  } else if (name.empty()) {
    name = "default";
    note = "the file has no tokenizer.ggml.pre; using llama.cpp's 'default' pre-tokenizer, as llama.cpp does "
           "(text may tokenize differently from the original model)";
  }
  for (const PreRule& r : pre_rules())
    for (const char* n : r.names)
      if (name == n) {
        Json steps = Json::array();
        for (const char* re : r.regexes) steps.push_back(split_step(re));
        steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}});
        p["normalizer"] = r.normalizer ? Json{{"type", r.normalizer}} : Json(nullptr);
        p["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", steps}};
        p["decoder"] = {{"type", "ByteLevel"}};
        p["model"] = {{"ignore_merges", r.ignore_merges}};
        return p;
      }
  std::string known;
  for (const PreRule& r : pre_rules())
    for (const char* n : r.names) known += std::string(known.empty() ? "" : ", ") + n;
  throw Error("tokenizer.ggml.pre '" + name + "' is not one tern knows (" + known + ")");
}

std::vector<AddedToken> added_tokens_of(const Spec& s, const Json* pipeline) {
  std::vector<AddedToken> out;
  if (pipeline && pipeline->contains("added_tokens")) {
    const Json& list = (*pipeline)["added_tokens"];
    if (!list.is_array()) throw Error("added_tokens is not a list");
    for (const Json& a : list) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        throw Error("an added token lacks 'id' or 'content'");
      AddedToken t;
      t.id = a["id"].get<int32_t>();
      if (t.id < 0 || size_t(t.id) >= s.tokens.size())
        throw Error("added token id " + std::to_string(t.id) + " is out of range");
      t.content = a["content"].get<std::string>();
      t.special = get_bool(a, "special", "added token", false);
      t.lstrip = get_bool(a, "lstrip", "added token", false);
      t.rstrip = get_bool(a, "rstrip", "added token", false);
      t.single_word = get_bool(a, "single_word", "added token", false);
      t.normalized = get_bool(a, "normalized", "added token", !t.special);
      out.push_back(std::move(t));
    }
    return out;
  }
  for (size_t i = 0; i < s.types.size(); ++i) {
    const int32_t ty = s.types[i];
    if (ty != kControl && ty != kUserDefined && ty != kUnknown) continue;
    AddedToken t;
    t.id = int32_t(i);
    t.content = s.tokens[i];
    t.special = ty != kUserDefined;  // llama.cpp always parses user-defined tokens
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace tern::tok
