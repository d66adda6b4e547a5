// The renderer's state, shared by the evaluator (render.cpp) and the
// built-in filters and tests (builtins.cpp), methods and globals (methods.cpp).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "ast.h"
#include "tern/chat_template.h"
#include "value.h"

namespace tern::chat::detail {

// Variables: the globals, the render arguments and top-level sets in the
// root scope; each for-loop iteration gets a fresh scope, as in jinja2.
struct Scope {
  std::vector<std::pair<std::string, Value>> vars;
  Scope* parent = nullptr;
  Value* find(std::string_view name) {
    for (auto& [k, v] : vars)
      if (k == name) return &v;
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    if (Value* old = find(name))
      *old = std::move(v);
    else
      vars.emplace_back(name, std::move(v));
  }
};

enum class Flow { Normal, Break, Continue };

struct Interp {
  const RenderOptions& opts;
  std::string out;
  Scope* scope = nullptr;

  // Every namespace made during the render: values cannot outlive it, so
  // the destructor empties them, breaking cycles like `set ns.me = ns`.
  std::vector<std::shared_ptr<NamespaceData>> namespaces;

  explicit Interp(const RenderOptions& o) : opts(o) {}
  ~Interp() {
    for (auto& ns : namespaces) ns->attrs.clear();
  }
  Interp(const Interp&) = delete;
  Interp& operator=(const Interp&) = delete;

  void tick();  // counts work; throws when a template runs away
  Value lookup(const std::string& name);
  // jinja2's sandboxed getattr / getitem: missing things are undefined.
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);
  Value call(const Value& fn, CallArgs& args);

  Value eval(const Node& n);
  Flow exec(const Node& n);

 private:
  Value eval_inner(const Node& n);
  Flow exec_inner(const Node& n);
  Flow exec_for(const Node& n);
  void eval_args(const Node& n, size_t first, CallArgs& args);
};

// Looks up a method of str, dict or list, or loop.cycle: true with `out` a
// bound method (or, for a mutating method the immutable sandbox refuses, an
// undefined value that fails when called); false when there is none.
bool find_method(const Value& obj, const std::string& name, Value& out);
void install_globals(Scope& scope);
Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step);

}  // namespace tern::chat::detail
