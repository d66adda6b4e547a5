// Evaluation of parsed templates with jinja2's runtime semantics: Python
// operators, the sandbox's attribute and item lookup (missing → undefined),
// a fresh scope per loop iteration, loop controls.
#include <algorithm>

#include "interp.h"
#include "lexer.h"

namespace tern::chat::detail {

namespace {
constexpr size_t kMaxOutput = size_t{16} << 20;

std::string where(const Node& n) { return std::to_string(n.line) + ":" + std::to_string(n.col) + ": "; }
}  // namespace

struct Program {
  NodePtr root;
};

void Interp::tick() { spend(2); }

Value Interp::lookup(const std::string& name) {
  for (Scope* s = scope; s; s = s->parent)
    if (Value* v = s->find(name)) return *v;
  return Value::undefined("'" + name + "' is undefined");
}

Value Interp::getattr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  Value m;
  if (find_method(obj, name, m)) return m;
  switch (obj.kind) {
    case Value::Kind::Dict:
      if (const Value* v = obj.dict->find(std::string_view(name))) return *v;
      break;
    case Value::Kind::Namespace:
      for (const auto& [k, v] : obj.ns->attrs)
        if (k == name) return v;
      break;
    case Value::Kind::Loop: {
      const LoopData& l = *obj.loop;
      int64_t i = static_cast<int64_t>(l.index), n = static_cast<int64_t>(l.items->size());
      if (name == "index") return Value::integer(i + 1);
      if (name == "index0") return Value::integer(i);
      if (name == "revindex") return Value::integer(n - i);
      if (name == "revindex0") return Value::integer(n - i - 1);
      if (name == "first") return Value::boolean(i == 0);
      if (name == "last") return Value::boolean(i == n - 1);
      if (name == "length") return Value::integer(n);
      if (name == "depth") return Value::integer(1);
      if (name == "depth0") return Value::integer(0);
      if (name == "previtem")
        return i > 0 ? (*l.items)[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item");
      if (name == "nextitem")
        return i + 1 < n ? (*l.items)[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item");
      break;
    }
    default: break;
  }
  return Value::undefined(std::string("'") + type_name(obj) + " object' has no attribute '" + name + "'");
}

Value Interp::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (key.is_undefined() && !obj.is_dict()) {
    // obj[Undefined]: a list index must be an int, so TypeError → undefined
    return Value::undefined("invalid index");
  }
  switch (obj.kind) {
    case Value::Kind::Dict: {
      bool hashable = !(key.is_dict() || (key.is_list() && !key.tuple));
      if (hashable)
        if (const Value* v = obj.dict->find(key)) return *v;
      break;
    }
    case Value::Kind::List:
    case Value::Kind::String:
      if (key.is_integral()) {
        int64_t len = obj.is_list() ? static_cast<int64_t>(obj.list->size()) : -1;
        std::u32string chars;
        if (obj.is_str()) {
          chars = decode_utf8(obj.text());
          len = static_cast<int64_t>(chars.size());
        }
        int64_t k = key.i < 0 ? key.i + len : key.i;
        if (k < 0 || k >= len)
          return Value::undefined(std::string("'") + type_name(obj) + " object' has no element " +
                                  std::to_string(key.i));
        if (obj.is_list()) return (*obj.list)[static_cast<size_t>(k)];
        std::string s;
        append_utf8(s, chars[static_cast<size_t>(k)]);
        return Value::str(std::move(s));
      }
      break;
    default: break;
  }
  if (key.is_str()) return getattr(obj, key.text());
  return Value::undefined(std::string("'") + type_name(obj) + " object' has no element " + repr(key));
}

Value Interp::call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) fail_undefined(fn);
  if (fn.kind != Value::Kind::Func) throw_eval(std::string("'") + type_name(fn) + "' object is not callable");
  return fn.fn->call(*this, fn.fn->self, args);
}

void Interp::eval_args(const Node& n, size_t first, CallArgs& args) {
  size_t npos = static_cast<size_t>(n.npos);
  for (size_t k = 0; k < npos; ++k) args.pos.push_back(eval(*n.kids[first + k]));
  for (size_t k = 0; k < n.names.size(); ++k) args.kw.emplace_back(n.names[k], eval(*n.kids[first + npos + k]));
}

Value Interp::eval(const Node& n) {
  try {
    return eval_inner(n);
  } catch (const EvalError& e) {
    throw Error("chat template: " + where(n) + e.what());
  }
}

Value Interp::eval_inner(const Node& n) {
  tick();
  switch (n.kind) {
    case NK::Const: return n.value;
    case NK::Name: return lookup(n.name);
    case NK::List:
    case NK::Tuple: {
      List items;
      for (const auto& k : n.kids) items.push_back(eval(*k));
      return Value::make_list(std::move(items), n.kind == NK::Tuple);
    }
    case NK::Dict: {
      DictData d;
      for (size_t k = 0; k + 1 < n.kids.size(); k += 2) {
        Value key = eval(*n.kids[k]);
        d.set(key, eval(*n.kids[k + 1]));
      }
      return Value::make_dict(std::move(d));
    }
    case NK::Attr: return getattr(eval(*n.kids[0]), n.name);
    case NK::Item: {
      Value obj = eval(*n.kids[0]);
      const Node& key = *n.kids[1];
      if (key.kind == NK::Slice) {
        auto part = [&](size_t k) { return key.kids[k] ? eval(*key.kids[k]) : Value::none(); };
        Value a = part(0), b = part(1), c = part(2);
        if (obj.is_undefined()) fail_undefined(obj);
        return slice_value(obj, a, b, c);
      }
      return getitem(obj, eval(key));
    }
    case NK::Slice: throw_eval("slice outside a subscript");
    case NK::Call: {
      Value fn = eval(*n.kids[0]);
      CallArgs args;
      eval_args(n, 1, args);
      return call(fn, args);
    }
    case NK::Filter: {
      Value v = eval(*n.kids[0]);
      CallArgs args;
      eval_args(n, 1, args);
      return n.filter(*this, v, args);
    }
    case NK::Test: {
      Value v = eval(*n.kids[0]);
      CallArgs args;
      eval_args(n, 1, args);
      return Value::boolean(n.test(*this, v, args));
    }
    case NK::Not: return Value::boolean(!truthy(eval(*n.kids[0])));
    case NK::Neg: return negate(eval(*n.kids[0]));
    case NK::Pos: {
      Value v = eval(*n.kids[0]);
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_number()) throw_eval(std::string("bad operand type for unary +: '") + type_name(v) + "'");
      return v.kind == Value::Kind::Bool ? Value::integer(v.i) : v;
    }
    case NK::Bin: {
      Value a = eval(*n.kids[0]);
      Value b = eval(*n.kids[1]);
      return binary(n.op, a, b);
    }
    case NK::Concat: {
      std::string s;
      for (const auto& k : n.kids) {
        Value v = eval(*k);
        if (v.is_str())
          append_bounded(s, v.text());
        else
          append_bounded(s, to_str(v));
      }
      return Value::str(std::move(s));
    }
    case NK::Compare: {
      Value left = eval(*n.kids[0]);
      for (size_t k = 0; k < n.names.size(); ++k) {
        Value right = eval(*n.kids[k + 1]);
        const std::string& op = n.names[k];
        bool ok;
        if (op == "==") {
          ok = py_equal(left, right);
        } else if (op == "!=") {
          ok = !py_equal(left, right);
        } else if (op == "in") {
          ok = py_contains(right, left);
        } else if (op == "notin") {
          ok = !py_contains(right, left);
        } else {
          int c = py_compare(left, right);
          ok = op == "<" ? c == -1 : op == "<=" ? (c == -1 || c == 0) : op == ">" ? c == 1 : (c == 1 || c == 0);
        }
        if (!ok) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case NK::And: {
      Value a = eval(*n.kids[0]);
      return truthy(a) ? eval(*n.kids[1]) : a;
    }
    case NK::Or: {
      Value a = eval(*n.kids[0]);
      return truthy(a) ? a : eval(*n.kids[1]);
    }
    case NK::Cond:
      if (truthy(eval(*n.kids[0]))) return eval(*n.kids[1]);
      if (n.kids[2]) return eval(*n.kids[2]);
      return Value::undefined("the inline if-expression on line " + std::to_string(n.line) +
                              " evaluated to false and no else section was defined.");
    default: throw_eval("statement used as an expression");
  }
}

Flow Interp::exec(const Node& n) {
  try {
    return exec_inner(n);
  } catch (const EvalError& e) {
    throw Error("chat template: " + where(n) + e.what());
  }
}

static void assign_targets(Scope& scope, const std::vector<std::string>& names, const Value& v) {
  if (names.size() == 1) {
    scope.set(names[0], v);
    return;
  }
  List items = iterate(v);
  if (items.size() > names.size())
    throw_eval("too many values to unpack (expected " + std::to_string(names.size()) + ")");
  if (items.size() < names.size())
    throw_eval("not enough values to unpack (expected " + std::to_string(names.size()) + ", got " +
               std::to_string(items.size()) + ")");
  for (size_t k = 0; k < names.size(); ++k) scope.set(names[k], items[k]);
}

Flow Interp::exec_inner(const Node& n) {
  tick();
  switch (n.kind) {
    case NK::Text: out += n.name; break;
    case NK::Print: out += to_str(eval(*n.kids[0])); break;
    case NK::Body:
      for (const auto& k : n.kids) {
        Flow f = exec(*k);
        if (f != Flow::Normal) return f;
      }
      break;
    case NK::If:
      if (truthy(eval(*n.kids[0]))) return exec(*n.kids[1]);
      if (n.kids[2]) return exec(*n.kids[2]);
      break;
    case NK::For: return exec_for(n);
    case NK::Set: assign_targets(*scope, n.names, eval(*n.kids[0])); break;
    case NK::SetAttr: {
      Value target = lookup(n.name);
      Value v = eval(*n.kids[0]);
      if (target.kind != Value::Kind::Namespace) throw_eval("cannot assign attribute on non-namespace object");
      auto& attrs = target.ns->attrs;
      auto it = std::find_if(attrs.begin(), attrs.end(), [&](const auto& kv) { return kv.first == n.names[0]; });
      if (it != attrs.end())
        it->second = std::move(v);
      else
        attrs.emplace_back(n.names[0], std::move(v));
      break;
    }
    case NK::SetBlock: {
      std::string saved = std::move(out);
      out.clear();
      Flow f = exec(*n.kids[0]);
      std::string body = std::move(out);
      out = std::move(saved);
      if (f != Flow::Normal) return f;
      Value v = Value::str(std::move(body));
      if (const Node* filt = n.kids[1].get()) {
        // apply the filter chain, innermost (null operand) first
        std::vector<const Node*> chain;
        for (const Node* f2 = filt; f2; f2 = f2->kids[0].get()) chain.push_back(f2);
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
          CallArgs args;
          eval_args(**it, 1, args);
          v = (*it)->filter(*this, v, args);
        }
      }
      if (n.name.empty()) {
        scope->set(n.names[0], v);
      } else {
        Value target = lookup(n.name);
        if (target.kind != Value::Kind::Namespace) throw_eval("cannot assign attribute on non-namespace object");
        auto& attrs = target.ns->attrs;
        auto it = std::find_if(attrs.begin(), attrs.end(), [&](const auto& kv) { return kv.first == n.names[0]; });
        if (it != attrs.end())
          it->second = v;
        else
          attrs.emplace_back(n.names[0], v);
      }
      break;
    }
    case NK::Break: return Flow::Break;
    case NK::Continue: return Flow::Continue;
    case NK::Generation: return exec(*n.kids[0]);
    default: throw_eval("expression used as a statement");
  }
  if (out.size() > kMaxOutput) throw_eval("the output is too long");
  return Flow::Normal;
}

Flow Interp::exec_for(const Node& n) {
  Value seq = eval(*n.kids[0]);
  List items = iterate(seq);
  if (const Node* cond = n.kids[1].get()) {
    List kept;
    for (const Value& x : items) {
      Scope s{{}, scope};
      assign_targets(s, n.names, x);
      Scope* saved = scope;
      scope = &s;
      bool keep;
      try {
        keep = truthy(eval(*cond));
      } catch (...) {
        scope = saved;
        throw;
      }
      scope = saved;
      if (keep) kept.push_back(x);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (n.kids[3]) return exec(*n.kids[3]);
    return Flow::Normal;
  }
  Value loop;
  loop.kind = Value::Kind::Loop;
  loop.loop = std::make_shared<LoopData>();
  loop.loop->items = std::make_shared<const List>(std::move(items));
  const List& all = *loop.loop->items;
  Scope* saved = scope;
  try {
    for (size_t k = 0; k < all.size(); ++k) {
      spend(4);  // a scope, its variables
      loop.loop->index = k;
      Scope s{{}, saved};
      assign_targets(s, n.names, all[k]);
      s.set("loop", loop);
      scope = &s;
      Flow f = exec(*n.kids[2]);
      scope = saved;
      if (f == Flow::Break) break;
    }
  } catch (...) {
    scope = saved;
    throw;
  }
  return Flow::Normal;
}

}  // namespace tern::chat::detail

namespace tern::chat {

using namespace detail;

Template::Template(std::unique_ptr<Program> program) : program_(std::move(program)) {}
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

Template Template::parse(std::string_view source) {
  auto p = std::make_unique<Program>();
  try {
    p->root = parse_program(source);
  } catch (const EvalError& e) {  // a limit on values, say
    throw Error(std::string("chat template: ") + e.what());
  }
  return Template(std::move(p));
}

std::string Template::render(const std::vector<Message>& messages, const RenderOptions& options) const {
  // Real templates do a few passes over the conversation: a long one gets
  // a budget to match (2 units a byte: a trim of every message is 1/2).
  uint64_t input = options.bos_token.size() + options.eos_token.size();
  for (const Message& m : messages) input += m.role.size() + m.content.size();
  for (const auto& [name, json] : options.extra) input += name.size() + json.size();
  Budget budget(options.work_budget + 2 * input);
  Interp in(options);
  Scope globals;
  Scope root{{}, &globals};
  try {
    // The arguments become values under the same limits (a message longer
    // than kMaxString, say), reported as tern::Error like the rest.
    install_globals(globals);
    List msgs;
    for (const Message& m : messages) {
      DictData d;
      d.set(Value::str("role"), Value::str(m.role));
      d.set(Value::str("content"), Value::str(m.content));
      msgs.push_back(Value::make_dict(std::move(d)));
    }
    root.set("messages", Value::make_list(std::move(msgs)));
    root.set("tools", Value::none());
    root.set("documents", Value::none());
    root.set("add_generation_prompt", Value::boolean(options.add_generation_prompt));
    root.set("bos_token", Value::str(options.bos_token));
    root.set("eos_token", Value::str(options.eos_token));
    for (const auto& [name, json] : options.extra) root.set(name, parse_json(json, name));
  } catch (const EvalError& e) {
    throw Error(std::string("chat template: ") + e.what());
  }
  in.scope = &root;
  in.exec(*program_->root);
  return std::move(in.out);
}

}  // namespace tern::chat
