// UTF-8 helpers the tokenizers share. Input text is made valid UTF-8 the way
// Hugging Face's Rust code does it (String::from_utf8_lossy, the WHATWG
// "maximal subpart" rule: each invalid sequence becomes one U+FFFD), so a
// prompt with bad bytes tokenizes exactly as `tokenizers` would.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tern::tok {

// Length of the valid UTF-8 sequence at s[i], or 0 if none starts there.
size_t utf8_valid_len(std::string_view s, size_t i);
// s with every invalid sequence replaced by U+FFFD.
std::string utf8_lossy(std::string_view s);
// Decodes the code point at s[i] (s must be valid UTF-8); advances i.
uint32_t utf8_next(std::string_view s, size_t& i);
void utf8_append(std::string& out, uint32_t cp);
// Unicode White_Space, as Rust's char::is_whitespace.
bool is_unicode_space(uint32_t cp);

// Unicode normalization forms, as Hugging Face's NFC / NFD / NFKC / NFKD
// normalizers apply them (Qwen2 and Qwen3 tokenizer.json files carry NFC).
enum class UnicodeForm { NFC, NFD, NFKC, NFKD };
// `s` (valid UTF-8) in the given form; throws tern::Error if utf8proc
// refuses the text.
std::string unicode_normalize(std::string_view s, UnicodeForm form);

// The byte a "<0xAB>" byte-fallback token stands for, or -1 if `token` is
// not exactly that shape with two hex digits.
int byte_token_value(std::string_view token);

}  // namespace tern::tok
