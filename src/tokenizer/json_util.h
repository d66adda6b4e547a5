// Reading the JSON files of a checkpoint's tokenizer with bounded size and
// errors that name the file.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tern::tok {

using Json = nlohmann::json;

// The whole file as JSON; throws tern::Error "path: problem" (missing,
// larger than max_bytes, not JSON).
Json read_json_file(const std::string& path, size_t max_bytes);

struct Spec;
Spec parse_tokenizer_json(const Json& j, const std::string& path);

// Typed field access that throws tern::Error(what + ": problem") instead of
// nlohmann's exceptions, for untrusted files.
const Json* field(const Json& obj, const char* key);  // null if absent or JSON null
std::string get_string(const Json& obj, const char* key, const std::string& what,
                       const std::string& fallback = {});
bool get_bool(const Json& obj, const char* key, const std::string& what, bool fallback);

}  // namespace tern::tok
