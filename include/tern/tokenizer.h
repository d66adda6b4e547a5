// Text <-> token ids, exactly as the model's own tokenizer does it. One
// interface over every kind a ternary model ships with (src/tokenizer/):
//  - SentencePiece tokenizer.model, run with libsentencepiece from the bytes
//    tern's packer stores (tern.tokenizer.spm_model);
//  - Hugging Face tokenizer.json BPE, byte-level (Llama-3, Falcon3, GPT-2)
//    or SentencePiece-style (Llama-2), run from the rules the packer stores
//    (tern.tokenizer.hf_pipeline): normalizers, regex pre-tokenizers (PCRE2),
//    added tokens, decoders;
//  - GGUF vocabularies from llama.cpp or bitnet.cpp (tokenizer.ggml.* only),
//    run by llama.cpp's own rules for them.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tern/gguf.h"
#include "tern/tokenizer_spec.h"

namespace tern {

namespace tok {
class Engine;
class AddedTokens;
}  // namespace tok

struct EncodeOptions {
  bool add_special = true;    // BOS/EOS as the tokenizer adds them
  bool parse_special = true;  // special-token text becomes the special token
};

class Tokenizer {
 public:
  // From a model file; throws tern::Error "path: problem".
  explicit Tokenizer(const gguf::File& f);
  // From a Spec (as the packer builds it); `source` names it in errors.
  Tokenizer(tok::Spec spec, const std::string& source);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Invalid UTF-8 becomes U+FFFD first, as Hugging Face does.
  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& o = {}) const;
  // Text of `ids`; special tokens are left out when skip_special. Throws for
  // an id outside the vocabulary.
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;
  // The bytes a token adds to running text: "▁" a space, <0xAB> its byte,
  // byte-level characters their bytes, control tokens nothing.
  std::string piece_bytes(int32_t id) const;
  // As llama.cpp's token_to_piece with special=true: special tokens as their
  // text, the rest as piece_bytes.
  std::string token_piece(int32_t id) const;
  const std::string& token_text(int32_t id) const { return spec_.tokens.at(size_t(id)); }

  int32_t bos() const { return spec_.bos; }
  int32_t eos() const { return spec_.eos; }
  bool adds_bos() const { return spec_.add_bos; }
  // End of generation: EOS, EOT, EOM, generation_config.json's list, and
  // the end-of-turn tokens llama.cpp recognizes by their text.
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_; }
  bool is_special(int32_t id) const;
  int vocab_size() const { return int(spec_.tokens.size()); }
  const std::string& chat_template() const { return spec_.chat_template; }
  std::string kind() const;
  // What was assumed while loading (e.g. a missing pre-tokenizer name), for
  // the CLI to print on stderr.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  void init(const std::string& source);

  tok::Spec spec_;
  std::unique_ptr<tok::Engine> engine_;
  std::unique_ptr<tok::AddedTokens> raw_added_, normalized_added_;
  std::vector<uint8_t> special_;  // [vocab] 1 if skipped by decode(skip_special)
  std::vector<int32_t> eog_;
  std::vector<std::string> notes_;
};

// Accumulates piece bytes and releases only complete UTF-8 sequences, so a
// character split over byte tokens is printed whole.
class Utf8Stream {
 public:
  std::string push(const std::string& bytes);
  std::string flush();  // whatever is left, even if incomplete

 private:
  std::string pending_;
};

}  // namespace tern
