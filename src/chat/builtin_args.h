// Internal to src/chat: argument checks and string helpers shared by the
// filters and tests (builtins.cpp) and the methods and globals
// (methods.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "interp.h"

namespace tern::chat::detail {

// A builtin's arguments, named as in Python's signature.
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

const std::string& need_str(const Value& v, const char* what);
int64_t need_int(const Value& v, const char* what);
// str.splitlines: Python's line boundaries, not only "\n".
std::vector<std::u32string> splitlines(const std::u32string& s, bool keepends);
// str.replace, bounded by kMaxString as it grows.
std::string py_replace(const std::string& s, const std::string& old, const std::string& rep, int64_t count);
// Bit 0: s has a cased character; bit 1: an uppercase one; bit 2: a lowercase one.
int case_state(const std::string& s);

}  // namespace tern::chat::detail
