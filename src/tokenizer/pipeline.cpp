#include "tokenizer/pipeline.h"

#include <algorithm>
#include <array>
#include <functional>
#include <optional>

#include "tern/error.h"
#include "tokenizer/utf8.h"

namespace tern::tok {

namespace {

struct ByteMap {
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, 512> to_byte;  // every mapped code point is < 512
  ByteMap() {
    to_byte.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const uint32_t cp = printable ? uint32_t(b) : uint32_t(256 + n++);
      utf8_append(to_unicode[b], cp);
      to_byte[cp] = int16_t(b);
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

Behavior parse_behavior(const Json& step, const std::string& fallback) {
  const std::string b = get_string(step, "behavior", "pre_tokenizer", fallback);
  if (b == "Removed") return Behavior::Removed;
  if (b == "Isolated") return Behavior::Isolated;
  if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::MergedWithNext;
  if (b == "Contiguous") return Behavior::Contiguous;
  throw Error("unknown split behavior '" + b + "'");
}

// {"String": "..."} or {"Regex": "..."}.
Regex parse_pattern(const Json& step, const char* what) {
  const Json* p = field(step, "pattern");
  if (!p || !p->is_object()) throw Error(std::string(what) + " has no pattern");
  if (const Json* r = field(*p, "Regex"); r && r->is_string()) return Regex(r->get<std::string>());
  if (const Json* s = field(*p, "String"); s && s->is_string()) return Regex::literal(s->get<std::string>());
  throw Error(std::string(what) + " pattern is neither String nor Regex");
}

// Metaspace's prepend rule, in either the current (prepend_scheme) or the
// older (add_prefix_space) spelling.
enum class Prepend { Always, First, Never };
Prepend parse_prepend(const Json& step) {
  if (const Json* s = field(step, "prepend_scheme")) {
    const std::string v = s->is_string() ? s->get<std::string>() : "";
    if (v == "always") return Prepend::Always;
    if (v == "first") return Prepend::First;
    if (v == "never") return Prepend::Never;
    throw Error("Metaspace prepend_scheme '" + v + "' is unknown");
  }
  return get_bool(step, "add_prefix_space", "Metaspace", true) ? Prepend::Always : Prepend::Never;
}

std::string replacement_of(const Json& step) {
  const std::string r = get_string(step, "replacement", "Metaspace", "\xE2\x96\x81");
  if (r.empty() || utf8_valid_len(r, 0) != r.size()) throw Error("Metaspace replacement must be one character");
  return r;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  size_t i = 0;
  while (true) {
    const size_t j = s.find(from, i);
    if (j == std::string_view::npos || from.empty()) break;
    out.append(s.substr(i, j - i));
    out.append(to);
    i = j + from.size();
  }
  out.append(s.substr(i));
  return out;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return byte_map().to_unicode[b]; }
int unicode_to_byte(uint32_t cp) { return cp < 512 ? byte_map().to_byte[cp] : -1; }

// One step of a normalizer, pre-tokenizer or decoder chain.
struct Pipeline::Step {
  enum Kind {
    // normalizers
    NPrepend, NReplace, NStrip, NUnicode,
    // pre-tokenizers
    PSplit, PByteLevel, PMetaspace, PDigits, PPunctuation, PWhitespace, PWhitespaceSplit,
    // decoders
    DByteLevel, DReplace, DByteFallback, DFuse, DStrip, DMetaspace,
  } kind;
  std::optional<Regex> regex;
  std::string text, content;  // Prepend text; Replace content; Metaspace replacement; Strip char
  Behavior behavior = Behavior::Isolated;
  bool invert = false, add_prefix_space = false, use_regex = false, left = false, right = false;
  Prepend prepend = Prepend::Always;
  UnicodeForm form = UnicodeForm::NFC;
  bool split = true;
  size_t start = 0, stop = 0;
};

namespace {

using Step = Pipeline::Step;

struct Span {
  size_t b, e;
  bool match;
};
using Steps = std::vector<std::unique_ptr<Step>>;

std::unique_ptr<Step> make(Step::Kind k) {
  auto s = std::make_unique<Step>();
  s->kind = k;
  return s;
}

// Flattens Sequence steps; `list_key` names the member holding the list.
void flatten(const Json& j, const char* list_key, const char* what,
             const std::function<void(const Json&)>& each) {
  if (!j.is_object()) throw Error(std::string(what) + " is not an object");
  if (j.value("type", "") == "Sequence") {
    const Json* list = field(j, list_key);
    if (!list || !list->is_array()) throw Error(std::string(what) + " Sequence has no '" + list_key + "'");
    for (const Json& x : *list) flatten(x, list_key, what, each);
    return;
  }
  each(j);
}

Steps parse_normalizer(const Json& j) {
  Steps out;
  flatten(j, "normalizers", "normalizer", [&](const Json& n) {
    const std::string t = n.value("type", "");
    if (t == "Prepend") {
      auto s = make(Step::NPrepend);
      s->text = get_string(n, "prepend", "Prepend");
      out.push_back(std::move(s));
    } else if (t == "Replace") {
      auto s = make(Step::NReplace);
      s->regex = parse_pattern(n, "Replace");
      s->content = get_string(n, "content", "Replace");
      out.push_back(std::move(s));
    } else if (t == "Strip") {
      auto s = make(Step::NStrip);
      s->left = get_bool(n, "strip_left", "Strip", true);
      s->right = get_bool(n, "strip_right", "Strip", true);
      out.push_back(std::move(s));
    } else if (t == "NFC" || t == "NFD" || t == "NFKC" || t == "NFKD") {
      auto s = make(Step::NUnicode);
      s->form = t == "NFC"    ? UnicodeForm::NFC
                : t == "NFD"  ? UnicodeForm::NFD
                : t == "NFKC" ? UnicodeForm::NFKC
                              : UnicodeForm::NFKD;
      out.push_back(std::move(s));
    } else {
      throw Error("normalizer '" + t + "' is not supported");
    }
  });
  return out;
}

Steps parse_pre_tokenizer(const Json& j, bool& byte_level) {
  Steps out;
  flatten(j, "pretokenizers", "pre_tokenizer", [&](const Json& p) {
    const std::string t = p.value("type", "");
    if (t == "Split") {
      auto s = make(Step::PSplit);
      s->regex = parse_pattern(p, "Split");
      s->behavior = parse_behavior(p, "Isolated");
      s->invert = get_bool(p, "invert", "Split", false);
      out.push_back(std::move(s));
    } else if (t == "ByteLevel") {
      auto s = make(Step::PByteLevel);
      s->add_prefix_space = get_bool(p, "add_prefix_space", "ByteLevel", true);
      s->use_regex = get_bool(p, "use_regex", "ByteLevel", true);
      if (s->use_regex) s->regex = Regex(kGpt2Pattern);
      byte_level = true;
      out.push_back(std::move(s));
    } else if (t == "Metaspace") {
      auto s = make(Step::PMetaspace);
      s->content = replacement_of(p);
      s->prepend = parse_prepend(p);
      s->split = get_bool(p, "split", "Metaspace", true);
      out.push_back(std::move(s));
    } else if (t == "Digits") {
      auto s = make(Step::PDigits);
      s->regex = Regex("\\p{N}");
      s->behavior = get_bool(p, "individual_digits", "Digits", false) ? Behavior::Isolated : Behavior::Contiguous;
      out.push_back(std::move(s));
    } else if (t == "Punctuation") {
      auto s = make(Step::PPunctuation);
      s->regex = Regex("[\\p{P}!-/:-@\\[-`{-~]");
      s->behavior = parse_behavior(p, "Isolated");
      out.push_back(std::move(s));
    } else if (t == "Whitespace") {
      auto s = make(Step::PWhitespace);
      s->regex = Regex("\\w+|[^\\w\\s]+");
      s->behavior = Behavior::Removed;
      s->invert = true;
      out.push_back(std::move(s));
    } else if (t == "WhitespaceSplit") {
      auto s = make(Step::PWhitespaceSplit);
      s->regex = Regex("\\s+");
      s->behavior = Behavior::Removed;
      out.push_back(std::move(s));
    } else {
      throw Error("pre_tokenizer '" + t + "' is not supported");
    }
  });
  return out;
}

Steps parse_decoder(const Json& j) {
  Steps out;
  flatten(j, "decoders", "decoder", [&](const Json& d) {
    const std::string t = d.value("type", "");
    if (t == "ByteLevel") {
      out.push_back(make(Step::DByteLevel));
    } else if (t == "Replace") {
      auto s = make(Step::DReplace);
      const Json* p = field(d, "pattern");
      const Json* str = p ? field(*p, "String") : nullptr;
      if (!str || !str->is_string()) throw Error("decoder Replace needs a String pattern");
      s->text = str->get<std::string>();
      s->content = get_string(d, "content", "Replace");
      out.push_back(std::move(s));
    } else if (t == "ByteFallback") {
      out.push_back(make(Step::DByteFallback));
    } else if (t == "Fuse") {
      out.push_back(make(Step::DFuse));
    } else if (t == "Strip") {
      auto s = make(Step::DStrip);
      s->content = get_string(d, "content", "Strip", " ");
      if (s->content.empty() || utf8_valid_len(s->content, 0) != s->content.size())
        throw Error("decoder Strip content must be one character");
      for (auto [key, dst] : {std::pair{"start", &s->start}, std::pair{"stop", &s->stop}}) {
        const Json* v = field(d, key);
        if (v && (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > 1024))
          throw Error(std::string("decoder Strip '") + key + "' must be a small count");
        *dst = v ? v->get<size_t>() : 0;
      }
      out.push_back(std::move(s));
    } else if (t == "Metaspace") {
      auto s = make(Step::DMetaspace);
      s->content = replacement_of(d);
      s->prepend = parse_prepend(d);
      out.push_back(std::move(s));
    } else {
      throw Error("decoder '" + t + "' is not supported");
    }
  });
  return out;
}


// HF's NormalizedString::split on one span of `text`: the regex's matches
// and the gaps between them, combined by `behavior`; appends kept spans.
void split_by(const Step& s, const std::string& text, const Words::Span& in, std::vector<Words::Span>& out,
              std::vector<std::pair<size_t, size_t>>& scratch) {
  const std::string_view t = std::string_view(text).substr(in.b, in.e - in.b);
  s.regex->find_all(t, scratch);
  std::vector<Span> spans;
  size_t prev = 0;
  for (auto [b, e] : scratch) {
    if (b > prev) spans.push_back({prev, b, false});
    spans.push_back({b, e, true});
    prev = e;
  }
  if (prev < t.size()) spans.push_back({prev, t.size(), false});
  if (s.invert)
    for (Span& sp : spans) sp.match = !sp.match;

  std::vector<Span> kept;
  bool previous_match = false;
  switch (s.behavior) {
    case Behavior::Removed:
    case Behavior::Isolated:
      kept.swap(spans);
      break;
    case Behavior::MergedWithPrevious:
      for (const Span& sp : spans) {
        if (sp.match && !previous_match && !kept.empty()) kept.back().e = sp.e;
        else kept.push_back({sp.b, sp.e, false});
        previous_match = sp.match;
      }
      break;
    case Behavior::MergedWithNext:
      for (size_t k = spans.size(); k-- > 0;) {
        const Span& sp = spans[k];
        if (sp.match && !previous_match && !kept.empty()) kept.back().b = sp.b;
        else kept.push_back({sp.b, sp.e, false});
        previous_match = sp.match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case Behavior::Contiguous:
      for (const Span& sp : spans) {
        if (sp.match == previous_match && !kept.empty()) kept.back().e = sp.e;
        else kept.push_back({sp.b, sp.e, false});
        previous_match = sp.match;
      }
      break;
  }
  for (const Span& sp : kept) {
    if (s.behavior == Behavior::Removed && sp.match) continue;
    if (sp.e > sp.b)
      out.push_back({uint32_t(in.b + sp.b), uint32_t(in.b + sp.e), in.at_start && sp.b == 0});
  }
}

// Rewrites every span through `f` (text of a span -> new text) into a fresh
// buffer: the steps that change text, not just cut it.
template <typename F>
void rewrite(Words& w, F&& f) {
  std::string text;
  text.reserve(w.text.size() + w.text.size() / 4);
  for (Words::Span& sp : w.spans) {
    const std::string piece = f(w.word(sp), sp.at_start);
    sp.b = uint32_t(text.size());
    text += piece;
    sp.e = uint32_t(text.size());
  }
  w.text.swap(text);
}

}  // namespace

Pipeline::Pipeline(const Json& p) {
  if (const Json* n = field(p, "normalizer")) normalizers_ = parse_normalizer(*n);
  if (const Json* pre = field(p, "pre_tokenizer")) pre_tokenizers_ = parse_pre_tokenizer(*pre, byte_level_);
  if (const Json* d = field(p, "decoder")) decoders_ = parse_decoder(*d);
}

Pipeline::~Pipeline() = default;

std::string Pipeline::normalize(std::string_view text) const {
  std::string s(text);
  std::vector<std::pair<size_t, size_t>> m;
  for (const auto& st : normalizers_) {
    switch (st->kind) {
      case Step::NPrepend:
        if (!s.empty()) s = st->text + s;
        break;
      case Step::NReplace: {
        st->regex->find_all(s, m);
        std::string r;
        size_t prev = 0;
        for (auto [b, e] : m) r.append(s, prev, b - prev), r += st->content, prev = e;
        r.append(s, prev);
        s = std::move(r);
        break;
      }
      case Step::NUnicode:
        s = unicode_normalize(s, st->form);
        break;
      case Step::NStrip: {
        size_t b = 0, e = s.size();
        // Strip Unicode whitespace, a character at a time.
        if (st->left)
          while (b < e) {
            size_t i = b;
            if (!is_unicode_space(utf8_next(s, i))) break;
            b = i;
          }
        if (st->right)
          while (e > b) {
            size_t k = e - 1;
            while (k > b && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
            size_t i = k;
            if (!is_unicode_space(utf8_next(s, i))) break;
            e = k;
          }
        s = s.substr(b, e - b);
        break;
      }
      default:
        break;
    }
  }
  return s;
}

void Pipeline::pre_tokenize(std::string_view segment, bool at_start, Words& w) const {
  if (segment.size() >= (size_t(1) << 32)) throw Error("a text segment of 4 GiB or more cannot be tokenized");
  w.text.assign(segment);
  w.spans.assign(1, Words::Span{0, uint32_t(segment.size()), at_start});
  w.raw_bytes = false;
  if (segment.empty()) w.spans.clear();
  std::vector<Words::Span> next;
  std::vector<std::pair<size_t, size_t>> scratch;
  auto map_bytes = [](std::string_view word, bool) {
    std::string mapped;
    mapped.reserve(word.size() * 2);
    for (unsigned char c : word) mapped += byte_to_unicode(c);
    return mapped;
  };
  for (const auto& st : pre_tokenizers_) {
    // A step after ByteLevel sees mapped characters, as in HF.
    if (w.raw_bytes) {
      rewrite(w, map_bytes);
      w.raw_bytes = false;
    }
    next.clear();
    switch (st->kind) {
      case Step::PByteLevel:
        if (st->add_prefix_space)
          rewrite(w, [](std::string_view word, bool) {
            std::string out;
            if (word.empty() || word[0] != ' ') out += ' ';
            out += word;
            return out;
          });
        if (st->use_regex) {
          for (const Words::Span& sp : w.spans) split_by(*st, w.text, sp, next, scratch);
          w.spans.swap(next);
        }
        w.raw_bytes = true;  // mapped lazily, per distinct word
        break;
      case Step::PMetaspace: {
        rewrite(w, [&](std::string_view word, bool first) {
          std::string t = replace_all(word, " ", st->content);
          const bool prepend = st->prepend == Prepend::Always || (st->prepend == Prepend::First && first);
          if (prepend && t.compare(0, st->content.size(), st->content) != 0) t = st->content + t;
          return t;
        });
        if (!st->split) break;
        // Split before each replacement character (MergedWithNext).
        const std::string& t = w.text;
        const size_t rl = st->content.size();
        for (const Words::Span& sp : w.spans) {
          size_t b = sp.b;
          // A match inside the first replacement character is impossible:
          // its continuation bytes never equal its lead byte.
          for (size_t i = sp.b + 1; i <= sp.e; ++i) {
            if (i == sp.e || t.compare(i, rl, st->content) == 0) {
              if (i > b) next.push_back({uint32_t(b), uint32_t(i), sp.at_start && b == sp.b});
              b = i;
            }
          }
        }
        w.spans.swap(next);
        break;
      }
      default:
        for (const Words::Span& sp : w.spans) split_by(*st, w.text, sp, next, scratch);
        w.spans.swap(next);
        break;
    }
  }
}

std::string Pipeline::decode(std::vector<std::string> tokens) const {
  for (const auto& st : decoders_) {
    switch (st->kind) {
      case Step::DByteLevel: {
        std::string bytes;
        for (const std::string& t : tokens) {
          std::string mine;
          bool ok = true;
          for (size_t i = 0; i < t.size() && ok;) {
            if (!utf8_valid_len(t, i)) {
              ok = false;
              break;
            }
            const int b = unicode_to_byte(utf8_next(t, i));
            if (b < 0) ok = false;
            else mine += char(b);
          }
          bytes += ok ? mine : t;  // a token with unmapped characters stays as it is
        }
        tokens.assign(1, utf8_lossy(bytes));
        break;
      }
      case Step::DReplace:
        for (std::string& t : tokens) t = replace_all(t, st->text, st->content);
        break;
      case Step::DByteFallback: {
        std::vector<std::string> out;
        std::string pending;
        size_t n_pending = 0;
        auto flush = [&] {
          if (!n_pending) return;
          if (utf8_lossy(pending) == pending) {
            out.push_back(pending);
          } else {
            for (size_t k = 0; k < n_pending; ++k) out.push_back("\xEF\xBF\xBD");
          }
          pending.clear();
          n_pending = 0;
        };
        for (std::string& t : tokens) {
          if (const int byte = byte_token_value(t); byte >= 0) {
            pending += char(byte);
            ++n_pending;
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        tokens.swap(out);
        break;
      }
      case Step::DFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case Step::DStrip:
        for (std::string& t : tokens) {
          size_t b = 0, e = t.size();
          for (size_t k = 0; k < st->start && t.compare(b, st->content.size(), st->content) == 0; ++k)
            b += st->content.size();
          for (size_t k = 0; k < st->stop && e >= b + st->content.size() &&
                             t.compare(e - st->content.size(), st->content.size(), st->content) == 0;
               ++k)
            e -= st->content.size();
          t = t.substr(b, e - b);
        }
        break;
      case Step::DMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i)
          tokens[i] = replace_all(tokens[i], st->content,
                                  i == 0 && st->prepend != Prepend::Never ? "" : " ");
        break;
      default:
        break;
    }
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace tern::tok
