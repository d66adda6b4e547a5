// Parsed templates: one Node type for expressions and statements.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "value.h"

namespace tern::chat::detail {

enum class NK {
  // expressions
  Const,    // value
  Name,     // name
  List,     // kids: items
  Tuple,    // kids: items
  Dict,     // kids: key, value, key, value, ...
  Attr,     // kids[0].name
  Item,     // kids[0][kids[1]]
  Slice,    // kids: start, stop, step (each may be null)
  Call,     // kids[0](kids[1..npos], names[k] = kids[1+npos+k])
  Filter,   // kids[0] (null in a set block) | name(kids[1..], same layout as Call)
  Test,     // kids[0] is name(kids[1..])
  Not,      // not kids[0]
  Neg,      // -kids[0]
  Pos,      // +kids[0]
  Bin,      // kids[0] op kids[1]
  Concat,   // kids[0] ~ kids[1] ~ ...
  Compare,  // kids[0] names[0] kids[1] names[1] kids[2] ...
  And,      // kids[0] and kids[1]
  Or,       // kids[0] or kids[1]
  Cond,     // kids[1] if kids[0] else kids[2] (kids[2] may be null)
  // statements
  Text,      // name: the text
  Print,     // {{ kids[0] }}
  Body,      // kids: statements
  If,        // if kids[0]: kids[1] else kids[2] (may be null)
  For,       // for names in kids[0] if kids[1]: kids[2] else kids[3]
  Set,       // set names = kids[0]
  SetAttr,   // set name.names[0] = kids[0]
  SetBlock,  // set names[0] (or name.names[0] when name is set) = render(kids[0]) | kids[1]
  Break,
  Continue,
  Generation,  // {% generation %} kids[0] {% endgeneration %}
};

struct Interp;
struct Node;
using NodePtr = std::unique_ptr<Node>;
using FilterFn = Value (*)(Interp&, const Value&, CallArgs&);
using TestFn = bool (*)(Interp&, const Value&, CallArgs&);

struct Node {
  NK kind;
  int line = 0, col = 0;
  int height = 1;  // of the subtree, bounded so evaluation cannot overflow the stack
  std::string name;
  std::vector<std::string> names;
  Value value;
  BinOp op = BinOp::Add;
  int npos = 0;
  FilterFn filter = nullptr;
  TestFn test = nullptr;
  std::vector<NodePtr> kids;
};

FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// The whole template: its statements.
NodePtr parse_program(std::string_view source);

}  // namespace tern::chat::detail
