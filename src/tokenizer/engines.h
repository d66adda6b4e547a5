// The one interface behind Tokenizer: an engine turns one text segment
// (between added tokens) into ids and ids back into text. One file per
// kind: sentencepiece.cpp (libsentencepiece on the stored tokenizer.model)
// and hf_engine.cpp (the tokenizer.json pipeline with the BPE model, which
// also runs GGUF vocabularies from other tools).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tern/tokenizer_spec.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/json_util.h"

namespace tern::tok {

// Words already encoded in this call, so repeated words cost one lookup;
// looked up by string_view without building a key string.
struct WordHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Cache = std::unordered_map<std::string, std::vector<int32_t>, WordHash, std::equal_to<>>;

class Engine {
 public:
  virtual ~Engine() = default;
  // `at_start`: the segment begins the input (offset 0).
  virtual void encode(std::string_view segment, bool at_start, std::vector<int32_t>& out, Cache& cache) const = 0;
  // Text of ids that are not skipped special tokens.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  // The bytes one token contributes to running text (for streaming output).
  virtual std::string piece_bytes(int32_t id, const std::string& token) const = 0;
  virtual const char* kind() const = 0;
  // Normalization applied before matching normalized added tokens; most
  // tokenizers have none.
  virtual bool has_normalizer() const { return false; }
  virtual std::string normalize(std::string_view s) const { return std::string(s); }
};

std::unique_ptr<Engine> make_sentencepiece_engine(const Spec& s, const std::string& what);
// `pipeline_json`: tern.tokenizer.hf_pipeline, or one synthesized for a
// foreign GGUF (llamacpp_vocab.cpp).
std::unique_ptr<Engine> make_hf_engine(const Spec& s, const Json& pipeline);

// The added tokens of a pipeline (its "added_tokens" list), or, for files
// without one, llama.cpp's rule: control, user-defined and unknown tokens.
std::vector<AddedToken> added_tokens_of(const Spec& s, const Json* pipeline);

// A pipeline equivalent to what llama.cpp runs for a GGUF vocabulary with
// no tern.tokenizer.hf_pipeline key. `note` says what was assumed, if
// anything (a missing pre-tokenizer name). Throws for an unknown name.
Json llamacpp_pipeline(const Spec& s, std::string& note);

// "▁" -> " " (SentencePiece's escaped space).
std::string spm_unescape(std::string_view piece);

}  // namespace tern::tok
