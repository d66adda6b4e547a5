// The str, dict, list and loop methods the sandbox allows, slicing, and
// the globals transformers gives a chat template (range, namespace,
// raise_exception, strftime_now).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>

#include "builtin_args.h"
#include "interp.h"

namespace tern::chat::detail {

namespace {

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
