// The BPE model: a word (one pre-tokenized piece) -> token ids, by merging
// adjacent symbols lowest rank first, leftmost first on ties, as both
// Hugging Face's `tokenizers` and llama.cpp do. Ranks come from the merges
// list, or, for SentencePiece-style files without merges, from token scores
// (higher first), as llama.cpp's SPM tokenizer ranks them.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tern/tokenizer_spec.h"

namespace tern::tok {

struct BpeOptions {
  bool byte_fallback = false;  // characters outside the vocabulary become <0xXX> tokens
  bool ignore_merges = false;  // a word that is itself a token is taken whole
  bool fuse_unk = false;       // consecutive unknowns become one
  int32_t unk = -1;
};

class Bpe {
 public:
  // Throws tern::Error for merges that name unknown tokens.
  Bpe(const Spec& s, const BpeOptions& o);

  // Appends the ids of one word.
  void encode(std::string_view word, std::vector<int32_t>& out) const;
  int32_t find(std::string_view text) const;  // -1 if not a token

 private:
  struct Merge {
    double priority;  // lower merges first
    int32_t result;
  };
  bool merge_of(int32_t a, int32_t b, Merge& m) const;

  const Spec& spec_;
  BpeOptions opt_;
  std::unordered_map<std::string_view, int32_t> ids_;
  std::unordered_map<uint64_t, Merge> merges_;  // (a << 32 | b) -> merge
  int32_t byte_ids_[256];                      // <0xXX> tokens, -1 if absent
};

}  // namespace tern::tok
