// Shared by the tokenizer fuzzers: runs every public operation of a
// Tokenizer that was built from fuzzed rules on a few fixed texts. Errors
// must be tern::Error; other exceptions escape and libFuzzer reports them.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tern/error.h"
#include "tern/tokenizer.h"

namespace tern_fuzz {

inline volatile uint64_t g_sink;  // keeps results from being optimised away

// TERN_FUZZ_VERBOSE=1 prints why an input was rejected (for checking seeds).
inline void note(const tern::Error& e) {
  static const bool verbose = std::getenv("TERN_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "rejected: %s\n", e.what());
}

// Plain and accented text, CJK, emoji, special-token spellings, SentencePiece
// and byte-token spellings, whitespace runs, digits, contractions and bytes
// that are not UTF-8.
inline constexpr std::string_view kTexts[] = {
    "Hello world! It's 2024, isn't it? We'll see...",
    " h\xC3\xA9llo  w\xC3\xB6rld \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\xA6\x99\xE2\x9C\xA8 ",
    "<s><|begin_of_text|>hi</s><|endoftext|><unk> [INST] x [/INST]<|eot_id|>",
    "\t\n  \r\n\xE2\x96\x81\xE2\x96\x81<0x41>x 12345678 3.14159",
    "\xFF\xFE bad \xC3 utf8 \xED\xA0\x80\xF4\x90\x80\x80 \xE2\x82",
    "",
};

inline void check_ids(const tern::Tokenizer& tok, const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (id < 0 || id >= tok.vocab_size()) __builtin_trap();  // encode made an id outside the vocabulary
}

inline void exercise(const tern::Tokenizer& tok) {
  uint64_t h = tok.vocab_size() + tok.kind().size() + tok.notes().size() + tok.chat_template().size();
  for (int32_t id : tok.eog_ids()) h += tok.is_eog(id) + tok.is_special(id);
  h += tok.bos() + tok.eos() + tok.adds_bos();
  for (std::string_view text : kTexts) {
    for (const tern::EncodeOptions o : {tern::EncodeOptions{}, tern::EncodeOptions{false, false}}) {
      std::vector<int32_t> ids;
      try {
        ids = tok.encode(text, o);
      } catch (const tern::Error& e) {
        note(e);
        continue;
      }
      check_ids(tok, ids);
      for (bool skip : {true, false}) {
        try {
          h += tok.decode(ids, skip).size();
        } catch (const tern::Error&) {
        }
      }
      tern::Utf8Stream stream;
      for (int32_t id : ids) {
        try {
          h += stream.push(tok.piece_bytes(id)).size() + tok.token_piece(id).size() + tok.token_text(id).size();
          h += tok.is_special(id) + tok.is_eog(id);
        } catch (const tern::Error&) {
        }
      }
      h += stream.flush().size();
    }
  }
  // Every id, not only the ones encode produced: piece and text lookups
  // must work for any id of the vocabulary (the CLI prints sampled ids).
  const int32_t n = tok.vocab_size() < 4096 ? tok.vocab_size() : 4096;
  for (int32_t id = 0; id < n; ++id) {
    try {
      h += tok.piece_bytes(id).size() + tok.token_piece(id).size();
      const int32_t one[1] = {id};
      h += tok.decode(one, false).size();
    } catch (const tern::Error&) {
    }
  }
  for (int32_t id : {-1, tok.vocab_size(), INT32_MIN, INT32_MAX}) {
    h += tok.piece_bytes(id).size() + tok.token_piece(id).size() + tok.is_special(id) + tok.is_eog(id);
    try {
      const int32_t one[1] = {id};
      tok.decode(one);
      __builtin_trap();  // decode must reject an id outside the vocabulary
    } catch (const tern::Error&) {
    }
  }
  g_sink = g_sink + h;
}

}  // namespace tern_fuzz
