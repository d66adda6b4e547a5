// The text rules of a Hugging Face tokenizer.json, compiled: normalizers,
// pre-tokenizers and decoders, each a list of steps applied in order, as the
// `tokenizers` library applies them. Built from the JSON kept in
// tern.tokenizer.hf_pipeline (or synthesized for files from other tools).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tern/tokenizer_spec.h"
#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

namespace tern::tok {

// The Llama-3 / cl100k, Qwen2 and GPT-2 pre-tokenizer regexes, as their
// tokenizer.json files spell them.
inline constexpr const char* kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr const char* kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// The words of one segment after pre-tokenization: spans of `text`. While
// the steps only split, `text` is the segment itself and nothing is copied.
// `raw_bytes`: the last step was ByteLevel, so each word is still in raw
// bytes and the model sees it through byte_to_unicode (the engine maps a
// word only the first time it meets it).
struct Words {
  struct Span {
    uint32_t b, e;
    bool at_start;  // begins at offset 0 of the input (Metaspace's "first")
  };
  std::string text;
  std::vector<Span> spans;
  bool raw_bytes = false;
  std::string_view word(const Span& s) const { return std::string_view(text).substr(s.b, s.e - s.b); }
};

// How a Split pre-tokenizer keeps the delimiters it matched.
enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class Pipeline {
 public:
  // Throws tern::Error naming the step that cannot be run.
  explicit Pipeline(const Json& pipeline);
  ~Pipeline();

  bool has_normalizer() const { return !normalizers_.empty(); }
  std::string normalize(std::string_view text) const;
  // The pre-tokenized words of one segment (at most 4 GiB).
  void pre_tokenize(std::string_view segment, bool at_start, Words& out) const;
  // The decoder chain over token strings (already without skipped tokens).
  std::string decode(std::vector<std::string> tokens) const;
  // True when the words the model sees are byte-level characters (GPT-2's
  // byte-to-unicode map), so a token's bytes come from unmapping its text.
  bool byte_level() const { return byte_level_; }

  struct Step;

 private:
  std::vector<std::unique_ptr<Step>> normalizers_, pre_tokenizers_, decoders_;
  bool byte_level_ = false;
};

// Compiles the Spec's rules (pipeline, vocabulary, merges) to check them.
void check_pipeline(const Spec& s);

// GPT-2's byte <-> unicode map: printable bytes stand for themselves, the
// rest for code points from U+0100 up.
const std::string& byte_to_unicode(uint8_t b);  // UTF-8 of the mapped code point
int unicode_to_byte(uint32_t cp);               // -1 if cp stands for no byte

}  // namespace tern::tok
