// The values a chat template computes with, modelled on the Python objects
// jinja2 hands around: undefined, none, bool, int, float, str, list/tuple,
// dict (insertion ordered), namespace, loop, and callables. Strings are
// UTF-8; indexing, slicing and length count code points, as Python does
// (a byte that is not valid UTF-8 counts as one code point).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tern/error.h"

namespace tern::chat::detail {

struct Value;
using List = std::vector<Value>;
struct DictData;
struct NamespaceData;
struct LoopData;
struct FuncData;

struct Value {
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Loop, Func };
  Kind kind = Kind::Undefined;
  bool tuple = false;  // a List that Python would print as a tuple
  uint16_t depth = 0;  // nesting of lists and dicts, bounded (so is destruction's recursion)
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::shared_ptr<const std::string> s;  // String; Undefined: why (error message)
  std::shared_ptr<const List> list;
  std::shared_ptr<const DictData> dict;
  std::shared_ptr<NamespaceData> ns;
  std::shared_ptr<LoopData> loop;
  std::shared_ptr<const FuncData> fn;

  static Value undefined(std::string why = {});
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value real(double v);
  static Value str(std::string v);
  static Value make_list(List v, bool is_tuple = false);
  static Value make_dict(DictData d);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_str() const { return kind == Kind::String; }
  bool is_list() const { return kind == Kind::List; }
  bool is_dict() const { return kind == Kind::Dict; }
  bool is_number() const { return kind == Kind::Bool || kind == Kind::Int || kind == Kind::Float; }
  bool is_integral() const { return kind == Kind::Bool || kind == Kind::Int; }
  const std::string& text() const { return *s; }
};

struct DictData {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
};

struct NamespaceData {
  std::vector<std::pair<std::string, Value>> attrs;
};

struct LoopData {
  std::shared_ptr<const List> items;
  size_t index = 0;  // 0-based position of the current item
};

struct Interp;
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};
// A global function or a bound method: `self` is the object it is bound to.
struct FuncData {
  std::string name;
  Value self;
  std::function<Value(Interp&, const Value& self, CallArgs&)> call;
};

// Work accounting, so that no template runs away with time or memory: a
// render sets the thread's budget (Budget); statements, expressions and the
// strings, lists and comparisons they make spend it; running out throws.
// A unit is about 64 bytes of string made, copied or compared, 16 bytes
// searched, 2 bytes decoded to code points (then worked on one by one), a
// list item or value made, half a statement or expression: so the budget
// bounds time and the memory a render holds.
void spend(uint64_t units);
// Substring search in linear time (std::string::find and rfind take time
// proportional to both lengths), spending for what it scans. find_bytes:
// the first occurrence of `needle` at or after `from`; rfind_bytes: the
// last one inside `hay`. npos if none; an empty needle is found at `from`
// and at the end.
size_t find_bytes(std::string_view hay, std::string_view needle, size_t from = 0);
size_t rfind_bytes(std::string_view hay, std::string_view needle);

// The largest string (bytes) and list (items) a template may make. Code that
// builds one piece by piece checks as it goes, before allocating more.
constexpr size_t kMaxString = size_t{16} << 20;
constexpr size_t kMaxList = size_t{1} << 20;
// Appends `add` to `out`, a string being built: throws "string too long"
// instead of passing kMaxString, and spends the budget for the bytes.
void append_bounded(std::string& out, std::string_view add);
// Before a list being built gets its `n`th item: throws "list too long"
// past kMaxList, and spends for the item.
void check_list_item(size_t n);
class Budget {
 public:
  explicit Budget(uint64_t units);
  ~Budget();
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;

 private:
  uint64_t saved_;
};

// Counts the nesting of values being printed, compared or encoded; throws
// past a fixed depth (a namespace can contain itself).
class DepthGuard {
 public:
  DepthGuard();
  ~DepthGuard();
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
};

// Python-style errors raised while evaluating; the renderer adds position.
struct EvalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void throw_eval(const std::string& msg);
// The message an undefined value fails with when used.
[[noreturn]] void fail_undefined(const Value& v);

// --- UTF-8 ---------------------------------------------------------------
// Code points; an invalid byte b decodes to 0xDC00 + b (Python's
// surrogateescape) and encodes back to that byte.
std::u32string decode_utf8(std::string_view s);
std::string encode_utf8(std::u32string_view s);
void append_utf8(std::string& out, char32_t c);
size_t utf8_length(std::string_view s);
// 1 if str.lower() changes the character, | 2 if str.upper() does.
int char_case(char32_t c);
bool py_isspace(char32_t c);
std::string py_strip(std::string_view s, const Value& chars, bool left, bool right);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);
std::string py_title(std::string_view s);   // str.title()
std::string jinja_title(std::string_view s);  // the title filter

// --- Python semantics ------------------------------------------------------
const char* type_name(const Value& v);
bool truthy(const Value& v);
std::string to_str(const Value& v);   // str(v); undefined is ""
std::string repr(const Value& v);     // repr(v)
std::string float_repr(double d);
bool py_equal(const Value& a, const Value& b);
int py_compare(const Value& a, const Value& b);  // <0, 0, >0; throws if unordered
bool py_contains(const Value& container, const Value& item);
// The items a for loop or list() iterates: list items, string characters,
// dict keys; undefined is empty. Throws for values that are not iterable.
List iterate(const Value& v);
int64_t py_len(const Value& v);

enum class BinOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
Value binary(BinOp op, const Value& a, const Value& b);
Value negate(const Value& v);

// --- JSON ------------------------------------------------------------------
// Parses a JSON text into values (objects become dicts); throws tern::Error.
Value parse_json(std::string_view text, std::string_view what);
// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as Python does.
struct JsonStyle {
  bool ensure_ascii = false;
  bool has_indent = false;
  std::string indent;
  std::string item_sep = ", ", key_sep = ": ";
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonStyle& style);

}  // namespace tern::chat::detail
