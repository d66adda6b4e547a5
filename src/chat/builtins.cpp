// jinja2's built-in filters and tests that chat templates use, transformers'
// tojson and globals, and the str/dict/list methods the sandbox allows.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <initializer_list>

#include "interp.h"

namespace tern::chat::detail {

namespace {

// ------------------------------------------------------------ arguments

struct Params {
  const char* fn;
  CallArgs& a;
  // Checks that at most `names.size()` arguments came, each once.
  Params(const char* f, CallArgs& args, std::initializer_list<const char*> names) : fn(f), a(args), names_(names) {
    if (a.pos.size() > names_.size())
      throw_eval(std::string(fn) + "() takes at most " + std::to_string(names_.size()) + " arguments (" +
                 std::to_string(a.pos.size()) + " given)");
    for (const auto& kv : a.kw) {
      const std::string& k = kv.first;
      auto it = std::find_if(names_.begin(), names_.end(), [&](const char* n) { return k == n; });
      if (it == names_.end()) throw_eval(std::string(fn) + "() got an unexpected keyword argument '" + k + "'");
      if (static_cast<size_t>(it - names_.begin()) < a.pos.size())
        throw_eval(std::string(fn) + "() got multiple values for argument '" + k + "'");
    }
  }
  const Value* get(size_t idx) const {
    if (idx < a.pos.size()) return &a.pos[idx];
    for (const auto& [k, v] : a.kw)
      if (k == names_[idx]) return &v;
    return nullptr;
  }
  Value get_or(size_t idx, Value def) const {
    const Value* v = get(idx);
    return v ? *v : def;
  }
  const Value& need(size_t idx) const {
    const Value* v = get(idx);
    if (!v) throw_eval(std::string(fn) + "() missing required argument '" + names_[idx] + "'");
    return *v;
  }

 private:
  std::vector<const char*> names_;
};

const std::string& need_str(const Value& v, const char* what) {
  if (!v.is_str()) throw_eval(std::string(what) + " must be str, not " + type_name(v));
  return v.text();
}

int64_t need_int(const Value& v, const char* what) {
  if (!v.is_integral()) throw_eval(std::string(what) + " must be an integer, not " + type_name(v));
  return v.i;
}

// ----------------------------------------------------------- helpers

Value attribute_of(Interp& in, const Value& item, const Value& attr) {
  spend(1);
  if (attr.is_integral()) return in.getitem(item, attr);
  std::string a = to_str(attr);
  Value v = item;
  size_t b = 0;
  while (true) {
    size_t e = a.find('.', b);
    std::string part = a.substr(b, e == std::string::npos ? std::string::npos : e - b);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    Value key = Value::str(part);
    if (digits) {
      int64_t i = 0;
      auto r = std::from_chars(part.data(), part.data() + part.size(), i);
      if (r.ec == std::errc()) key = Value::integer(i);
    }
    v = in.getitem(v, key);
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return v;
}

// sort/min/max/unique ignore case unless case_sensitive: strings compare
// lowercased.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_str()) return Value::str(py_lower(v.text()));
  return v;
}

// The stable order that sorts `keys` (Python's sorted(reverse=rev) is
// stable both ways); the indices move, not the values.
std::vector<size_t> sorted_order(const List& keys, bool rev) {
  std::vector<size_t> order(keys.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    int c = py_compare(keys[x], keys[y]);
    return rev ? c > 0 : c < 0;
  });
  return order;
}

std::vector<std::u32string> splitlines(const std::u32string& s, bool keepends) {
  std::vector<std::u32string> out;
  size_t b = 0, k = 0;
  while (k < s.size()) {
    char32_t c = s[k];
    bool br = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
              c == 0x2028 || c == 0x2029;
    if (!br) {
      ++k;
      continue;
    }
    size_t e = k + 1;
    if (c == '\r' && e < s.size() && s[e] == '\n') ++e;
    check_list_item(out.size() + 1);
    out.push_back(s.substr(b, (keepends ? e : k) - b));
    b = k = e;
  }
  if (b < s.size()) out.push_back(s.substr(b));
  return out;
}

// The result is checked against kMaxString as it grows, never built whole
// first (a short string can ask for a huge one).
std::string py_replace(const std::string& s, const std::string& old, const std::string& rep, int64_t count) {
  if (count < 0) count = INT64_MAX;
  std::string out;
  const std::string_view sv(s);
  if (old.empty()) {
    std::u32string u = decode_utf8(s);
    int64_t n = 0;
    std::string ch;
    for (size_t k = 0; k <= u.size(); ++k) {
      if (n < count) {
        append_bounded(out, rep);
        ++n;
      }
      if (k < u.size()) {
        ch.clear();
        append_utf8(ch, u[k]);
        append_bounded(out, ch);
      }
    }
    return out;
  }
  size_t b = 0;
  int64_t n = 0;
  while (n < count) {
    size_t f = find_bytes(s, old, b);
    if (f == std::string::npos) break;
    spend(1);  // a find and two appends per match
    append_bounded(out, sv.substr(b, f - b));
    append_bounded(out, rep);
    b = f + old.size();
    ++n;
  }
  append_bounded(out, sv.substr(b));
  return out;
}

List py_split(const std::string& s, const Value& sep, int64_t maxsplit, bool from_right) {
  List out;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep.is_none() || sep.is_undefined()) {
    std::u32string u = decode_utf8(s);
    std::vector<std::u32string> parts;
    if (!from_right) {
      size_t k = 0;
      while (true) {
        while (k < u.size() && py_isspace(u[k])) ++k;
        if (k >= u.size()) break;
        if (static_cast<int64_t>(parts.size()) == maxsplit) {
          size_t e = u.size();
          while (e > k && py_isspace(u[e - 1])) --e;
          check_list_item(parts.size() + 1);
          parts.push_back(u.substr(k, e - k));
          break;
        }
        size_t e = k;
        while (e < u.size() && !py_isspace(u[e])) ++e;
        check_list_item(parts.size() + 1);
        parts.push_back(u.substr(k, e - k));
        k = e;
      }
    } else {
      size_t k = u.size();
      while (true) {
        while (k > 0 && py_isspace(u[k - 1])) --k;
        if (k == 0) break;
        if (static_cast<int64_t>(parts.size()) == maxsplit) {
          size_t b = 0;
          while (b < k && py_isspace(u[b])) ++b;
          check_list_item(parts.size() + 1);
          parts.push_back(u.substr(b, k - b));
          break;
        }
        size_t b = k;
        while (b > 0 && !py_isspace(u[b - 1])) --b;
        check_list_item(parts.size() + 1);
        parts.push_back(u.substr(b, k - b));
        k = b;
      }
      std::reverse(parts.begin(), parts.end());
    }
    for (auto& p : parts) out.push_back(Value::str(encode_utf8(p)));
    return out;
  }
  const std::string& d = need_str(sep, "separator");
  if (d.empty()) throw_eval("empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t b = 0;
    while (static_cast<int64_t>(parts.size()) < maxsplit) {
      size_t f = find_bytes(s, d, b);
      if (f == std::string::npos) break;
      check_list_item(parts.size() + 1);
      parts.push_back(s.substr(b, f - b));
      b = f + d.size();
    }
    check_list_item(parts.size() + 1);
    parts.push_back(s.substr(b));
  } else {
    size_t e = s.size();
    int64_t n = 0;
    while (n < maxsplit && e >= d.size()) {
      size_t f = rfind_bytes(std::string_view(s).substr(0, e), d);
      if (f == std::string::npos) break;
      check_list_item(parts.size() + 1);
      parts.push_back(s.substr(f + d.size(), e - f - d.size()));
      e = f;
      ++n;
    }
    check_list_item(parts.size() + 1);
    parts.push_back(s.substr(0, e));
    std::reverse(parts.begin(), parts.end());
  }
  for (auto& p : parts) out.push_back(Value::str(std::move(p)));
  return out;
}

bool parse_py_int(std::string_view s, int base, int64_t& out) {
  std::u32string u = decode_utf8(s);
  size_t b = 0, e = u.size();
  while (b < e && py_isspace(u[b])) ++b;
  while (e > b && py_isspace(u[e - 1])) --e;
  std::string t;
  bool neg = false;
  if (b < e && (u[b] == '+' || u[b] == '-')) neg = u[b++] == '-';
  for (size_t k = b; k < e; ++k) {
    if (u[k] == '_' && k > b && k + 1 < e && u[k - 1] != '_') continue;
    if (u[k] >= 0x80) return false;
    t += static_cast<char>(u[k]);
  }
  if (t.size() > 2 && t[0] == '0') {
    char x = static_cast<char>(t[1] | 0x20);
    if ((base == 16 && x == 'x') || (base == 8 && x == 'o') || (base == 2 && x == 'b')) t.erase(0, 2);
  }
  if (t.empty() || t[0] == '-' || t[0] == '+') return false;  // from_chars takes a second '-'
  uint64_t v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (r.ptr != t.data() + t.size()) return false;
  if (r.ec == std::errc::result_out_of_range) throw_eval("integer overflow");  // Python: a big int
  if (r.ec != std::errc()) return false;
  if (v > (neg ? uint64_t{1} << 63 : uint64_t{INT64_MAX})) throw_eval("integer overflow");
  out = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

bool parse_py_float(std::string_view s, double& out) {
  std::u32string u = decode_utf8(s);
  size_t b = 0, e = u.size();
  while (b < e && py_isspace(u[b])) ++b;
  while (e > b && py_isspace(u[e - 1])) --e;
  std::string t;
  for (size_t k = b; k < e; ++k) {
    if (u[k] >= 0x80) return false;
    if (u[k] != '_') t += static_cast<char>(std::tolower(static_cast<int>(u[k])));
  }
  std::string body = t;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body.erase(0, 1);
  }
  if (body == "inf" || body == "infinity") {
    out = neg ? -INFINITY : INFINITY;
    return true;
  }
  if (body == "nan") {
    out = NAN;
    return true;
  }
  if (body.empty() || !(std::isdigit(static_cast<unsigned char>(body[0])) || body[0] == '.')) return false;
  double v = 0;
  auto r = std::from_chars(body.data(), body.data() + body.size(), v);
  if (r.ec != std::errc() || r.ptr != body.data() + body.size()) return false;
  out = neg ? -v : v;
  return true;
}

bool str_pred(const Value& v, int kind) {
  std::u32string u = decode_utf8(v.text());
  if (u.empty()) return false;
  for (char32_t c : u) {
    bool alpha = (c < 0x80 && std::isalpha(static_cast<int>(c))) || (c >= 0xC0 && c != 0xD7 && c != 0xF7 && c < 0x2000);
    bool digit = c >= '0' && c <= '9';
    bool ok = kind == 0 ? digit : kind == 1 ? alpha : kind == 2 ? (alpha || digit) : py_isspace(c);
    if (!ok) return false;
  }
  return true;
}

int case_state(const std::string& s) {
  // bit 0: has a cased character; bit 1: has an uppercase one; bit 2: has a lowercase one
  int st = 0;
  for (char32_t c : decode_utf8(s)) {
    int cc = char_case(c);
    if (cc & 1) st |= 3;  // lower() changes it: uppercase
    if (cc & 2) st |= 5;  // upper() changes it: lowercase
  }
  return st;
}

// ------------------------------------------------------------- filters

Value f_trim(Interp&, const Value& v, CallArgs& a) {
  Params p("trim", a, {"chars"});
  return Value::str(py_strip(to_str(v), p.get_or(0, Value::none()), true, true));
}
Value f_length(Interp&, const Value& v, CallArgs& a) {
  Params p("length", a, {});
  return Value::integer(py_len(v));
}
Value f_upper(Interp&, const Value& v, CallArgs& a) {
  Params p("upper", a, {});
  return Value::str(py_upper(to_str(v)));
}
Value f_lower(Interp&, const Value& v, CallArgs& a) {
  Params p("lower", a, {});
  return Value::str(py_lower(to_str(v)));
}
Value f_capitalize(Interp&, const Value& v, CallArgs& a) {
  Params p("capitalize", a, {});
  return Value::str(py_capitalize(to_str(v)));
}
Value f_title(Interp&, const Value& v, CallArgs& a) {
  Params p("title", a, {});
  return Value::str(jinja_title(to_str(v)));
}
Value f_default(Interp&, const Value& v, CallArgs& a) {
  Params p("default", a, {"default_value", "boolean"});
  if (v.is_undefined() || (truthy(p.get_or(1, Value::boolean(false))) && !truthy(v)))
    return p.get_or(0, Value::str(""));
  return v;
}
Value f_join(Interp& in, const Value& v, CallArgs& a) {
  Params p("join", a, {"d", "attribute"});
  std::string sep = to_str(p.get_or(0, Value::str("")));
  const Value* attr = p.get(1);
  std::string out;
  bool first = true;
  for (const Value& x : iterate(v)) {
    if (!first) append_bounded(out, sep);
    first = false;
    Value item = attr && !attr->is_none() ? attribute_of(in, x, *attr) : x;
    if (item.is_str())
      append_bounded(out, item.text());
    else
      append_bounded(out, to_str(item));
  }
  return Value::str(std::move(out));
}
Value f_first(Interp&, const Value& v, CallArgs& a) {
  Params p("first", a, {});
  List items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}
Value f_last(Interp&, const Value& v, CallArgs& a) {
  Params p("last", a, {});
  List items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}
Value f_list(Interp&, const Value& v, CallArgs& a) {
  Params p("list", a, {});
  return Value::make_list(iterate(v));
}
Value f_string(Interp&, const Value& v, CallArgs& a) {
  Params p("string", a, {});
  return v.is_str() ? v : Value::str(to_str(v));
}
Value f_tojson(Interp&, const Value& v, CallArgs& a) {
  Params p("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonStyle st;
  st.ensure_ascii = truthy(p.get_or(0, Value::boolean(false)));
  Value indent = p.get_or(1, Value::none());
  if (!indent.is_none()) {
    st.has_indent = true;
    st.item_sep = ",";
    if (indent.is_str())
      st.indent = indent.text();
    else
      st.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(need_int(indent, "indent"), 0, 256)), ' ');
  }
  Value seps = p.get_or(2, Value::none());
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.list->size() != 2) throw_eval("separators must be a pair of strings");
    st.item_sep = need_str((*seps.list)[0], "separator");
    st.key_sep = need_str((*seps.list)[1], "separator");
  }
  st.sort_keys = truthy(p.get_or(3, Value::boolean(false)));
  return Value::str(to_json(v, st));
}
Value f_int(Interp&, const Value& v, CallArgs& a) {
  Params p("int", a, {"default", "base"});
  Value def = p.get_or(0, Value::integer(0));
  int64_t base = need_int(p.get_or(1, Value::integer(10)), "base");
  if (v.is_undefined()) fail_undefined(v);  // int(Undefined) raises
  // int(x), else int(float(x)), else the default: nan gives the default,
  // inf fails as in Python, and what Python would make a big int fails too.
  auto from_float = [&](double d) {
    if (std::isnan(d)) return def;
    if (std::isinf(d)) throw_eval("cannot convert float infinity to integer");
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) throw_eval("integer overflow");
    return Value::integer(static_cast<int64_t>(d));
  };
  if (v.is_integral()) return Value::integer(v.i);
  if (v.kind == Value::Kind::Float) return from_float(v.f);
  if (v.is_str()) {
    int64_t i = 0;
    if (base >= 2 && base <= 36 && parse_py_int(v.text(), static_cast<int>(base), i)) return Value::integer(i);
    double d = 0;
    if (parse_py_float(v.text(), d)) return from_float(d);
  }
  return def;
}
Value f_float(Interp&, const Value& v, CallArgs& a) {
  Params p("float", a, {"default"});
  if (v.is_undefined()) fail_undefined(v);  // float(Undefined) raises
  if (v.is_number()) return Value::real(v.kind == Value::Kind::Float ? v.f : static_cast<double>(v.i));
  double d = 0;
  if (v.is_str() && parse_py_float(v.text(), d)) return Value::real(d);
  return p.get_or(0, Value::real(0.0));
}
Value f_abs(Interp&, const Value& v, CallArgs& a) {
  Params p("abs", a, {});
  if (v.kind == Value::Kind::Float) return Value::real(std::fabs(v.f));
  if (v.is_integral()) return v.i < 0 ? negate(v) : Value::integer(v.i);
  throw_eval(std::string("bad operand type for abs(): '") + type_name(v) + "'");
}
Value f_items(Interp&, const Value& v, CallArgs& a) {
  Params p("items", a, {});
  if (v.is_undefined()) return Value::make_list({});
  if (!v.is_dict()) throw_eval("Can only get item pairs from a mapping.");
  List out;
  for (const auto& [k, x] : v.dict->items) out.push_back(Value::make_list({k, x}, true));
  return Value::make_list(std::move(out));
}
Value f_dictsort(Interp&, const Value& v, CallArgs& a) {
  Params p("dictsort", a, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) throw_eval("dictsort requires a mapping");
  bool cs = truthy(p.get_or(0, Value::boolean(false)));
  std::string by = to_str(p.get_or(1, Value::str("key")));
  if (by != "key" && by != "value") throw_eval("You can only sort by either 'key' or 'value'");
  bool rev = truthy(p.get_or(2, Value::boolean(false)));
  const auto& items = v.dict->items;
  List keys;
  keys.reserve(items.size());
  for (const auto& [k, x] : items) keys.push_back(sort_key(by == "key" ? k : x, cs));
  std::vector<size_t> order = sorted_order(keys, rev);
  List out;
  out.reserve(items.size());
  for (size_t k : order) out.push_back(Value::make_list({items[k].first, items[k].second}, true));
  return Value::make_list(std::move(out));
}
Value f_unique(Interp& in, const Value& v, CallArgs& a) {
  Params p("unique", a, {"case_sensitive", "attribute"});
  bool cs = truthy(p.get_or(0, Value::boolean(false)));
  const Value* attr = p.get(1);
  List out, seen;
  for (const Value& x : iterate(v)) {
    Value key = sort_key(attr && !attr->is_none() ? attribute_of(in, x, *attr) : x, cs);
    if (key.is_dict() || (key.is_list() && !key.tuple))
      throw_eval(std::string("unhashable type: '") + type_name(key) + "'");
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, key); })) {
      seen.push_back(key);
      out.push_back(x);
    }
  }
  return Value::make_list(std::move(out));
}
Value f_sort(Interp& in, const Value& v, CallArgs& a) {
  Params p("sort", a, {"reverse", "case_sensitive", "attribute"});
  bool rev = truthy(p.get_or(0, Value::boolean(false)));
  bool cs = truthy(p.get_or(1, Value::boolean(false)));
  const Value* attr = p.get(2);
  List items = iterate(v);
  List keys;
  keys.reserve(items.size());
  for (const Value& x : items) keys.push_back(sort_key(attr && !attr->is_none() ? attribute_of(in, x, *attr) : x, cs));
  std::vector<size_t> order = sorted_order(keys, rev);
  List out;
  out.reserve(items.size());
  for (size_t k : order) out.push_back(items[k]);
  return Value::make_list(std::move(out));
}
Value min_max(Interp& in, const Value& v, CallArgs& a, bool want_max) {
  Params p(want_max ? "max" : "min", a, {"case_sensitive", "attribute"});
  bool cs = truthy(p.get_or(0, Value::boolean(false)));
  const Value* attr = p.get(1);
  List items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key;
  for (size_t k = 0; k < items.size(); ++k) {
    Value key = sort_key(attr && !attr->is_none() ? attribute_of(in, items[k], *attr) : items[k], cs);
    if (k == 0 || (want_max ? py_compare(key, best_key) > 0 : py_compare(key, best_key) < 0)) {
      best = k;
      best_key = key;
    }
  }
  return items[best];
}
Value f_min(Interp& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false); }
Value f_max(Interp& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true); }
Value f_sum(Interp& in, const Value& v, CallArgs& a) {
  Params p("sum", a, {"attribute", "start"});
  const Value* attr = p.get(0);
  Value total = p.get_or(1, Value::integer(0));
  for (const Value& x : iterate(v))
    total = binary(BinOp::Add, total, attr && !attr->is_none() ? attribute_of(in, x, *attr) : x);
  return total;
}
Value f_reverse(Interp&, const Value& v, CallArgs& a) {
  Params p("reverse", a, {});
  if (v.is_str()) {
    std::u32string u = decode_utf8(v.text());
    std::reverse(u.begin(), u.end());
    return Value::str(encode_utf8(u));
  }
  List items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::make_list(std::move(items));
}
Value f_replace(Interp&, const Value& v, CallArgs& a) {
  Params p("replace", a, {"old", "new", "count"});
  Value count = p.get_or(2, Value::none());
  return Value::str(py_replace(to_str(v), to_str(p.need(0)), to_str(p.need(1)),
                               count.is_none() ? -1 : need_int(count, "count")));
}
Value f_attr(Interp&, const Value& v, CallArgs& a) {
  Params p("attr", a, {"name"});
  std::string name = to_str(p.need(0));
  Value m;
  if (find_method(v, name, m)) return m;
  if (v.kind == Value::Kind::Namespace)
    for (const auto& [k, x] : v.ns->attrs)
      if (k == name) return x;
  return Value::undefined(std::string("'") + type_name(v) + " object' has no attribute '" + name + "'");
}
Value f_indent(Interp&, const Value& v, CallArgs& a) {
  Params p("indent", a, {"width", "first", "blank"});
  Value w = p.get_or(0, Value::integer(4));
  std::string ind = w.is_str() ? w.text() : std::string(static_cast<size_t>(std::clamp<int64_t>(need_int(w, "width"), 0, 256)), ' ');
  bool first = truthy(p.get_or(1, Value::boolean(false)));
  bool blank = truthy(p.get_or(2, Value::boolean(false)));
  std::vector<std::u32string> lines = splitlines(decode_utf8(to_str(v) + "\n"), false);
  std::string rv;
  if (first) append_bounded(rv, ind);
  if (blank) {
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k) {
        append_bounded(rv, "\n");
        append_bounded(rv, ind);
      }
      append_bounded(rv, encode_utf8(lines[k]));
    }
  } else {
    append_bounded(rv, encode_utf8(lines[0]));
    if (lines.size() > 1) {
      append_bounded(rv, "\n");
      for (size_t k = 1; k < lines.size(); ++k) {
        if (k > 1) append_bounded(rv, "\n");
        if (!lines[k].empty()) append_bounded(rv, ind);
        append_bounded(rv, encode_utf8(lines[k]));
      }
    }
  }
  return Value::str(std::move(rv));
}

Value f_map(Interp& in, const Value& v, CallArgs& a) {
  List out;
  if (!truthy(v)) return Value::make_list({});  // jinja2: `if value:` before iterating
  const Value* attr = nullptr;
  Value def;
  bool has_def = false;
  for (const auto& [k, x] : a.kw) {
    if (k == "attribute")
      attr = &x;
    else if (k == "default") {
      def = x;
      has_def = true;
    }
  }
  if (attr) {
    if (!a.pos.empty()) throw_eval("map() got unexpected positional arguments with attribute");
    for (const Value& x : iterate(v)) {
      Value r = attribute_of(in, x, *attr);
      out.push_back(has_def && r.is_undefined() ? def : r);
    }
    return Value::make_list(std::move(out));
  }
  if (a.pos.empty()) throw_eval("map requires a filter argument");
  std::string name = need_str(a.pos[0], "filter name");
  FilterFn f = find_filter(name);
  if (!f) throw_eval("No filter named '" + name + "'.");
  for (const Value& x : iterate(v)) {
    CallArgs rest;
    rest.pos.assign(a.pos.begin() + 1, a.pos.end());
    rest.kw = a.kw;
    out.push_back(f(in, x, rest));
  }
  return Value::make_list(std::move(out));
}

// select/reject/selectattr/rejectattr
Value select_common(Interp& in, const Value& v, CallArgs& a, bool on_attr, bool want) {
  if (!truthy(v)) return Value::make_list({});  // jinja2: `if value:` before iterating
  size_t first = on_attr ? 1 : 0;
  if (on_attr && a.pos.empty()) throw_eval("selectattr needs an attribute name");
  TestFn test = nullptr;
  if (a.pos.size() > first) {
    std::string name = need_str(a.pos[first], "test name");
    test = find_test(name);
    if (!test) throw_eval("No test named '" + name + "'.");
  }
  List out;
  for (const Value& x : iterate(v)) {
    Value subject = on_attr ? attribute_of(in, x, a.pos[0]) : x;
    bool ok;
    if (test) {
      CallArgs rest;
      if (a.pos.size() > first + 1) rest.pos.assign(a.pos.begin() + first + 1, a.pos.end());
      rest.kw = a.kw;
      ok = test(in, subject, rest);
    } else {
      ok = truthy(subject);
    }
    if (ok == want) out.push_back(x);
  }
  return Value::make_list(std::move(out));
}
Value f_select(Interp& in, const Value& v, CallArgs& a) { return select_common(in, v, a, false, true); }
Value f_reject(Interp& in, const Value& v, CallArgs& a) { return select_common(in, v, a, false, false); }
Value f_selectattr(Interp& in, const Value& v, CallArgs& a) { return select_common(in, v, a, true, true); }
Value f_rejectattr(Interp& in, const Value& v, CallArgs& a) { return select_common(in, v, a, true, false); }

struct FilterEntry {
  const char* name;
  FilterFn fn;
};
const FilterEntry kFilters[] = {
    {"abs", f_abs},           {"attr", f_attr},       {"capitalize", f_capitalize}, {"count", f_length},
    {"d", f_default},         {"default", f_default}, {"dictsort", f_dictsort},     {"first", f_first},
    {"float", f_float},       {"indent", f_indent},   {"int", f_int},               {"items", f_items},
    {"join", f_join},         {"last", f_last},       {"length", f_length},         {"list", f_list},
    {"lower", f_lower},       {"map", f_map},         {"max", f_max},               {"min", f_min},
    {"reject", f_reject},     {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse},
    {"select", f_select},     {"selectattr", f_selectattr}, {"sort", f_sort},       {"string", f_string},
    {"sum", f_sum},           {"title", f_title},     {"tojson", f_tojson},         {"trim", f_trim},
    {"unique", f_unique},     {"upper", f_upper},
};

// --------------------------------------------------------------- tests

const Value& test_arg(CallArgs& a, const char* test) {
  if (a.pos.size() != 1 || !a.kw.empty()) throw_eval(std::string("test '") + test + "' takes one argument");
  return a.pos[0];
}
void no_args(CallArgs& a, const char* test) {
  if (!a.pos.empty() || !a.kw.empty()) throw_eval(std::string("test '") + test + "' takes no arguments");
}

#define SIMPLE_TEST(fname, label, expr)          \
  bool fname(Interp&, const Value& v, CallArgs& a) { \
    no_args(a, label);                           \
    return expr;                                 \
  }
SIMPLE_TEST(t_defined, "defined", !v.is_undefined())
SIMPLE_TEST(t_undefined, "undefined", v.is_undefined())
SIMPLE_TEST(t_none, "none", v.is_none())
SIMPLE_TEST(t_boolean, "boolean", v.kind == Value::Kind::Bool)
SIMPLE_TEST(t_true, "true", v.kind == Value::Kind::Bool && v.b)
SIMPLE_TEST(t_false, "false", v.kind == Value::Kind::Bool && !v.b)
SIMPLE_TEST(t_integer, "integer", v.kind == Value::Kind::Int)
SIMPLE_TEST(t_float, "float", v.kind == Value::Kind::Float)
SIMPLE_TEST(t_number, "number", v.is_number())
SIMPLE_TEST(t_string, "string", v.is_str())
SIMPLE_TEST(t_mapping, "mapping", v.is_dict())
SIMPLE_TEST(t_iterable, "iterable",
            v.is_str() || v.is_list() || v.is_dict() || v.is_undefined() || v.kind == Value::Kind::Loop)
SIMPLE_TEST(t_sequence, "sequence", v.is_str() || v.is_list() || v.is_dict() || v.is_undefined())
SIMPLE_TEST(t_callable, "callable", v.kind == Value::Kind::Func || v.is_undefined())
SIMPLE_TEST(t_lower, "lower", (case_state(to_str(v)) & 3) == 1 && (case_state(to_str(v)) & 4))
SIMPLE_TEST(t_upper, "upper", (case_state(to_str(v)) & 5) == 1 && (case_state(to_str(v)) & 2))
#undef SIMPLE_TEST

bool t_odd(Interp&, const Value& v, CallArgs& a) {
  no_args(a, "odd");
  return py_equal(binary(BinOp::Mod, v, Value::integer(2)), Value::integer(1));
}
bool t_even(Interp&, const Value& v, CallArgs& a) {
  no_args(a, "even");
  return py_equal(binary(BinOp::Mod, v, Value::integer(2)), Value::integer(0));
}
bool t_divisibleby(Interp&, const Value& v, CallArgs& a) {
  return py_equal(binary(BinOp::Mod, v, test_arg(a, "divisibleby")), Value::integer(0));
}
bool t_sameas(Interp&, const Value& v, CallArgs& a) {
  const Value& o = test_arg(a, "sameas");
  if (v.kind != o.kind) return false;
  switch (v.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::Bool: return v.b == o.b;
    case Value::Kind::Int: return v.i == o.i;
    case Value::Kind::String: return v.s == o.s;
    default: return py_equal(v, o) && v.list == o.list && v.dict == o.dict;
  }
}
bool t_eq(Interp&, const Value& v, CallArgs& a) { return py_equal(v, test_arg(a, "eq")); }
bool t_ne(Interp&, const Value& v, CallArgs& a) { return !py_equal(v, test_arg(a, "ne")); }
bool t_lt(Interp&, const Value& v, CallArgs& a) { return py_compare(v, test_arg(a, "lt")) == -1; }
bool t_le(Interp&, const Value& v, CallArgs& a) {
  int c = py_compare(v, test_arg(a, "le"));
  return c == -1 || c == 0;
}
bool t_gt(Interp&, const Value& v, CallArgs& a) { return py_compare(v, test_arg(a, "gt")) == 1; }
bool t_ge(Interp&, const Value& v, CallArgs& a) {
  int c = py_compare(v, test_arg(a, "ge"));
  return c == 1 || c == 0;
}
bool t_in(Interp&, const Value& v, CallArgs& a) { return py_contains(test_arg(a, "in"), v); }

struct TestEntry {
  const char* name;
  TestFn fn;
};
const TestEntry kTests[] = {
    {"!=", t_ne},         {"<", t_lt},          {"<=", t_le},        {"==", t_eq},           {">", t_gt},
    {">=", t_ge},         {"boolean", t_boolean}, {"callable", t_callable}, {"defined", t_defined},
    {"divisibleby", t_divisibleby}, {"eq", t_eq}, {"equalto", t_eq}, {"even", t_even},   {"false", t_false},
    {"float", t_float},   {"ge", t_ge},         {"greaterthan", t_gt}, {"gt", t_gt},       {"in", t_in},
    {"integer", t_integer}, {"iterable", t_iterable}, {"le", t_le}, {"lessthan", t_lt},  {"lower", t_lower},
    {"lt", t_lt},         {"mapping", t_mapping}, {"ne", t_ne},      {"none", t_none},     {"number", t_number},
    {"odd", t_odd},       {"sameas", t_sameas}, {"sequence", t_sequence}, {"string", t_string},
    {"true", t_true},     {"undefined", t_undefined}, {"upper", t_upper},
};

// ------------------------------------------------------------- methods

Value make_func(std::string name, Value self,
                std::function<Value(Interp&, const Value&, CallArgs&)> fn) {
  spend(6);  // a function, its data, its name: allocations
  Value v;
  v.kind = Value::Kind::Func;
  auto d = std::make_shared<FuncData>();
  d->name = std::move(name);
  d->self = std::move(self);
  d->call = std::move(fn);
  v.fn = std::move(d);
  return v;
}

int64_t find_in(const std::string& s, const std::string& sub, bool from_right) {
  size_t f = from_right ? rfind_bytes(s, sub) : find_bytes(s, sub);
  if (f == std::string::npos) return -1;
  return static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, f)));
}

Value str_method(const std::string& name, const Value& self, CallArgs& a) {
  const std::string& s = self.text();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Params p(name.c_str(), a, {"chars"});
    return Value::str(py_strip(s, p.get_or(0, Value::none()), name != "rstrip", name != "lstrip"));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "isdigit" ||
      name == "isalpha" || name == "isalnum" || name == "isspace" || name == "islower" || name == "isupper") {
    Params p(name.c_str(), a, {});
    if (name == "upper") return Value::str(py_upper(s));
    if (name == "lower") return Value::str(py_lower(s));
    if (name == "title") return Value::str(py_title(s));
    if (name == "capitalize") return Value::str(py_capitalize(s));
    if (name == "isdigit") return Value::boolean(str_pred(self, 0));
    if (name == "isalpha") return Value::boolean(str_pred(self, 1));
    if (name == "isalnum") return Value::boolean(str_pred(self, 2));
    if (name == "isspace") return Value::boolean(str_pred(self, 3));
    int st = case_state(s);
    if (name == "islower") return Value::boolean((st & 1) && !(st & 2));
    return Value::boolean((st & 1) && !(st & 4));
  }
  if (name == "startswith" || name == "endswith") {
    Params p(name.c_str(), a, {"prefix"});
    const Value& x = p.need(0);
    const List one{x};
    const List& options = x.is_list() && x.tuple ? *x.list : one;
    for (const Value& o : options) {
      const std::string& t = need_str(o, name.c_str());
      spend(1 + std::min(t.size(), s.size()) / 64);
      bool hit = name == "startswith" ? s.compare(0, t.size(), t) == 0
                                      : s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
      if (hit) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "split" || name == "rsplit") {
    Params p(name.c_str(), a, {"sep", "maxsplit"});
    return Value::make_list(
        py_split(s, p.get_or(0, Value::none()), need_int(p.get_or(1, Value::integer(-1)), "maxsplit"), name == "rsplit"));
  }
  if (name == "splitlines") {
    Params p(name.c_str(), a, {"keepends"});
    List out;
    for (auto& l : splitlines(decode_utf8(s), truthy(p.get_or(0, Value::boolean(false)))))
      out.push_back(Value::str(encode_utf8(l)));
    return Value::make_list(std::move(out));
  }
  if (name == "replace") {
    Params p(name.c_str(), a, {"old", "new", "count"});
    return Value::str(py_replace(s, need_str(p.need(0), "old"), need_str(p.need(1), "new"),
                                 need_int(p.get_or(2, Value::integer(-1)), "count")));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    Params p(name.c_str(), a, {"sub"});
    int64_t r = find_in(s, need_str(p.need(0), "sub"), name[0] == 'r');
    if (r < 0 && name.find("index") != std::string::npos) throw_eval("substring not found");
    return Value::integer(r);
  }
  if (name == "count") {
    Params p(name.c_str(), a, {"sub"});
    const std::string& sub = need_str(p.need(0), "sub");
    if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s)) + 1);
    int64_t n = 0;
    for (size_t f = find_bytes(s, sub); f != std::string::npos; f = find_bytes(s, sub, f + sub.size())) {
      spend(1);  // a search per match
      ++n;
    }
    return Value::integer(n);
  }
  if (name == "join") {
    Params p(name.c_str(), a, {"iterable"});
    std::string out;
    size_t k = 0;
    for (const Value& x : iterate(p.need(0))) {
      if (!x.is_str())
        throw_eval("sequence item " + std::to_string(k) + ": expected str instance, " + type_name(x) + " found");
      if (k++) append_bounded(out, s);
      append_bounded(out, x.text());
    }
    return Value::str(std::move(out));
  }
  throw_eval("no method " + name);
}

const char* const kStrMethods[] = {"capitalize", "count",   "endswith",   "find",    "index",   "isalnum",
                                   "isalpha",    "isdigit", "islower",    "isspace", "isupper", "join",
                                   "lower",      "lstrip",  "replace",    "rfind",   "rindex",  "rsplit",
                                   "rstrip",     "split",   "splitlines", "startswith", "strip", "title",
                                   "upper"};
const char* const kDictUnsafe[] = {"clear", "pop", "popitem", "setdefault", "update"};
const char* const kListUnsafe[] = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};

template <size_t N>
bool in_set(const char* const (&set)[N], const std::string& name) {
  return std::any_of(std::begin(set), std::end(set), [&](const char* s) { return name == s; });
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  for (const auto& f : kFilters)
    if (name == f.name) return f.fn;
  return nullptr;
}

TestFn find_test(std::string_view name) {
  for (const auto& t : kTests)
    if (name == t.name) return t.fn;
  return nullptr;
}

bool find_method(const Value& obj, const std::string& name, Value& out) {
  auto unsafe = [&](const char* type) {
    out = Value::undefined("access to attribute '" + name + "' of '" + type + "' object is unsafe.");
    return true;
  };
  switch (obj.kind) {
    case Value::Kind::String:
      if (!in_set(kStrMethods, name)) return false;
      out = make_func(name, obj, [name](Interp&, const Value& self, CallArgs& a) { return str_method(name, self, a); });
      return true;
    case Value::Kind::Dict:
      if (in_set(kDictUnsafe, name)) return unsafe("dict");
      if (name == "get") {
        out = make_func(name, obj, [](Interp&, const Value& self, CallArgs& a) {
          Params p("get", a, {"key", "default"});
          const Value* v = self.dict->find(p.need(0));
          return v ? *v : p.get_or(1, Value::none());
        });
        return true;
      }
      if (name == "items" || name == "keys" || name == "values" || name == "copy") {
        out = make_func(name, obj, [name](Interp&, const Value& self, CallArgs& a) {
          Params p(name.c_str(), a, {});
          if (name == "copy") return self;
          List l;
          for (const auto& [k, v] : self.dict->items)
            l.push_back(name == "items" ? Value::make_list({k, v}, true) : name == "keys" ? k : v);
          return Value::make_list(std::move(l));
        });
        return true;
      }
      return false;
    case Value::Kind::List:
      if (!obj.tuple && in_set(kListUnsafe, name)) return unsafe("list");
      if (name == "index" || name == "count") {
        out = make_func(name, obj, [name](Interp&, const Value& self, CallArgs& a) {
          Params p(name.c_str(), a, {"value"});
          const Value& x = p.need(0);
          int64_t n = 0;
          for (size_t k = 0; k < self.list->size(); ++k)
            if (py_equal((*self.list)[k], x)) {
              if (name == "index") return Value::integer(static_cast<int64_t>(k));
              ++n;
            }
          if (name == "index") throw_eval(repr(x) + " is not in list");
          return Value::integer(n);
        });
        return true;
      }
      return false;
    case Value::Kind::Loop:
      if (name == "cycle") {
        out = make_func(name, obj, [](Interp&, const Value& self, CallArgs& a) {
          if (a.pos.empty()) throw_eval("no items for cycling given");
          return a.pos[self.loop->index % a.pos.size()];
        });
        return true;
      }
      return false;
    default: return false;
  }
}

Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  // jinja2 compiles slices to plain Python subscription, past the sandbox's
  // getitem: what cannot be sliced is an error, not undefined.
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) throw_eval("unhashable type: 'slice'");
  if (!obj.is_str() && !obj.is_list()) throw_eval(std::string("'") + type_name(obj) + "' object is not subscriptable");
  for (const Value* b : {&start, &stop, &step})
    if (!b->is_none() && !b->is_integral())
      throw_eval("slice indices must be integers or None or have an __index__ method");
  int64_t st = step.is_none() ? 1 : step.i;
  if (st == 0) throw_eval("slice step cannot be zero");
  std::u32string chars;
  int64_t len;
  if (obj.is_str()) {
    chars = decode_utf8(obj.text());
    len = static_cast<int64_t>(chars.size());
  } else {
    len = static_cast<int64_t>(obj.list->size());
  }
  int64_t lower = st > 0 ? 0 : -1, upper = st > 0 ? len : len - 1;
  auto bound = [&](const Value& b, int64_t def) {
    if (b.is_none()) return def;
    int64_t x = b.i;
    if (x < 0) {
      x = x < INT64_MIN + len ? lower : x + len;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  int64_t b = bound(start, st > 0 ? lower : upper), e = bound(stop, st > 0 ? upper : lower);
  // b and e lie in [-1, len]: the item count is ceil(|e - b| / |st|), and
  // item k is at b + k * st, inside those bounds (no overflow).
  const uint64_t ust = st > 0 ? static_cast<uint64_t>(st) : 0 - static_cast<uint64_t>(st);
  size_t n = 0;
  if (st > 0 ? b < e : b > e) n = static_cast<size_t>((static_cast<uint64_t>(std::abs(e - b)) - 1) / ust + 1);
  auto at = [&](size_t k) { return static_cast<size_t>(b + static_cast<int64_t>(k) * st); };
  if (obj.is_str()) {
    spend(n / 4);
    std::u32string out;
    out.reserve(n);
    for (size_t k = 0; k < n; ++k) out.push_back(chars[at(k)]);
    return Value::str(encode_utf8(out));
  }
  spend(n);
  List out;
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) out.push_back((*obj.list)[at(k)]);
  return Value::make_list(std::move(out), obj.tuple);
}

void install_globals(Scope& scope) {
  scope.set("range", make_func("range", Value(), [](Interp&, const Value&, CallArgs& a) {
              if (!a.kw.empty()) throw_eval("range() takes no keyword arguments");
              if (a.pos.empty() || a.pos.size() > 3) throw_eval("range expected 1 to 3 arguments");
              int64_t b = 0, e, s = 1;
              if (a.pos.size() == 1) {
                e = need_int(a.pos[0], "range() argument");
              } else {
                b = need_int(a.pos[0], "range() argument");
                e = need_int(a.pos[1], "range() argument");
                if (a.pos.size() == 3) s = need_int(a.pos[2], "range() argument");
              }
              if (s == 0) throw_eval("range() arg 3 must not be zero");
              // len(range(b, e, s)) = ceil(|e - b| / |s|), in unsigned
              // arithmetic: |e - b| and |s| can be 2^64 - 1 and 2^63.
              uint64_t n = 0;
              if (s > 0 ? b < e : b > e) {
                uint64_t span = s > 0 ? static_cast<uint64_t>(e) - static_cast<uint64_t>(b)
                                      : static_cast<uint64_t>(b) - static_cast<uint64_t>(e);
                uint64_t step = s > 0 ? static_cast<uint64_t>(s) : 0 - static_cast<uint64_t>(s);
                n = (span - 1) / step + 1;
              }
              if (n > 100000)
                throw_eval("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
              spend(n);
              List out;
              out.reserve(n);
              // item k is b + k * s, between b and e: computed modulo 2^64,
              // the result is exact
              for (uint64_t k = 0; k < n; ++k)
                out.push_back(Value::integer(static_cast<int64_t>(static_cast<uint64_t>(b) + k * static_cast<uint64_t>(s))));
              return Value::make_list(std::move(out));
            }));
  auto kwargs_dict = [](CallArgs& a, const char* fn) {
    DictData d;
    if (a.pos.size() > 1) throw_eval(std::string(fn) + " expected at most 1 positional argument");
    if (!a.pos.empty()) {
      const Value& init = a.pos[0];
      if (init.is_dict()) {
        d = *init.dict;
      } else {
        for (const Value& kv : iterate(init)) {
          List pair = iterate(kv);
          if (pair.size() != 2) throw_eval("dictionary update sequence element has wrong length");
          d.set(pair[0], pair[1]);
        }
      }
    }
    for (auto& [k, v] : a.kw) d.set(Value::str(k), v);
    return d;
  };
  scope.set("dict", make_func("dict", Value(), [kwargs_dict](Interp&, const Value&, CallArgs& a) {
              return Value::make_dict(kwargs_dict(a, "dict"));
            }));
  scope.set("namespace", make_func("namespace", Value(), [kwargs_dict](Interp& in, const Value&, CallArgs& a) {
              DictData d = kwargs_dict(a, "namespace");
              Value v;
              v.kind = Value::Kind::Namespace;
              v.ns = std::make_shared<NamespaceData>();
              in.namespaces.push_back(v.ns);
              for (auto& [k, x] : d.items) {
                if (!k.is_str()) throw_eval("keywords must be strings");
                v.ns->attrs.emplace_back(k.text(), x);
              }
              return v;
            }));
  scope.set("raise_exception", make_func("raise_exception", Value(), [](Interp&, const Value&, CallArgs& a) -> Value {
              Params p("raise_exception", a, {"message"});
              throw Error("chat template: " + to_str(p.need(0)));
            }));
  scope.set("strftime_now", make_func("strftime_now", Value(), [](Interp& in, const Value&, CallArgs& a) {
              Params p("strftime_now", a, {"format"});
              const std::string& fmt = need_str(p.need(0), "format");
              std::time_t now = in.opts.now ? in.opts.now : std::time(nullptr);
              std::tm tm{};
              localtime_r(&now, &tm);
              if (fmt.empty()) return Value::str("");
              std::string buf(std::min(fmt.size() * 8 + 64, kMaxString + 1), '\0');
              spend(buf.size() / 64);
              size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
              if (n == 0) throw_eval("strftime_now: format too long");
              buf.resize(n);
              return Value::str(std::move(buf));
            }));
}

}  // namespace tern::chat::detail
