// jinja2's built-in filters and tests that chat templates use, with
// transformers' tojson; methods and globals are in methods.cpp.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <initializer_list>

#include "builtin_args.h"
#include "interp.h"

namespace tern::chat::detail {

namespace {

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

// Shared with methods.cpp (builtin_args.h).

const std::string& need_str(const Value& v, const char* what) {
  if (!v.is_str()) throw_eval(std::string(what) + " must be str, not " + type_name(v));
  return v.text();
}

int64_t need_int(const Value& v, const char* what) {
  if (!v.is_integral()) throw_eval(std::string(what) + " must be an integer, not " + type_name(v));
  return v.i;
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

}  // namespace tern::chat::detail
