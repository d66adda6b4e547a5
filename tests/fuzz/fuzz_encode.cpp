// libFuzzer target for encoding arbitrary bytes with a real tokenizer,
// loaded once at start-up: tests/data/tokenizers/llama3/tokenizer.json (the
// Llama-3 regex split, ignore_merges, 256 special added tokens), or the
// tokenizer.json named by the environment variable TERN_FUZZ_TOKENIZER.
//
// Checked for every input x:
//  - encode never throws for a byte-level tokenizer (every byte has a token)
//    and never returns an id outside the vocabulary;
//  - byte-level tokenizers round-trip: decode(encode(x)) is x with invalid
//    UTF-8 replaced as WHATWG / Rust's from_utf8_lossy replace it (one U+FFFD
//    per maximal invalid subpart), both with special-token text kept as text
//    and with it parsed into special tokens (then decoded without skipping
//    them); the streamed pieces (piece_bytes through Utf8Stream), which the
//    CLI prints, add up to the same text.
// SentencePiece-style tokenizers (Mistral's) are only run, not compared: their
// normalizer turns " " into "▁" and their decoder turns every "▁" back into
// " ", so text holding "▁" itself cannot come back unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tern/error.h"
#include "tern/tokenizer.h"
#include "tern/tokenizer_spec.h"

namespace {

const tern::Tokenizer* g_tok = nullptr;
bool g_byte_level = false;
volatile uint64_t g_sink;

// WHATWG UTF-8 decode with replacement, written out independently of tern's
// own (src/tokenizer/utf8.cpp) so that the two check each other.
std::string lossy(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const unsigned c = static_cast<unsigned char>(s[i]);
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      out += char(c);
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    size_t j = i + 1, seen = 0;
    while (seen < need && j < s.size()) {
      const unsigned d = static_cast<unsigned char>(s[j]);
      if (d < lo || d > hi) break;
      lo = 0x80, hi = 0xBF;
      ++j, ++seen;
    }
    if (seen == need) out.append(s.substr(i, j - i));
    else out += "\xEF\xBF\xBD";  // the maximal subpart [i, j) is one error
    i = j;
  }
  return out;
}

void check(const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (id < 0 || id >= g_tok->vocab_size()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* path = std::getenv("TERN_FUZZ_TOKENIZER");
  if (!path || !*path) path = TERN_FUZZ_DEFAULT_TOKENIZER;
  try {
    g_tok = new tern::Tokenizer(tern::tok::load_tokenizer_json(path), path);
  } catch (const tern::Error& e) {
    std::fprintf(stderr, "fuzz_encode: %s\n", e.what());
    std::exit(1);
  }
  g_byte_level = g_tok->kind() == "BPE (byte-level)";
  std::fprintf(stderr, "fuzz_encode: %s: %s, %d tokens; round trip %s\n", path, g_tok->kind().c_str(),
               g_tok->vocab_size(), g_byte_level ? "checked" : "not checked");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view x(reinterpret_cast<const char*>(data), size);
  const tern::Tokenizer& tok = *g_tok;
  std::vector<int32_t> plain, special;
  try {
    plain = tok.encode(x, {.add_special = false, .parse_special = false});
    special = tok.encode(x, {.add_special = true, .parse_special = true});
  } catch (const tern::Error& e) {
    if (g_byte_level) __builtin_trap();  // every byte has a token: nothing may fail
    return 0;
  }
  check(plain);
  check(special);
  std::string text, text_special, streamed;
  try {
    text = tok.decode(plain, true);
    text_special = tok.decode(special, false);
  } catch (const tern::Error&) {
    __builtin_trap();  // ids that encode made must decode
  }
  tern::Utf8Stream stream;
  for (int32_t id : plain) streamed += stream.push(tok.piece_bytes(id));
  streamed += stream.flush();
  g_sink = g_sink + text.size() + text_special.size() + streamed.size();
  if (!g_byte_level) return 0;

  const std::string want = lossy(x);
  if (text != want) __builtin_trap();
  if (streamed != want) __builtin_trap();
  // A BOS the post-processor adds decodes to its own text.
  std::string want_special = want;
  if (tok.adds_bos()) want_special = tok.token_text(tok.bos()) + want_special;
  if (text_special != want_special) __builtin_trap();
  return 0;
}
