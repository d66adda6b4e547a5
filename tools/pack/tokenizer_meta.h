// SentencePiece tokenizer.model -> the tokenizer.ggml.* vocabulary llama.cpp
// reads, plus the raw model bytes tern embeds to tokenize with libsentencepiece.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tern::pack {

// llama.cpp's token types (llama_token_type), which coincide with
// SentencePiece's ModelProto.SentencePiece.Type numbering.
enum TokenType : int32_t {
  kTokNormal = 1, kTokUnknown = 2, kTokControl = 3, kTokUserDefined = 4, kTokUnused = 5,
  kTokByte = 6,
};

struct TokenizerMeta {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;  // -1: none
  std::vector<uint8_t> model_bytes;
  size_t n_spm_pieces = 0;  // before padding
};

// Throws tern::Error "path: problem" if the file is missing or not a model.
TokenizerMeta load_tokenizer(const std::string& path);

// Appends unused "<unused_N>" pieces (score 0) until there are `n`, so the
// token count matches the embedding rows as llama.cpp requires.
void pad_vocab(TokenizerMeta& t, size_t n);

// Piece types straight from the serialized ModelProto (field 1 = pieces,
// piece field 3 = type), because the processor API cannot tell a
// user-defined piece from a normal one. Throws on malformed input.
std::vector<int32_t> spm_piece_types(const std::vector<uint8_t>& proto);

}  // namespace tern::pack
