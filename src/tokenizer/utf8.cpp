#include "tokenizer/utf8.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "tern/error.h"

namespace tern::tok {

size_t utf8_valid_len(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const size_t n = s.size() - i;
  const unsigned c = b(i);
  if (c < 0x80) return 1;
  // Second-byte ranges per lead byte (Unicode Table 3-7): this excludes
  // overlong forms, surrogates and code points above U+10FFFF.
  unsigned lo = 0x80, hi = 0xBF;
  size_t len;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  return len;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t len = utf8_valid_len(s, i);
    if (len) {
      out.append(s.data() + i, len);
      i += len;
      continue;
    }
    // Maximal subpart: skip the lead byte and as many following bytes as
    // could still have continued a valid sequence, then emit one U+FFFD.
    const unsigned c = static_cast<unsigned char>(s[i]);
    size_t want = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 1;
    size_t j = i + 1;
    if (want > 1) {
      unsigned lo = 0x80, hi = 0xBF;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
      if (j < s.size()) {
        const unsigned d = static_cast<unsigned char>(s[j]);
        if (d >= lo && d <= hi) {
          ++j;
          while (j < s.size() && j - i < want && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
        }
      }
    }
    out += "\xEF\xBF\xBD";
    i = j;
  }
  return out;
}

uint32_t utf8_next(std::string_view s, size_t& i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    ++i;
    return c;
  }
  const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

bool is_unicode_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

int byte_token_value(std::string_view t) {
  auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string unicode_normalize(std::string_view s, UnicodeForm form) {
  if (s.empty()) return {};
  // UTF8PROC_STABLE: only the stable (versioned) decompositions, as the
  // Unicode normalization forms define them.
  int opt = UTF8PROC_STABLE;
  switch (form) {
    case UnicodeForm::NFC: opt |= UTF8PROC_COMPOSE; break;
    case UnicodeForm::NFD: opt |= UTF8PROC_DECOMPOSE; break;
    case UnicodeForm::NFKC: opt |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case UnicodeForm::NFKD: opt |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* out = nullptr;
  // An explicit length (no UTF8PROC_NULLTERM), so NUL bytes in the text stay.
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          utf8proc_ssize_t(s.size()), &out, utf8proc_option_t(opt));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  if (n < 0) throw Error(std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
  return std::string(reinterpret_cast<const char*>(out), size_t(n));
}

}  // namespace tern::tok
