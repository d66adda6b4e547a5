// UTF-8 and the Python str operations that need code points: strip, case
// mapping (upper, lower, capitalize, title) with Python's rules for the
// characters chat templates meet.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "value.h"

namespace tern::chat::detail {

// Decodes the code point at s[i] into cp; returns where the next begins.
static size_t next_code_point(std::string_view s, size_t i, char32_t& cp) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    cp = c;
    return i + 1;
  }
  int n = c >= 0xF0 && c <= 0xF4 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 && c < 0xE0 ? 1 : -1;
  if (c > 0xF4) n = -1;
  cp = n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
  bool ok = n > 0 && i + n < s.size();
  if (ok) {
    for (int k = 1; k <= n; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (cc & 0x3F);
    }
  }
  if (ok) {
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      ok = false;
  }
  if (!ok) {
    cp = 0xDC00 + c;
    return i + 1;
  }
  return i + n + 1;
}

std::u32string decode_utf8(std::string_view s) {
  // Charged by the code point: what follows a decode works character by
  // character too.
  spend(s.size() / 2);
  std::u32string out;
  out.reserve(s.size());
  char32_t cp;
  for (size_t i = 0; i < s.size(); out.push_back(cp)) i = next_code_point(s, i, cp);
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c >= 0xDC80 && c <= 0xDCFF) {
    out.push_back(static_cast<char>(c - 0xDC00));
  } else if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

size_t utf8_length(std::string_view s) {
  spend(s.size() / 64);
  if (std::all_of(s.begin(), s.end(), [](char c) { return (c & 0x80) == 0; })) return s.size();
  spend(s.size() / 8);
  size_t n = 0;
  char32_t cp;
  for (size_t i = 0; i < s.size(); ++n) i = next_code_point(s, i, cp);
  return n;
}

bool py_isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string py_strip(std::string_view s, const Value& chars, bool left, bool right) {
  std::u32string u = decode_utf8(s);
  std::u32string set;
  bool ws = chars.is_none() || chars.is_undefined();
  if (!ws) {
    if (!chars.is_str()) throw_eval("strip arg must be None or str");
    set = decode_utf8(chars.text());
  }
  // A long set is sorted (and searched by halves), not scanned per character.
  const bool sorted = set.size() > 32;
  if (sorted) {
    spend(set.size() / 2);
    std::sort(set.begin(), set.end());
  }
  auto strip_it = [&](char32_t c) {
    if (ws) return py_isspace(c);
    return sorted ? std::binary_search(set.begin(), set.end(), c) : set.find(c) != std::u32string::npos;
  };
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && strip_it(u[b])) ++b;
  if (right)
    while (e > b && strip_it(u[e - 1])) --e;
  return encode_utf8(std::u32string_view(u).substr(b, e - b));
}

// Case mapping: ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic by
// their simple mappings, plus the full mappings Python applies to ß.
static char32_t upper1(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
  if (c == 0xB5) return 0x39C;
  if (c == 0xFF) return 0x178;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 0) ? c - 1 : c;
    if (c == 0x138 || c == 0x149) return c;
    return (c % 2 == 1) ? c - 1 : c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if (c >= 0x460 && c <= 0x4FF && c % 2 == 1 && !(c >= 0x482 && c <= 0x489)) return c - 1;
  return c;
}
static char32_t lower1(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x130) return 'i';
    if (c == 0x178) return 0xFF;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 1) ? c + 1 : c;
    if (c == 0x138 || c == 0x149 || c == 0x17F || c == 0x131) return c;
    return (c % 2 == 0) ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0x460 && c <= 0x4FF && c % 2 == 0 && !(c >= 0x482 && c <= 0x489)) return c + 1;
  return c;
}
static bool is_cased(char32_t c) { return upper1(c) != c || lower1(c) != c || c == 0xDF; }

int char_case(char32_t c) {
  // as lower() / upper() of the one-character string: Σ lowers to σ, İ to
  // i + dot, ß uppers to SS
  return (lower1(c) != c ? 1 : 0) | (upper1(c) != c || c == 0xDF ? 2 : 0);
}

static void append_upper(std::string& out, char32_t c) {
  if (c == 0xDF) {
    out += "SS";
    return;
  }
  append_utf8(out, upper1(c));
}
static void append_lower(std::string& out, char32_t c) {
  if (c == 0x130) {
    out += "i\xCC\x87";  // i + combining dot above
    return;
  }
  append_utf8(out, lower1(c));
}
static void append_title(std::string& out, char32_t c) {
  if (c == 0xDF) {
    out += "Ss";
    return;
  }
  append_utf8(out, upper1(c));
}

std::string py_upper(std::string_view s) {
  spend(s.size() / 4);  // case mapping, on top of the decode
  std::string out;
  for (char32_t c : decode_utf8(s)) append_upper(out, c);
  return out;
}
// Lowercases u[k]; a capital sigma at the end of a word becomes the final
// sigma, as Python's Final_Sigma rule has it.
static void append_lower_at(std::string& out, const std::u32string& u, size_t k) {
  if (u[k] == 0x3A3) {
    bool before = k > 0 && is_cased(u[k - 1]);
    bool after = k + 1 < u.size() && is_cased(u[k + 1]);
    append_utf8(out, before && !after ? 0x3C2 : 0x3C3);
    return;
  }
  append_lower(out, u[k]);
}

std::string py_lower(std::string_view s) {
  spend(s.size() / 4);  // case mapping, on top of the decode
  std::u32string u = decode_utf8(s);
  std::string out;
  for (size_t k = 0; k < u.size(); ++k) append_lower_at(out, u, k);
  return out;
}
std::string py_capitalize(std::string_view s) {
  spend(s.size() / 4);  // case mapping, on top of the decode
  std::u32string u = decode_utf8(s);
  std::string out;
  for (size_t k = 0; k < u.size(); ++k) k == 0 ? append_title(out, u[k]) : append_lower_at(out, u, k);
  return out;
}
std::string py_title(std::string_view s) {
  spend(s.size() / 4);  // case mapping, on top of the decode
  std::u32string u = decode_utf8(s);
  std::string out;
  bool prev_cased = false;
  for (size_t k = 0; k < u.size(); ++k) {
    prev_cased ? append_lower_at(out, u, k) : append_title(out, u[k]);
    prev_cased = is_cased(u[k]);
  }
  return out;
}
std::string jinja_title(std::string_view s) {
  spend(s.size() / 4);  // case mapping, on top of the decode
  // "".join(w[0].upper() + w[1:].lower() for w in re.split(r"([-\s({\[<]+)", s) if w)
  std::u32string u = decode_utf8(s);
  auto sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c); };
  std::string out;
  size_t k = 0;
  while (k < u.size()) {
    size_t e = k;
    bool is_sep = sep(u[k]);
    while (e < u.size() && sep(u[e]) == is_sep) ++e;
    append_upper(out, u[k]);
    std::u32string rest = u.substr(k + 1, e - k - 1);
    for (size_t j = 0; j < rest.size(); ++j) append_lower_at(out, rest, j);
    k = e;
  }
  return out;
}

}  // namespace tern::chat::detail
