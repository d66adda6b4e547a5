#include "tokenizer/json_util.h"

#include <cstring>

#include "tern/error.h"
#include "tern/input_file.h"

namespace tern::tok {

Json read_json_file(const std::string& path, size_t max_bytes) {
  const std::string text = read_input_file(path, max_bytes, "a JSON file");
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) throw file_error(path, "not valid JSON");
  return j;
}

const Json* field(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string get_string(const Json& obj, const char* key, const std::string& what,
                       const std::string& fallback) {
  const Json* v = field(obj, key);
  if (!v) return fallback;
  if (!v->is_string()) throw Error(what + ": '" + key + "' is not a string");
  return v->get<std::string>();
}

bool get_bool(const Json& obj, const char* key, const std::string& what, bool fallback) {
  const Json* v = field(obj, key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw Error(what + ": '" + key + "' is not true or false");
  return v->get<bool>();
}

}  // namespace tern::tok
