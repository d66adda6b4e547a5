#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdio>
#include <iterator>

#include "tern/error.h"

namespace tern::tok {

namespace {

struct CodeRange {
  uint32_t lo, hi;
};
#include "tokenizer/unicode_delta.inc"

std::string class_extra(char cls) {
  std::string out;
  auto add = [&](const CodeRange* r, size_t n) {
    char buf[40];
    for (size_t i = 0; i < n; ++i) {
      std::snprintf(buf, sizeof buf, "\\x{%X}-\\x{%X}", r[i].lo, r[i].hi);
      out += buf;
    }
  };
  if (cls == 'L') add(kExtraL, std::size(kExtraL));
  if (cls == 'N') add(kExtraN, std::size(kExtraN));
  if (cls == 'P') add(kExtraP, std::size(kExtraP));
  return out;
}

}  // namespace

// PCRE2 10.42 knows Unicode 14; the Rust regex engines behind Hugging Face's
// tokenizers know a newer one. The code points assigned since to \p{L},
// \p{N} and \p{P} (unicode_delta.inc, generated from the oracle) are added
// wherever a pattern names those classes, so new characters split alike.
std::string widen_unicode_classes(const std::string& p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 'Q') {  // literal text up to \E
        const size_t end = p.find("\\E", i + 2);
        const size_t stop = end == std::string::npos ? p.size() : end + 2;
        out.append(p, i, stop - i);
        i = stop - 1;
        continue;
      }
      if (e == 'p' || e == 'P') {
        char cls = 0;
        size_t len = 0;
        if (i + 4 < p.size() + 1 && p.compare(i + 2, 1, "{") == 0 && i + 4 < p.size() && p[i + 4] == '}') {
          cls = p[i + 3];
          len = 5;
        } else if (i + 2 < p.size() && p[i + 2] != '{') {
          cls = p[i + 2];
          len = 3;
        }
        const std::string extra = (cls == 'L' || cls == 'N' || cls == 'P') ? class_extra(cls) : "";
        if (!extra.empty() && !(in_class && e == 'P')) {
          const std::string prop = std::string("\\p{") + cls + "}";
          if (in_class) out += prop + extra;
          else out += (e == 'P' ? "[^" : "[") + prop + extra + "]";
          i += len - 1;
          continue;
        }
      }
      out.append(p, i, 2);
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      const size_t end = p.find(":]", i + 2);
      const size_t stop = end == std::string::npos ? p.size() : end + 2;
      out.append(p, i, stop - i);
      i = stop - 1;
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

struct Regex::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_context* mctx = nullptr;
  ~Impl() {
    if (mctx) pcre2_match_context_free(mctx);
    if (code) pcre2_code_free(code);
  }
};

Regex::Regex(const std::string& pattern) : pattern_(pattern), impl_(new Impl) {
  int err = 0;
  PCRE2_SIZE off = 0;
  const std::string widened = widen_unicode_classes(pattern);
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(widened.data()), widened.size(),
                              PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error("regex /" + pattern + "/ does not compile: " + reinterpret_cast<char*>(msg) +
                " at offset " + std::to_string(off));
  }
  // The JIT is an optimization only: where it is unavailable the
  // interpreter gives the same matches.
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);
  // A hostile pattern must fail, not hang: bound the backtracking of one match.
  impl_->mctx = pcre2_match_context_create(nullptr);
  if (!impl_->mctx) throw Error("regex: out of memory");
  pcre2_set_match_limit(impl_->mctx, 10'000'000);
  pcre2_set_depth_limit(impl_->mctx, 100'000);
}

Regex Regex::literal(std::string_view lit) {
  std::string p = "\\Q";
  // \Q...\E quotes everything except a literal "\E", which is spliced.
  for (size_t i = 0; i < lit.size(); ++i) {
    if (lit[i] == '\\' && i + 1 < lit.size() && lit[i + 1] == 'E') {
      p += "\\E\\\\E\\Q";
      ++i;
    } else {
      p += lit[i];
    }
  }
  p += "\\E";
  return Regex(p);
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  out.clear();
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  if (!md) throw Error("regex: out of memory");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    // The text was validated once; NO_UTF_CHECK keeps each call O(match).
    const int rc = pcre2_match(impl_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, impl_->mctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error("regex /" + pattern_ + "/: " + reinterpret_cast<char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t b = ov[0], e = ov[1];
    if (e > b) {
      out.emplace_back(b, e);
      start = e;
    } else {
      if (b >= text.size()) break;
      // Step over one whole character.
      size_t next = b + 1;
      while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
      start = next;
    }
  }
  pcre2_match_data_free(md);
}

}  // namespace tern::tok
