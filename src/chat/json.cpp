// JSON in (template variables given as JSON text) and out (the tojson
// filter, as Python's json.dumps writes it).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "value.h"

namespace tern::chat::detail {

namespace {
struct JsonParser {
  std::string_view t;
  std::string_view what;
  size_t p = 0;
  int depth = 0;

  [[noreturn]] void fail(const std::string& msg) {
    throw Error("chat template: " + std::string(what) + ": invalid JSON at offset " + std::to_string(p) + ": " +
                msg);
  }
  void ws() {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\t' || t[p] == '\n' || t[p] == '\r')) ++p;
  }
  bool lit(std::string_view w) {
    if (t.substr(p, w.size()) == w) {
      p += w.size();
      return true;
    }
    return false;
  }
  unsigned hex4() {
    if (p + 4 > t.size()) fail("bad \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = t[p++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else fail("bad \\u escape");
    }
    return v;
  }
  std::string string() {
    ++p;  // opening quote
    std::string out;
    while (true) {
      if (p >= t.size()) fail("unterminated string");
      char c = t[p++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p >= t.size()) fail("unterminated string");
      char e = t[p++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          char32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF && t.substr(p, 2) == "\\u") {
            size_t save = p;
            p += 2;
            unsigned lo = hex4();
            if (lo >= 0xDC00 && lo <= 0xDFFF)
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            else
              p = save;
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  Value number() {
    size_t b = p;
    bool is_float = false;
    if (p < t.size() && t[p] == '-') ++p;
    while (p < t.size() && (std::isdigit(static_cast<unsigned char>(t[p])) || t[p] == '.' || t[p] == 'e' ||
                            t[p] == 'E' || t[p] == '+' || t[p] == '-')) {
      if (t[p] == '.' || t[p] == 'e' || t[p] == 'E') is_float = true;
      ++p;
    }
    std::string_view num = t.substr(b, p - b);
    if (!is_float) {
      int64_t v = 0;
      auto r = std::from_chars(num.data(), num.data() + num.size(), v);
      if (r.ec == std::errc() && r.ptr == num.data() + num.size()) return Value::integer(v);
    }
    double d = 0;
    auto r = std::from_chars(num.data(), num.data() + num.size(), d);
    if (r.ec != std::errc() || r.ptr != num.data() + num.size()) fail("bad number");
    return Value::real(d);
  }
  Value value() {
    if (++depth > 256) fail("nested too deeply");
    ws();
    if (p >= t.size()) fail("unexpected end");
    Value out;
    char c = t[p];
    if (c == '{') {
      ++p;
      DictData d;
      ws();
      if (p < t.size() && t[p] == '}') {
        ++p;
      } else {
        while (true) {
          ws();
          if (p >= t.size() || t[p] != '"') fail("expected a key");
          std::string k = string();
          ws();
          if (p >= t.size() || t[p] != ':') fail("expected ':'");
          ++p;
          Value v = value();
          d.set(Value::str(std::move(k)), std::move(v));
          ws();
          if (p < t.size() && t[p] == ',') {
            ++p;
            continue;
          }
          if (p < t.size() && t[p] == '}') {
            ++p;
            break;
          }
          fail("expected ',' or '}'");
        }
      }
      out = Value::make_dict(std::move(d));
    } else if (c == '[') {
      ++p;
      List l;
      ws();
      if (p < t.size() && t[p] == ']') {
        ++p;
      } else {
        while (true) {
          l.push_back(value());
          ws();
          if (p < t.size() && t[p] == ',') {
            ++p;
            continue;
          }
          if (p < t.size() && t[p] == ']') {
            ++p;
            break;
          }
          fail("expected ',' or ']'");
        }
      }
      out = Value::make_list(std::move(l));
    } else if (c == '"') {
      out = Value::str(string());
    } else if (lit("true")) {
      out = Value::boolean(true);
    } else if (lit("false")) {
      out = Value::boolean(false);
    } else if (lit("null")) {
      out = Value::none();
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      out = number();
    } else {
      fail("unexpected character");
    }
    --depth;
    return out;
  }
};

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  for (char32_t c : decode_utf8(s)) {
    if (out.size() > kMaxString) throw_eval("string too long");
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
          if (c > 0xFFFF) {
            char32_t v = c - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                          static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          }
          out += buf;
        } else {
          append_utf8(out, c);
        }
    }
  }
  out += '"';
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

void json_encode(std::string& out, const Value& v, const JsonStyle& st, int level) {
  DepthGuard guard;
  // The output is checked as it grows: indents and separators can be long.
  if (out.size() > kMaxString) throw_eval("string too long");
  auto newline = [&](int lvl) {
    append_bounded(out, "\n");
    for (int k = 0; k < lvl; ++k) append_bounded(out, st.indent);
  };
  switch (v.kind) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.b ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.i); return;
    case Value::Kind::Float: out += json_float(v.f); return;
    case Value::Kind::String: json_string(out, v.text(), st.ensure_ascii); return;
    case Value::Kind::List: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      if (st.has_indent) newline(level + 1);
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) {
          append_bounded(out, st.item_sep);
          if (st.has_indent) newline(level + 1);
        }
        json_encode(out, (*v.list)[k], st, level + 1);
      }
      if (st.has_indent) newline(level);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : v.dict->items) items.push_back(&kv);
      if (st.sort_keys)
        std::stable_sort(items.begin(), items.end(),
                         [](auto* x, auto* y) { return py_compare(x->first, y->first) < 0; });
      out += '{';
      if (st.has_indent) newline(level + 1);
      bool first = true;
      for (const auto* kv : items) {
        if (!first) {
          append_bounded(out, st.item_sep);
          if (st.has_indent) newline(level + 1);
        }
        first = false;
        const Value& k = kv->first;
        switch (k.kind) {
          case Value::Kind::String: json_string(out, k.text(), st.ensure_ascii); break;
          case Value::Kind::Int: out += '"' + std::to_string(k.i) + '"'; break;
          case Value::Kind::Bool: out += k.b ? "\"true\"" : "\"false\""; break;
          case Value::Kind::None: out += "\"null\""; break;
          case Value::Kind::Float: out += '"' + json_float(k.f) + '"'; break;
          default:
            throw_eval(std::string("keys must be str, int, float, bool or None, not ") + type_name(k));
        }
        append_bounded(out, st.key_sep);
        json_encode(out, kv->second, st, level + 1);
      }
      if (st.has_indent) newline(level);
      out += '}';
      return;
    }
    default:
      throw_eval(std::string("Object of type ") + type_name(v) + " is not JSON serializable");
  }
}
}  // namespace

Value parse_json(std::string_view text, std::string_view what) {
  JsonParser p{text, what};
  Value v = p.value();
  p.ws();
  if (p.p != text.size()) p.fail("trailing characters");
  return v;
}

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  json_encode(out, v, style, 0);
  return out;
}

}  // namespace tern::chat::detail
