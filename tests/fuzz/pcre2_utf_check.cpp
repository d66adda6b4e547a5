// Linked into the tokenizer fuzzers: checks PCRE2's precondition that ASan
// cannot see (libpcre2 is not instrumented). tern validates a text once and
// then matches with PCRE2_NO_UTF_CHECK, which is only allowed on valid UTF-8
// and at a character boundary; otherwise PCRE2's behaviour is undefined (it
// reads past the end of a subject that ends in a truncated sequence). This
// definition of pcre2_match_8 takes the place of the library's for the code
// linked into the fuzzer, traps when the precondition fails, and then calls
// the real function.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <dlfcn.h>
#include <pcre2.h>

#include <cstddef>
#include <cstdint>

namespace {

using MatchFn = int (*)(const pcre2_code*, PCRE2_SPTR, PCRE2_SIZE, PCRE2_SIZE, uint32_t, pcre2_match_data*,
                        pcre2_match_context*);

// Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool valid_utf8(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const unsigned c = s[i];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) return false;
    for (size_t k = 2; k < len; ++k)
      if ((s[i + k] & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

// The subject last checked: tern matches one text many times, from offset 0
// up, so a text is validated when a search starts at 0 and again only if
// a later call names another one.
const uint8_t* g_checked = nullptr;
size_t g_checked_len = 0;

}  // namespace

extern "C" int pcre2_match_8(const pcre2_code* code, PCRE2_SPTR subject, PCRE2_SIZE length, PCRE2_SIZE start,
                             uint32_t options, pcre2_match_data* md, pcre2_match_context* mctx) {
  static const MatchFn real = reinterpret_cast<MatchFn>(dlsym(RTLD_NEXT, "pcre2_match_8"));
  if (!real) __builtin_trap();
  if (options & PCRE2_NO_UTF_CHECK) {
    if (length != PCRE2_ZERO_TERMINATED && (start == 0 || subject != g_checked || length != g_checked_len)) {
      if (!valid_utf8(subject, length)) __builtin_trap();  // PCRE2_NO_UTF_CHECK on invalid UTF-8
      g_checked = subject, g_checked_len = length;
    }
    if (start < length && (subject[start] & 0xC0) == 0x80) __builtin_trap();  // offset inside a character
  }
  return real(code, subject, length, start, options, md, mctx);
}
