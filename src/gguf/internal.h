// Helpers shared by the reader, writer and Value; not part of the public API.
#pragma once
#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

#include "tern/gguf.h"

namespace tern::gguf::detail {

// GGUF is little-endian on disk and we copy scalars with memcpy, so a
// big-endian host would silently misread every file.
static_assert(std::endian::native == std::endian::little, "tern assumes a little-endian host");

inline constexpr uint32_t kVersion = 3;
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;
inline constexpr char kAlignmentKey[] = "general.alignment";

// Short type names used in messages: "u32", "string", "array".
const char* value_type_name(ValueType t);
bool known_value_type(uint32_t id);
// On-disk size of one scalar of type `t`; 0 for STRING and ARRAY.
uint64_t scalar_size(ValueType t);
// "array of f32" for arrays, otherwise the plain type name (or the value of a
// negative integer when that is why an as_uint() failed).
std::string describe(const Value& v);

// A name from the file, quoted for an error message: control characters
// become '?' and very long names are cut, so the message stays one short line.
std::string quoted(std::string_view s);

inline bool is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace tern::gguf::detail
