// libFuzzer target for the GGUF reader: any input must either parse or throw
// tern::Error. Everything reachable from a parsed File is walked so that
// ASan/UBSan see every pointer and size the parser hands out.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tern/error.h"
#include "tern/gguf.h"

namespace {

volatile uint64_t g_sink;  // keeps the walk from being optimised away

void walk_value(const std::string& key, const tern::gguf::Value& v) {
  using tern::gguf::ValueType;
  uint64_t h = key.size();
  // Accessors on the wrong type must throw cleanly too.
  try { h += v.as_uint(key); } catch (const tern::Error&) {}
  try { h += static_cast<uint64_t>(v.as_int(key)); } catch (const tern::Error&) {}
  try { h += v.as_float(key) != 0; } catch (const tern::Error&) {}
  try { h += v.as_bool(key); } catch (const tern::Error&) {}
  try { h += v.as_string(key).size(); } catch (const tern::Error&) {}
  try {
    for (const auto& s : v.as_string_array(key)) h += s.size() ? static_cast<uint8_t>(s.back()) : 0;
  } catch (const tern::Error&) {}
  try { for (float f : v.as_f32_array(key)) h += f > 0; } catch (const tern::Error&) {}
  try { for (int32_t x : v.as_i32_array(key)) h += static_cast<uint32_t>(x); } catch (const tern::Error&) {}
  try { for (uint8_t x : v.as_u8_array(key)) h += x; } catch (const tern::Error&) {}
  if (v.type == ValueType::ARRAY) {
    h += v.array_size();
    for (uint8_t x : v.raw) h += x;
  }
  g_sink = g_sink + h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto file = tern::gguf::File::parse({data, size}, "fuzz.gguf");
    for (const auto& [key, value] : file.metadata()) {
      walk_value(key, value);
      if (file.find(key) == nullptr) __builtin_trap();
    }
    for (const auto& t : file.tensors()) {
      // Touch the first and last byte of every tensor: both must be mapped.
      uint64_t h = t.data[0] + t.data[t.nbytes - 1] + t.n_elements() + t.shape_string().size();
      if (t.data < data || t.data + t.nbytes > data + size) __builtin_trap();
      if (file.find_tensor(t.name) != &t) __builtin_trap();
      try {
        file.tensor(t.name, {&t.type, 1}, t.dims);
      } catch (const tern::Error&) {
        __builtin_trap();  // a tensor must match its own type and shape
      }
      g_sink = g_sink + h;
    }
  } catch (const tern::Error&) {
  }
  return 0;
}
