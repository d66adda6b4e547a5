// Python semantics of template values: truth, str(), repr(), equality,
// ordering, `in`, iteration and arithmetic, as jinja2 gets them from Python.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "value.h"

namespace tern::chat::detail {

namespace {
constexpr int kMaxDepth = 400;  // nesting of values printed or compared
thread_local uint64_t g_budget = UINT64_MAX;

thread_local int g_depth = 0;
}  // namespace

DepthGuard::DepthGuard() {
  spend(1);
  if (++g_depth > kMaxDepth) {
    --g_depth;
    throw_eval("maximum recursion depth exceeded");
  }
}
DepthGuard::~DepthGuard() { --g_depth; }

void spend(uint64_t units) {
  if (g_budget == UINT64_MAX) return;
  if (units > g_budget) {
    g_budget = 0;
    throw_eval("the template runs too long");
  }
  g_budget -= units;
}

void append_bounded(std::string& out, std::string_view add) {
  if (out.size() > kMaxString || add.size() > kMaxString - out.size()) throw_eval("string too long");
  spend((out.size() + add.size()) / 64 - out.size() / 64);
  out.append(add);
}

size_t find_bytes(std::string_view hay, std::string_view needle, size_t from) {
  if (from > hay.size()) return std::string_view::npos;
  const size_t m = needle.size();
  if (m == 0) return from;
  // glibc's memmem is linear (two-way) whatever the strings. It is given
  // windows that double, overlapping by m - 1 bytes, so that a search costs
  // what it scans, not the rest of `hay` (as ASan's check of the arguments
  // would: a split into many parts would take quadratic time).
  size_t pos = from, win = std::max<size_t>(256, 2 * m), f = std::string_view::npos;
  while (hay.size() - pos >= m) {
    const size_t len = std::min(win, hay.size() - pos);
    if (const void* hit = ::memmem(hay.data() + pos, len, needle.data(), m)) {
      f = static_cast<size_t>(static_cast<const char*>(hit) - hay.data());
      break;
    }
    if (pos + len == hay.size()) break;
    pos += len - (m - 1);
    win *= 2;
  }
  spend(((f != std::string_view::npos ? f + m : hay.size()) - from) / 16 + m / 64);
  return f;
}

size_t rfind_bytes(std::string_view hay, std::string_view needle) {
  const size_t n = hay.size(), m = needle.size();
  if (m == 0) return n;
  if (m > n) return std::string_view::npos;
  if (m == 1) {  // one byte: a plain scan back (rsplit(',') calls this once a part)
    size_t i = n;
    while (i > 0 && hay[i - 1] != needle[0]) --i;
    spend((n - i) / 4);
    return i > 0 ? i - 1 : std::string_view::npos;
  }
  // Knuth-Morris-Pratt on the reversed strings: R(s)[i] = s[len - 1 - i].
  // fail[j]: the longest proper border of R(needle)[0..j].
  spend(m / 4);  // a loop a byte, as a decode
  std::vector<uint32_t> fail(m, 0);
  for (size_t j = 1, k = 0; j < m; ++j) {
    while (k > 0 && needle[m - 1 - j] != needle[m - 1 - k]) k = fail[k - 1];
    if (needle[m - 1 - j] == needle[m - 1 - k]) ++k;
    fail[j] = static_cast<uint32_t>(k);
  }
  size_t i = 0, k = 0, found = std::string_view::npos;
  for (; i < n; ++i) {
    if ((i & 4095) == 4095) spend(1024);  // as it goes: the loop is slow under sanitizers
    const char c = hay[n - 1 - i];
    while (k > 0 && c != needle[m - 1 - k]) k = fail[k - 1];
    if (c == needle[m - 1 - k]) ++k;
    if (k == m) {
      found = n - 1 - i;  // R(needle) ends at R(hay)[i]: needle starts at hay[n - 1 - i]
      ++i;
      break;
    }
  }
  spend((i & 4095) / 4);
  return found;
}

void check_list_item(size_t n) {
  if (n > kMaxList) throw_eval("list too long");
  spend(2);  // an item, a new string in it
}

Budget::Budget(uint64_t units) : saved_(g_budget) { g_budget = units; }
Budget::~Budget() { g_budget = saved_; }

void throw_eval(const std::string& msg) { throw EvalError(msg); }

void fail_undefined(const Value& v) {
  throw_eval(v.s && !v.s->empty() ? *v.s : std::string("value is undefined"));
}

Value Value::undefined(std::string why) {
  spend(why.size() / 64);
  Value v;
  if (!why.empty()) v.s = std::make_shared<const std::string>(std::move(why));
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind = Kind::Bool;
  v.b = b;
  v.i = b ? 1 : 0;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind = Kind::Int;
  v.i = i;
  return v;
}
Value Value::real(double f) {
  Value v;
  v.kind = Kind::Float;
  v.f = f;
  return v;
}
Value Value::str(std::string s) {
  if (s.size() > kMaxString) throw_eval("string too long");
  spend(1 + s.size() / 64);
  Value v;
  v.kind = Kind::String;
  v.s = std::make_shared<const std::string>(std::move(s));
  return v;
}
static uint16_t nested_depth(const List& items) {
  uint16_t d = 0;
  for (const Value& e : items) d = std::max(d, e.depth);
  if (d >= kMaxDepth) throw_eval("data nested too deeply");
  return static_cast<uint16_t>(d + 1);
}

Value Value::make_list(List l, bool is_tuple) {
  if (l.size() > kMaxList) throw_eval("list too long");
  spend(1 + l.size());
  Value v;
  v.depth = nested_depth(l);
  v.kind = Kind::List;
  v.tuple = is_tuple;
  v.list = std::make_shared<const List>(std::move(l));
  return v;
}
Value Value::make_dict(DictData d) {
  spend(1 + d.items.size());
  Value v;
  uint16_t depth = 0;
  for (const auto& [k, x] : d.items) depth = std::max({depth, k.depth, x.depth});
  if (depth >= kMaxDepth) throw_eval("data nested too deeply");
  v.depth = static_cast<uint16_t>(depth + 1);
  v.kind = Kind::Dict;
  v.dict = std::make_shared<const DictData>(std::move(d));
  return v;
}

static bool hashable(const Value& k) {
  if (k.kind == Value::Kind::List) {
    if (!k.tuple) return false;
    spend(1 + k.list->size());
    for (const auto& e : *k.list)
      if (!hashable(e)) return false;
    return true;
  }
  return k.kind != Value::Kind::Dict;
}

const Value* DictData::find(const Value& key) const {
  if (!hashable(key)) throw_eval(std::string("unhashable type: '") + type_name(key) + "'");
  for (const auto& [k, v] : items)
    if (py_equal(k, key)) return &v;
  return nullptr;
}
const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k.is_str() && k.text().size() == key.size()) {
      spend(key.size() / 64);
      if (k.text() == key) return &v;
    }
  return nullptr;
}
void DictData::set(Value key, Value value) {
  if (!hashable(key)) throw_eval(std::string("unhashable type: '") + type_name(key) + "'");
  for (auto& [k, v] : items)
    if (py_equal(k, key)) {
      v = std::move(value);
      return;
    }
  items.emplace_back(std::move(key), std::move(value));
}

// ------------------------------------------------------------- printing

const char* type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List: return v.tuple ? "tuple" : "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Namespace: return "Namespace";
    case Value::Kind::Loop: return "LoopContext";
    case Value::Kind::Func: return "builtin_function_or_method";
  }
  return "object";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.b;
    case Value::Kind::Int: return v.i != 0;
    case Value::Kind::Float: return v.f != 0;
    case Value::Kind::String: return !v.s->empty();
    case Value::Kind::List: return !v.list->empty();
    case Value::Kind::Dict: return !v.dict->items.empty();
    default: return true;
  }
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  std::string out;
  if (s[0] == '-') {
    out = "-";
    s.erase(0, 1);
  }
  size_t epos = s.find('e');
  int exp = std::atoi(s.c_str() + epos + 1);
  std::string digits;
  for (size_t k = 0; k < epos; ++k)
    if (s[k] != '.') digits += s[k];
  if (exp >= -4 && exp < 16) {
    int point = exp + 1;
    if (point <= 0)
      out += "0." + std::string(-point, '0') + digits;
    else if (point >= static_cast<int>(digits.size()))
      out += digits + std::string(point - digits.size(), '0') + ".0";
    else
      out += digits.substr(0, point) + "." + digits.substr(point);
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += e;
  }
  return out;
}

static bool printable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x1680 || c == 0x180E || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
      (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || (c >= 0xD800 && c <= 0xF8FF) ||
      (c >= 0xFFF9 && c <= 0xFFFB) || c == 0xFFFE || c == 0xFFFF || c >= 0xE0000)
    return false;
  return true;
}

static std::string repr_str(std::string_view s) {
  std::u32string u = decode_utf8(s);
  char32_t q = '\'';
  if (u.find(U'\'') != std::u32string::npos && u.find(U'"') == std::u32string::npos) q = '"';
  std::string out(1, static_cast<char>(q));
  char buf[16];
  for (char32_t c : u) {
    if (out.size() > kMaxString) throw_eval("string too long");
    if (c == q || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (printable(c)) {
      append_utf8(out, c);
    } else {
      if (c <= 0xFF)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c <= 0xFFFF)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out += static_cast<char>(q);
  return out;
}

std::string repr(const Value& v) {
  DepthGuard guard;
  switch (v.kind) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::String: return repr_str(v.text());
    case Value::Kind::List: {
      std::string out = v.tuple ? "(" : "[";
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) append_bounded(out, ", ");
        append_bounded(out, repr((*v.list)[k]));
      }
      if (v.tuple && v.list->size() == 1) out += ",";
      return out + (v.tuple ? ")" : "]");
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.dict->items) {
        if (!first) append_bounded(out, ", ");
        first = false;
        append_bounded(out, repr(k));
        append_bounded(out, ": ");
        append_bounded(out, repr(x));
      }
      return out + "}";
    }
    case Value::Kind::Namespace: {
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, x] : v.ns->attrs) {
        if (!first) append_bounded(out, ", ");
        first = false;
        append_bounded(out, repr_str(k));
        append_bounded(out, ": ");
        append_bounded(out, repr(x));
      }
      return out + "}>";
    }
    case Value::Kind::Loop:
      return "<LoopContext " + std::to_string(v.loop->index + 1) + "/" +
             std::to_string(v.loop->items->size()) + ">";
    case Value::Kind::Func: return "<built-in method " + v.fn->name + ">";
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.b ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.i);
    case Value::Kind::Float: return float_repr(v.f);
    case Value::Kind::String:
      spend(v.text().size() / 64);  // a copy
      return v.text();
    default: return repr(v);
  }
}

// ----------------------------------------------------- comparison, `in`

static double as_double(const Value& v) { return v.kind == Value::Kind::Float ? v.f : static_cast<double>(v.i); }

static int cmp_numbers(const Value& a, const Value& b) {
  if (a.is_integral() && b.is_integral()) return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
  double x = as_double(a), y = as_double(b);
  if (std::isnan(x) || std::isnan(y)) return 2;  // unordered
  return x < y ? -1 : x > y ? 1 : 0;
}

bool py_equal(const Value& a, const Value& b) {
  DepthGuard guard;
  if (a.is_number() && b.is_number()) return cmp_numbers(a, b) == 0;
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String:
      if (a.text().size() != b.text().size()) return false;
      spend(a.text().size() / 64);
      return a.text() == b.text();
    case Value::Kind::List:
      if (a.tuple != b.tuple || a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!py_equal((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Value::Kind::Dict:
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* o = b.dict->find(k);
        if (!o || !py_equal(v, *o)) return false;
      }
      return true;
    case Value::Kind::Namespace: return a.ns == b.ns;
    case Value::Kind::Loop: return a.loop == b.loop;
    case Value::Kind::Func: return a.fn == b.fn;
    default: return false;
  }
}

int py_compare(const Value& a, const Value& b) {
  DepthGuard guard;
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) return cmp_numbers(a, b);
  if (a.is_str() && b.is_str()) {
    spend(std::min(a.text().size(), b.text().size()) / 64);
    int c = a.text().compare(b.text());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && a.tuple == b.tuple) {
    size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; ++k) {
      const Value &x = (*a.list)[k], &y = (*b.list)[k];
      if (!py_equal(x, y)) return py_compare(x, y);
    }
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  throw_eval(std::string("'<' not supported between instances of '") + type_name(a) + "' and '" +
             type_name(b) + "'");
}

bool py_contains(const Value& c, const Value& item) {
  switch (c.kind) {
    case Value::Kind::String:
      if (!item.is_str())
        throw_eval(std::string("'in <string>' requires string as left operand, not ") + type_name(item));
      return find_bytes(c.text(), item.text()) != std::string::npos;
    case Value::Kind::List:
      for (const auto& e : *c.list)
        if (py_equal(e, item)) return true;
      return false;
    case Value::Kind::Dict: return c.dict->find(item) != nullptr;
    case Value::Kind::Undefined: return false;
    default: throw_eval(std::string("argument of type '") + type_name(c) + "' is not iterable");
  }
}

List iterate(const Value& v) {
  spend(1 + (v.is_list() ? v.list->size() : v.is_dict() ? v.dict->items.size() : 0));
  switch (v.kind) {
    case Value::Kind::List: return *v.list;
    case Value::Kind::String: {
      std::u32string chars = decode_utf8(v.text());
      if (chars.size() > kMaxList) throw_eval("list too long");
      spend(2 * chars.size());  // an item, a new string in it
      List out;
      out.reserve(chars.size());
      for (char32_t c : chars) {
        std::string s;
        append_utf8(s, c);
        out.push_back(Value::str(std::move(s)));
      }
      return out;
    }
    case Value::Kind::Dict: {
      List out;
      for (const auto& kv : v.dict->items) out.push_back(kv.first);
      return out;
    }
    case Value::Kind::Undefined: return {};
    default: throw_eval(std::string("'") + type_name(v) + "' object is not iterable");
  }
}

int64_t py_len(const Value& v) {
  switch (v.kind) {
    case Value::Kind::String: return static_cast<int64_t>(utf8_length(v.text()));
    case Value::Kind::List: return static_cast<int64_t>(v.list->size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.dict->items.size());
    case Value::Kind::Undefined: return 0;
    default: throw_eval(std::string("object of type '") + type_name(v) + "' has no len()");
  }
}

// ----------------------------------------------------------- arithmetic

static const char* op_symbol(BinOp op) {
  switch (op) {
    case BinOp::Add: return "+";
    case BinOp::Sub: return "-";
    case BinOp::Mul: return "*";
    case BinOp::Div: return "/";
    case BinOp::FloorDiv: return "//";
    case BinOp::Mod: return "%";
    case BinOp::Pow: return "** or pow()";
  }
  return "?";
}

[[noreturn]] static void unsupported(BinOp op, const Value& a, const Value& b) {
  throw_eval(std::string("unsupported operand type(s) for ") + op_symbol(op) + ": '" + type_name(a) +
             "' and '" + type_name(b) + "'");
}

static Value repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_str()) {
    const std::string& s = seq.text();
    if (s.empty() || n == 0) return Value::str("");
    if (static_cast<uint64_t>(n) > kMaxString / s.size()) throw_eval("string too long");
    const size_t total = s.size() * static_cast<size_t>(n);
    std::string out;
    out.reserve(total);
    out = s;
    while (out.size() < total) out.append(out, 0, std::min(out.size(), total - out.size()));  // doubling
    return Value::str(std::move(out));
  }
  const List& l = *seq.list;
  if (l.empty() || n == 0) return Value::make_list({}, seq.tuple);
  if (static_cast<uint64_t>(n) > kMaxList / l.size()) throw_eval("list too long");
  List out;
  out.reserve(l.size() * static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) out.insert(out.end(), l.begin(), l.end());
  return Value::make_list(std::move(out), seq.tuple);
}

static Value checked(bool overflow, const int64_t& r) {
  if (overflow) throw_eval("integer overflow");
  return Value::integer(r);
}

// printf-style formatting, str % args: %s %r %d %i %f %% and %(key)s.
static Value percent_format(const std::string& fmt, const Value& args) {
  // As CPython: a tuple gives the arguments; a dict (or anything else with
  // __getitem__, like a list) is one argument that need not be used up.
  const DictData* mapping = args.is_dict() ? args.dict.get() : nullptr;
  bool check_all = !(args.is_dict() || (args.is_list() && !args.tuple) || args.is_undefined());
  const List one{args};
  const List& pos = args.is_list() && args.tuple ? *args.list : one;
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t k = 0; k < fmt.size(); ++k) {
    if (fmt[k] != '%') {
      out += fmt[k];
      continue;
    }
    if (++k >= fmt.size()) throw_eval("incomplete format");
    Value arg;
    if (fmt[k] == '(') {
      size_t e = fmt.find(')', k);
      if (e == std::string::npos) throw_eval("incomplete format key");
      if (args.is_undefined()) fail_undefined(args);
      if (!mapping) throw_eval("format requires a mapping");
      const Value* v = mapping->find(std::string_view(fmt).substr(k + 1, e - k - 1));
      if (!v) throw_eval("KeyError: " + fmt.substr(k + 1, e - k - 1));
      arg = *v;
      used_mapping = true;
      k = e + 1;
      if (k >= fmt.size()) throw_eval("incomplete format");
    } else if (fmt[k] != '%') {
      if (next >= pos.size()) throw_eval("not enough arguments for format string");
      arg = pos[next++];
    }
    switch (fmt[k]) {
      case '%': out += '%'; break;
      case 's':
        if (arg.is_str())
          append_bounded(out, arg.text());
        else
          append_bounded(out, to_str(arg));
        break;
      case 'r': append_bounded(out, repr(arg)); break;
      case 'd':
      case 'i':
        if (!arg.is_number()) throw_eval(std::string("%d format: a real number is required, not ") + type_name(arg));
        if (arg.kind != Value::Kind::Float) {
          out += std::to_string(arg.i);
        } else {
          // int(x) as Python takes it: truncated, any size; inf and nan fail
          if (std::isnan(arg.f)) throw_eval("cannot convert float NaN to integer");
          if (std::isinf(arg.f)) throw_eval("cannot convert float infinity to integer");
          char buf[400];  // DBL_MAX has 309 digits
          std::snprintf(buf, sizeof buf, "%.0f", std::trunc(arg.f) + 0.0);  // + 0.0: no "-0"
          out += buf;
        }
        break;
      case 'f': {
        if (!arg.is_number()) throw_eval(std::string("must be real number, not ") + type_name(arg));
        char buf[400];
        std::snprintf(buf, sizeof buf, "%f", arg.kind == Value::Kind::Float ? arg.f : static_cast<double>(arg.i));
        out += buf;
        break;
      }
      default: throw_eval(std::string("unsupported format character '") + fmt[k] + "'");
    }
  }
  if (check_all && next < pos.size()) throw_eval("not all arguments converted during string formatting");
  (void)used_mapping;
  return Value::str(std::move(out));
}

Value binary(BinOp op, const Value& a, const Value& b) {
  if (op == BinOp::Mod && a.is_str()) return percent_format(a.text(), b);
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    bool ints = a.is_integral() && b.is_integral();
    int64_t r = 0;
    switch (op) {
      case BinOp::Add:
        if (ints) {
          bool o = __builtin_add_overflow(a.i, b.i, &r);
          return checked(o, r);
        }
        return Value::real(as_double(a) + as_double(b));
      case BinOp::Sub:
        if (ints) {
          bool o = __builtin_sub_overflow(a.i, b.i, &r);
          return checked(o, r);
        }
        return Value::real(as_double(a) - as_double(b));
      case BinOp::Mul:
        if (ints) {
          bool o = __builtin_mul_overflow(a.i, b.i, &r);
          return checked(o, r);
        }
        return Value::real(as_double(a) * as_double(b));
      case BinOp::Div:
        if (as_double(b) == 0) throw_eval("division by zero");
        return Value::real(as_double(a) / as_double(b));
      case BinOp::FloorDiv:
      case BinOp::Mod:
        if (ints) {
          if (b.i == 0) throw_eval("integer division or modulo by zero");
          if (a.i == INT64_MIN && b.i == -1) throw_eval("integer overflow");
          int64_t q = a.i / b.i, m = a.i % b.i;
          if (m != 0 && ((m < 0) != (b.i < 0))) {
            --q;
            m += b.i;
          }
          return Value::integer(op == BinOp::FloorDiv ? q : m);
        } else {
          double x = as_double(a), y = as_double(b);
          if (y == 0) throw_eval("float modulo");
          // CPython's float_divmod
          double mod = std::fmod(x, y), div = (x - mod) / y;
          if (mod != 0) {
            if ((y < 0) != (mod < 0)) {
              mod += y;
              div -= 1.0;
            }
          } else {
            mod = std::copysign(0.0, y);
          }
          if (op == BinOp::Mod) return Value::real(mod);
          double q;
          if (div != 0) {
            q = std::floor(div);
            if (div - q > 0.5) q += 1.0;
          } else {
            q = std::copysign(0.0, x / y);
          }
          return Value::real(q);
        }
      case BinOp::Pow:
        if (ints && b.i >= 0) {
          int64_t base = a.i, e = b.i;
          r = 1;
          while (e > 0) {
            if (e & 1)
              if (__builtin_mul_overflow(r, base, &r)) throw_eval("integer overflow");
            e >>= 1;
            if (e > 0 && __builtin_mul_overflow(base, base, &base)) throw_eval("integer overflow");
          }
          return Value::integer(r);
        }
        if (as_double(a) == 0 && as_double(b) < 0)
          throw_eval("0.0 cannot be raised to a negative power");
        return Value::real(std::pow(as_double(a), as_double(b)));
    }
  }
  switch (op) {
    case BinOp::Add:
      if (a.is_str() && b.is_str()) {
        if (a.text().size() + b.text().size() > kMaxString) throw_eval("string too long");
        return Value::str(a.text() + b.text());
      }
      if (a.is_list() && b.is_list() && a.tuple == b.tuple) {
        if (a.list->size() + b.list->size() > kMaxList) throw_eval("list too long");
        spend(a.list->size() + b.list->size());
        List out;
        out.reserve(a.list->size() + b.list->size());
        out.insert(out.end(), a.list->begin(), a.list->end());
        out.insert(out.end(), b.list->begin(), b.list->end());
        return Value::make_list(std::move(out), a.tuple);
      }
      if (a.is_str()) throw_eval(std::string("can only concatenate str (not \"") + type_name(b) + "\") to str");
      if (a.is_list())
        throw_eval(std::string("can only concatenate ") + type_name(a) + " (not \"" + type_name(b) + "\") to " +
                   type_name(a));
      break;
    case BinOp::Mul:
      if ((a.is_str() || a.is_list()) && b.is_integral()) return repeat(a, b.i);
      if ((b.is_str() || b.is_list()) && a.is_integral()) return repeat(b, a.i);
      break;
    default: break;
  }
  unsupported(op, a, b);
}

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.kind == Value::Kind::Float) return Value::real(-v.f);
  if (v.is_integral()) {
    if (v.i == INT64_MIN) throw_eval("integer overflow");
    return Value::integer(-v.i);
  }
  throw_eval(std::string("bad operand type for unary -: '") + type_name(v) + "'");
}

}  // namespace tern::chat::detail
