// The tokenizer follows jinja2.lexer.Lexer.tokeniter rule for rule, so text
// between tags keeps or loses exactly the whitespace jinja2 keeps or loses.
#include "lexer.h"

#include <algorithm>
#include <charconv>

#include "tern/error.h"
#include "value.h"

namespace tern::chat::detail {

void syntax_error(int line, int col, const std::string& msg) {
  throw Error("chat template: " + std::to_string(line) + ":" + std::to_string(col) + ": " + msg);
}

namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  explicit Lexer(std::string_view source) {
    // newline_re.split(source): \r\n, \r and \n all become \n; a trailing
    // newline is dropped.
    src_.reserve(source.size());
    for (size_t k = 0; k < source.size(); ++k) {
      if (source[k] == '\r') {
        src_ += '\n';
        if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
      } else {
        src_ += source[k];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    line_starts_.push_back(0);
    for (size_t k = 0; k < src_.size(); ++k)
      if (src_[k] == '\n') line_starts_.push_back(k + 1);
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t idx = find_tag(pos_);
      if (idx == std::string::npos) {
        emit_data(src_.substr(pos_), pos_);
        break;
      }
      std::string text = src_.substr(pos_, idx - pos_);
      size_t text_at = pos_;
      char kind = src_[idx + 1];
      char sign = idx + 2 < src_.size() && (src_[idx + 2] == '-' || src_[idx + 2] == '+') ? src_[idx + 2] : 0;
      size_t raw_end = kind == '%' ? match_raw_begin(idx) : 0;
      strip_text(text, sign, kind != '{');
      emit_data(std::move(text), text_at);
      if (raw_end) {
        raw_block(idx, raw_end);
        continue;
      }
      pos_ = idx + 2 + (sign ? 1 : 0);
      line_starting_ = false;
      if (kind == '#')
        comment(idx);
      else
        tag(idx, kind == '%');
    }
    Token eof{Tok::Eof, "", 0, 0, 0, 0};
    locate(eof, src_.size());
    out_.push_back(eof);
    return std::move(out_);
  }

 private:
  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> out_;
  size_t pos_ = 0;
  bool line_starting_ = true;

  void locate(Token& t, size_t at) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), at);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    t.line = static_cast<int>(line);
    t.col = static_cast<int>(at - line_starts_[line - 1] + 1);
  }
  [[noreturn]] void fail(size_t at, const std::string& msg) const {
    Token t{};
    locate(t, at);
    syntax_error(t.line, t.col, msg);
  }
  void push(Tok type, std::string text, size_t at) {
    Token t{type, std::move(text)};
    locate(t, at);
    out_.push_back(std::move(t));
  }
  void emit_data(std::string text, size_t at) {
    if (!text.empty()) push(Tok::Data, std::move(text), at);
  }

  size_t find_tag(size_t from) const {
    for (size_t k = src_.find('{', from); k != std::string::npos; k = src_.find('{', k + 1))
      if (k + 1 < src_.size() && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) return k;
    return std::string::npos;
  }

  // Length in bytes of the (Unicode) whitespace run at `at`, as \s* matches.
  size_t ws_len(size_t at) const {
    size_t k = at;
    while (k < src_.size()) {
      unsigned char c = static_cast<unsigned char>(src_[k]);
      if (c < 0x80) {
        if (!py_isspace(c)) break;
        ++k;
        continue;
      }
      size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      std::u32string u = decode_utf8(std::string_view(src_).substr(k, std::min(n, src_.size() - k)));
      if (u.empty() || !py_isspace(u[0])) break;
      k += n;
    }
    return k - at;
  }

  // The root rule's OptionalLStrip: `-` strips all trailing whitespace, else
  // lstrip_blocks drops spaces and tabs between a line start and a block or
  // comment tag.
  void strip_text(std::string& text, char sign, bool block_or_comment) const {
    if (sign == '-') {
      std::u32string u = decode_utf8(text);
      size_t e = u.size();
      while (e > 0 && py_isspace(u[e - 1])) --e;
      text = encode_utf8(std::u32string_view(u).substr(0, e));
    } else if (sign != '+' && block_or_comment) {
      size_t nl = text.rfind('\n');
      size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) &&
          text.find_first_not_of(" \t", l_pos) == std::string::npos)
        text.resize(l_pos);
    }
  }

  // {%[-+]?\s*raw\s*(-%}\s*|%}) at `at`: returns the end offset, or 0.
  size_t match_raw_begin(size_t at) const {
    size_t k = at + 2;
    if (k < src_.size() && (src_[k] == '-' || src_[k] == '+')) ++k;
    k += ws_len(k);
    if (src_.compare(k, 3, "raw") != 0) return 0;
    k += 3;
    k += ws_len(k);
    if (src_.compare(k, 3, "-%}") == 0) return k + 3 + ws_len(k + 3);
    if (src_.compare(k, 2, "%}") == 0) return k + 2;
    return 0;
  }

  void raw_block(size_t begin, size_t body) {
    line_starting_ = src_[body - 1] == '\n';
    for (size_t k = src_.find("{%", body); k != std::string::npos; k = src_.find("{%", k + 1)) {
      size_t j = k + 2;
      char sign = j < src_.size() && (src_[j] == '-' || src_[j] == '+') ? src_[j] : 0;
      if (sign) ++j;
      j += ws_len(j);
      if (src_.compare(j, 6, "endraw") != 0) continue;
      j += 6;
      j += ws_len(j);
      size_t end;
      if (src_.compare(j, 3, "+%}") == 0) {
        end = j + 3;
      } else if (src_.compare(j, 3, "-%}") == 0) {
        end = j + 3 + ws_len(j + 3);
      } else if (src_.compare(j, 2, "%}") == 0) {
        end = j + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      std::string text = src_.substr(body, k - body);
      strip_text(text, sign, true);
      emit_data(std::move(text), body);
      pos_ = end;
      line_starting_ = src_[end - 1] == '\n';
      return;
    }
    fail(begin, "missing end of raw directive");
  }

  void comment(size_t begin) {
    size_t e = src_.find("#}", pos_);
    if (e == std::string::npos) fail(begin, "missing end of comment tag");
    size_t end = e + 2;
    if (e > pos_ && src_[e - 1] == '-') {
      end += ws_len(end);
    } else if (e > pos_ && src_[e - 1] == '+') {
      // no trim_blocks
    } else if (end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    pos_ = end;
    line_starting_ = src_[end - 1] == '\n';
  }

  void tag(size_t begin, bool block) {
    push(block ? Tok::BlockBegin : Tok::VarBegin, "", begin);
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size())
        fail(begin, block ? "unclosed tag: expected '%}'" : "unclosed tag: expected '}}'");
      if (balance.empty()) {
        size_t end = 0;
        if (block) {
          if (src_.compare(pos_, 3, "+%}") == 0) {
            end = pos_ + 3;
          } else if (src_.compare(pos_, 3, "-%}") == 0) {
            end = pos_ + 3 + ws_len(pos_ + 3);
          } else if (src_.compare(pos_, 2, "%}") == 0) {
            end = pos_ + 2;
            if (end < src_.size() && src_[end] == '\n') ++end;
          }
        } else {
          if (src_.compare(pos_, 3, "-}}") == 0)
            end = pos_ + 3 + ws_len(pos_ + 3);
          else if (src_.compare(pos_, 2, "}}") == 0)
            end = pos_ + 2;
        }
        if (end) {
          push(block ? Tok::BlockEnd : Tok::VarEnd, "", pos_);
          pos_ = end;
          line_starting_ = src_[end - 1] == '\n';
          return;
        }
      }
      if (size_t w = ws_len(pos_)) {
        pos_ += w;
        continue;
      }
      char c = src_[pos_];
      if (is_digit(c)) {
        number();
      } else if (is_name_start(c)) {
        size_t e = pos_;
        while (e < src_.size() && is_name_char(src_[e])) ++e;
        push(Tok::Name, src_.substr(pos_, e - pos_), pos_);
        pos_ = e;
      } else if (c == '\'' || c == '"') {
        string(c);
      } else {
        op(balance);
      }
    }
  }

  // Digits with optional single underscores between them, as (\d+_)*\d+.
  size_t digits(size_t k, bool (*ok)(char)) const {
    size_t e = k;
    if (e >= src_.size() || !ok(src_[e])) return 0;
    while (e < src_.size()) {
      if (ok(src_[e])) {
        ++e;
      } else if (src_[e] == '_' && e + 1 < src_.size() && ok(src_[e + 1])) {
        ++e;
      } else {
        break;
      }
    }
    return e - k;
  }

  void number() {
    size_t start = pos_;
    auto dec = [](char c) { return c >= '0' && c <= '9'; };
    // float_re, tried before integer_re; not after a '.'
    if (start == 0 || src_[start - 1] != '.') {
      size_t k = start + digits(start, dec);
      size_t frac = 0, exp_end = 0;
      if (k < src_.size() && src_[k] == '.' && digits(k + 1, dec)) frac = k + 1 + digits(k + 1, dec);
      size_t e = frac ? frac : k;
      if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
        size_t x = e + 1;
        if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
        if (size_t n = digits(x, dec)) exp_end = x + n;
      }
      size_t end = exp_end ? exp_end : frac;
      if (end) {
        std::string s;
        for (size_t j = start; j < end; ++j)
          if (src_[j] != '_') s += src_[j];
        double d = 0;
        std::from_chars(s.data(), s.data() + s.size(), d);
        Token t{Tok::Float, s};
        t.fval = d;
        locate(t, start);
        out_.push_back(std::move(t));
        pos_ = end;
        return;
      }
    }
    int base = 10;
    size_t k = start, end = 0;
    char p = start + 1 < src_.size() ? static_cast<char>(src_[start + 1] | 0x20) : 0;
    auto bin = [](char c) { return c == '0' || c == '1'; };
    auto oct = [](char c) { return c >= '0' && c <= '7'; };
    auto hex = [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    };
    auto prefixed = [&](bool (*ok)(char)) -> size_t {
      // 0b(_?[01])+ etc.
      size_t e = start + 2;
      size_t n = 0;
      while (e < src_.size()) {
        size_t f = e;
        if (src_[f] == '_') ++f;
        if (f < src_.size() && ok(src_[f])) {
          e = f + 1;
          ++n;
        } else {
          break;
        }
      }
      return n ? e : 0;
    };
    if (src_[start] == '0' && p == 'b' && (end = prefixed(bin))) {
      base = 2;
    } else if (src_[start] == '0' && p == 'o' && (end = prefixed(oct))) {
      base = 8;
    } else if (src_[start] == '0' && p == 'x' && (end = prefixed(hex))) {
      base = 16;
    } else if (src_[start] != '0') {
      end = start + digits(start, dec);
    } else {
      // 0(_?0)*
      end = start + 1;
      while (end < src_.size()) {
        size_t f = end;
        if (src_[f] == '_') ++f;
        if (f < src_.size() && src_[f] == '0')
          end = f + 1;
        else
          break;
      }
    }
    std::string s;
    for (k = base == 10 ? start : start + 2; k < end; ++k)
      if (src_[k] != '_') s += src_[k];
    int64_t v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (r.ec != std::errc()) fail(start, "integer literal too large");
    Token t{Tok::Int, src_.substr(start, end - start)};
    t.ival = v;
    locate(t, start);
    out_.push_back(std::move(t));
    pos_ = end;
  }

  static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = static_cast<char>(c | 0x20);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }

  // Python's unicode-escape decoding of the literal's body (after jinja2
  // encodes it with backslashreplace).
  void string(char quote) {
    size_t start = pos_, k = pos_ + 1;
    while (k < src_.size() && src_[k] != quote) k += src_[k] == '\\' ? 2 : 1;
    if (k >= src_.size()) fail(start, "unterminated string literal");
    std::u32string body = decode_utf8(std::string_view(src_).substr(start + 1, k - start - 1));
    std::string out;
    for (size_t i = 0; i < body.size(); ++i) {
      char32_t c = body[i];
      if (c != '\\') {
        append_utf8(out, c);
        continue;
      }
      char32_t e = body[++i];
      auto hexn = [&](int n) -> char32_t {
        char32_t v = 0;
        for (int j = 0; j < n; ++j) {
          int h = i + 1 < body.size() && body[i + 1] < 0x80 ? hexval(static_cast<char>(body[i + 1])) : -1;
          if (h < 0) fail(start, "truncated escape in string literal");
          v = v * 16 + h;
          ++i;
        }
        return v;
      };
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': append_utf8(out, hexn(2)); break;
        case 'u': append_utf8(out, hexn(4)); break;
        case 'U': {
          char32_t v = hexn(8);
          if (v > 0x10FFFF) fail(start, "illegal Unicode character in string literal");
          append_utf8(out, v);
          break;
        }
        case 'N': fail(start, "\\N{...} escapes are not supported");
        default:
          if (e >= '0' && e <= '7') {
            char32_t v = e - '0';
            for (int j = 0; j < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++j)
              v = v * 8 + (body[++i] - '0');
            append_utf8(out, v);
          } else if (e >= 0x80) {
            // backslashreplace turned the character into \xNN / \uNNNN /
            // \UNNNNNNNN, whose backslash the literal's backslash escapes.
            char buf[16];
            if (e <= 0xFF)
              std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(e));
            else if (e <= 0xFFFF)
              std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(e));
            else
              std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(e));
            out += buf;
          } else {
            out += '\\';
            append_utf8(out, e);
          }
      }
    }
    Token t{Tok::String, std::move(out)};
    locate(t, start);
    out_.push_back(std::move(t));
    pos_ = k + 1;
  }

  void op(std::vector<char>& balance) {
    static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* o : two)
      if (src_.compare(pos_, 2, o) == 0) {
        push(Tok::Op, o, pos_);
        pos_ += 2;
        return;
      }
    char c = src_[pos_];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      std::string shown;
      for (char32_t u : decode_utf8(std::string_view(src_).substr(pos_, 4)).substr(0, 1)) append_utf8(shown, u);
      fail(pos_, "unexpected char '" + shown + "'");
    }
    if (c == '(' || c == '[' || c == '{') {
      if (balance.size() > 256) fail(pos_, "brackets nested too deeply");
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail(pos_, std::string("unexpected '") + c + "'");
      if (balance.back() != c)
        fail(pos_, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
      balance.pop_back();
    }
    push(Tok::Op, std::string(1, c), pos_);
    ++pos_;
  }
};

}  // namespace

std::vector<Token> lex(std::string_view source) { return Lexer(source).run(); }

}  // namespace tern::chat::detail
