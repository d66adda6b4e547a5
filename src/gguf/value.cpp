// Value construction and the typed accessors. Accessor errors name the key so
// a loader can pass them straight through ("llama.block_count: expected ...").
#include <cstring>
#include <limits>

#include "internal.h"
#include "tern/error.h"

namespace tern::gguf {
namespace detail {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "unknown";
}

bool known_value_type(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::F64); }

uint64_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
    case ValueType::STRING: case ValueType::ARRAY: return 0;
  }
  return 0;
}

std::string describe(const Value& v) {
  if (v.type == ValueType::ARRAY) return std::string("array of ") + value_type_name(v.array_type);
  return value_type_name(v.type);
}

std::string quoted(std::string_view s) {
  constexpr size_t kMax = 120;
  std::string out = "'";
  for (size_t k = 0; k < s.size() && k < kMax; ++k) {
    const auto ch = static_cast<unsigned char>(s[k]);
    out += ch < 0x20 || ch == 0x7f ? '?' : static_cast<char>(ch);
  }
  if (s.size() > kMax) out += "...";
  return out + "'";
}

}  // namespace detail

namespace {

using detail::describe;

bool is_unsigned(ValueType t) {
  return t == ValueType::U8 || t == ValueType::U16 || t == ValueType::U32 || t == ValueType::U64;
}
bool is_signed(ValueType t) {
  return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}

[[noreturn]] void mismatch(std::string_view key, const char* expected, const Value& v) {
  throw Error(std::string(key) + ": expected " + expected + ", got " + describe(v));
}

template <class T>
Value numeric_array(ValueType elem, std::span<const T> v) {
  Value out;
  out.type = ValueType::ARRAY;
  out.array_type = elem;
  out.count = v.size();
  out.raw.resize(v.size_bytes());
  if (!v.empty()) std::memcpy(out.raw.data(), v.data(), v.size_bytes());
  return out;
}

template <class T>
std::vector<T> unpack(const Value& v, std::string_view key) {
  // Values built by hand (not by the reader) could disagree with themselves.
  if (v.raw.size() / sizeof(T) != v.count || v.raw.size() % sizeof(T) != 0)
    throw Error(std::string(key) + ": array holds " + std::to_string(v.raw.size()) +
                " bytes for " + std::to_string(v.count) + " elements");
  std::vector<T> out(v.count);
  if (v.count) std::memcpy(out.data(), v.raw.data(), v.raw.size());
  return out;
}

}  // namespace

Value Value::u32(uint32_t v) {
  Value out;
  out.type = ValueType::U32;
  out.u = v;
  return out;
}

Value Value::i32(int32_t v) {
  Value out;
  out.type = ValueType::I32;
  out.i = v;
  return out;
}

Value Value::u64(uint64_t v) {
  Value out;
  out.type = ValueType::U64;
  out.u = v;
  return out;
}

Value Value::f32(float v) {
  Value out;
  out.type = ValueType::F32;
  out.f = v;
  return out;
}

Value Value::boolean(bool v) {
  Value out;
  out.type = ValueType::BOOL;
  out.u = v ? 1 : 0;
  return out;
}

Value Value::string(std::string v) {
  Value out;
  out.type = ValueType::STRING;
  out.str = std::move(v);
  return out;
}

Value Value::string_array(std::vector<std::string> v) {
  Value out;
  out.type = ValueType::ARRAY;
  out.array_type = ValueType::STRING;
  out.count = v.size();
  out.strings = std::move(v);
  return out;
}

Value Value::f32_array(std::span<const float> v) { return numeric_array(ValueType::F32, v); }
Value Value::i32_array(std::span<const int32_t> v) { return numeric_array(ValueType::I32, v); }
Value Value::u8_array(std::span<const uint8_t> v) { return numeric_array(ValueType::U8, v); }

uint64_t Value::as_uint(std::string_view key) const {
  if (is_unsigned(type)) return u;
  if (is_signed(type)) {
    if (i < 0) throw Error(std::string(key) + ": expected a non-negative integer, got " + std::to_string(i));
    return static_cast<uint64_t>(i);
  }
  mismatch(key, "an unsigned integer", *this);
}

int64_t Value::as_int(std::string_view key) const {
  if (is_signed(type)) return i;
  if (is_unsigned(type)) {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw Error(std::string(key) + ": value " + std::to_string(u) + " does not fit in i64");
    return static_cast<int64_t>(u);
  }
  mismatch(key, "an integer", *this);
}

double Value::as_float(std::string_view key) const {
  if (type == ValueType::F32 || type == ValueType::F64) return f;
  mismatch(key, "f32 or f64", *this);
}

bool Value::as_bool(std::string_view key) const {
  if (type == ValueType::BOOL) return u != 0;
  mismatch(key, "bool", *this);
}

const std::string& Value::as_string(std::string_view key) const {
  if (type == ValueType::STRING) return str;
  mismatch(key, "string", *this);
}

const std::vector<std::string>& Value::as_string_array(std::string_view key) const {
  if (type == ValueType::ARRAY && array_type == ValueType::STRING) return strings;
  mismatch(key, "array of string", *this);
}

std::vector<float> Value::as_f32_array(std::string_view key) const {
  if (type == ValueType::ARRAY && array_type == ValueType::F32) return unpack<float>(*this, key);
  mismatch(key, "array of f32", *this);
}

std::vector<int32_t> Value::as_i32_array(std::string_view key) const {
  if (type == ValueType::ARRAY && array_type == ValueType::I32) return unpack<int32_t>(*this, key);
  mismatch(key, "array of i32", *this);
}

std::span<const uint8_t> Value::as_u8_array(std::string_view key) const {
  if (type == ValueType::ARRAY && array_type == ValueType::U8) return raw;
  mismatch(key, "array of u8", *this);
}

uint64_t Value::array_size() const { return type == ValueType::ARRAY ? count : 0; }

}  // namespace tern::gguf
