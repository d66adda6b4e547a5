// A tokenizer as data: the vocabulary and rules a model file carries. The
// packer builds a Spec from a checkpoint (tokenizer.model or tokenizer.json)
// and writes it as llama.cpp's tokenizer.ggml.* keys plus two tern keys; the
// loader reads it back from any GGUF, tern's or another tool's, and
// Tokenizer (tokenizer.h) runs it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tern/gguf.h"

namespace tern::tok {

// llama.cpp's token types (llama_token_type); the same numbers as
// SentencePiece's piece types.
enum TokenType : int32_t {
  kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

struct Spec {
  std::string model;   // tokenizer.ggml.model: "llama" (SentencePiece-style) or "gpt2" (byte-level BPE)
  std::string pre;     // tokenizer.ggml.pre: llama.cpp's pre-tokenizer name; "" when absent
  std::vector<std::string> tokens;  // [n_vocab] token text as the vocabulary spells it
  std::vector<float> scores;        // [n_vocab] or empty
  std::vector<int32_t> types;       // [n_vocab] TokenType, or empty (all normal)
  std::vector<std::string> merges;  // "left right" in rank order; empty for score-ranked "llama"
  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;  // -1: none
  std::vector<int32_t> eog;          // extra end-of-generation ids (generation_config.json)
  bool add_bos = false, add_eos = false;
  bool add_space_prefix = true;      // "llama" only: a "▁" before the text, as SentencePiece
  std::string chat_template;         // tokenizer.chat_template, "" if none
  // tern.tokenizer.hf_pipeline: tokenizer.json less its vocabulary and
  // merges (normalizer, pre_tokenizer, decoder, post_processor, model flags,
  // added_tokens), so tern runs exactly the rules of the source file.
  std::string hf_pipeline;
  // tern.tokenizer.spm_model: the raw tokenizer.model bytes, run with
  // libsentencepiece.
  std::vector<uint8_t> spm_model;

  // Appends unused "<unused_N>" tokens (score 0) until there are n, so the
  // token count matches the embedding rows as llama.cpp requires.
  void pad_to(size_t n);
};

// Reads the tokenizer keys; throws tern::Error "path: problem" when they are
// missing or inconsistent (array lengths, ids out of range).
Spec read_spec(const gguf::File& f);
// llama.cpp's tokenizer.ggml.* / tokenizer.chat_template keys, or tern's own
// tern.tokenizer.* keys: the packer writes every tern.* key after the
// standard ones.
enum class KeyGroup { Standard, Tern };
void write_spec(gguf::Writer& w, const Spec& s, KeyGroup group);

// From a checkpoint directory: tokenizer.json (preferred) or
// tokenizer.model, with tokenizer_config.json and generation_config.json
// when present. Throws tern::Error naming the file and the problem.
Spec load_checkpoint_tokenizer(const std::string& dir);
// The pieces of it, for tests and tools.
Spec load_tokenizer_json(const std::string& path);
// The same from the file's bytes; `path` names it in errors.
Spec parse_tokenizer_json(std::string_view text, const std::string& path);
Spec load_sentencepiece(const std::string& path);
// Applies tokenizer_config.json (add_bos_token, add_eos_token, bos/eos
// token, chat_template) and generation_config.json (eos_token_id, one or a
// list) from `dir`, where they exist.
void apply_hf_configs(Spec& s, const std::string& dir);

// Piece types straight from a serialized SentencePiece ModelProto (field 1
// = pieces, piece field 3 = type): the processor API cannot tell a
// user-defined piece from a normal one. Throws on malformed input.
std::vector<int32_t> spm_piece_types(const std::vector<uint8_t>& proto);

}  // namespace tern::tok
