// Text <-> token ids. tern tokenizes with libsentencepiece from the exact
// tokenizer.model bytes the packer stores (tern.tokenizer.spm_model), so its
// ids equal the source model's; BOS/EOS come from the standard
// tokenizer.ggml.* keys.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tern/gguf.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tern {

class Tokenizer {
 public:
  explicit Tokenizer(const gguf::File& f);  // throws "path: problem"
  ~Tokenizer();

  std::vector<int32_t> encode(std::string_view text, bool add_bos) const;
  // The bytes a token stands for inside running text: "▁" becomes a space,
  // byte tokens <0xAB> their byte, control tokens nothing.
  std::string piece_bytes(int32_t id) const;
  std::string decode(const std::vector<int32_t>& ids) const;

  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  int vocab_size() const;

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  int32_t bos_ = -1, eos_ = -1;
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
