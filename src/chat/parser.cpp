// Recursive descent over the tokens, following jinja2.parser.Parser's
// grammar and precedence (so `a + b | trim` is `a + (b | trim)`, and
// `x is defined` binds tighter than `not`). Nesting is bounded: the parser's
// own recursion and the height of every tree it builds.
#include <algorithm>

#include "ast.h"
#include "lexer.h"

namespace tern::chat::detail {

namespace {

constexpr int kMaxDepth = 200;   // nested parentheses, brackets, blocks, unary operators
constexpr int kMaxHeight = 400;  // any tree, e.g. a + b + c + ... chains

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  NodePtr program() { return subparse({}, "", 0, 0); }

 private:
  std::vector<Token> t_;
  size_t p_ = 0;
  int depth_ = 0;
  int loops_ = 0;

  struct Deeper {
    Parser& ps;
    explicit Deeper(Parser& p) : ps(p) {
      if (++ps.depth_ > kMaxDepth) ps.fail_here("template nested too deeply");
    }
    ~Deeper() { --ps.depth_; }
  };

  const Token& cur() const { return t_[p_]; }
  const Token& look(size_t n = 1) const { return t_[std::min(p_ + n, t_.size() - 1)]; }
  void next() {
    if (p_ + 1 < t_.size()) ++p_;
  }
  bool is_op(const char* o) const { return cur().type == Tok::Op && cur().text == o; }
  bool is_name(const char* n) const { return cur().type == Tok::Name && cur().text == n; }
  bool skip_op(const char* o) {
    if (!is_op(o)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case Tok::Data: return "template text";
      case Tok::VarBegin: return "'{{'";
      case Tok::VarEnd: return "end of print statement";
      case Tok::BlockBegin: return "'{%'";
      case Tok::BlockEnd: return "end of statement block";
      case Tok::Name: return "'" + t.text + "'";
      case Tok::String: return "string";
      case Tok::Int:
      case Tok::Float: return "number";
      case Tok::Op: return "'" + t.text + "'";
      case Tok::Eof: return "end of template";
    }
    return "token";
  }
  [[noreturn]] void fail_at(const Token& t, const std::string& msg) const { syntax_error(t.line, t.col, msg); }
  [[noreturn]] void fail_here(const std::string& msg) const { fail_at(cur(), msg); }
  [[noreturn]] void unexpected(const std::string& wanted) const {
    fail_here("expected " + wanted + ", got " + describe(cur()));
  }
  void expect_op(const char* o) {
    if (!skip_op(o)) unexpected(std::string("'") + o + "'");
  }
  void expect_block_end() {
    if (cur().type != Tok::BlockEnd) unexpected("end of statement block");
    next();
  }
  std::string expect_name() {
    if (cur().type != Tok::Name) unexpected("a name");
    std::string n = cur().text;
    next();
    return n;
  }

  NodePtr node(NK kind, const Token& at) const {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = at.line;
    n->col = at.col;
    return n;
  }
  NodePtr add(NodePtr n, NodePtr kid) const {
    if (kid) {
      n->height = std::max(n->height, kid->height + 1);
      if (n->height > kMaxHeight) syntax_error(n->line, n->col, "expression nested too deeply");
    }
    n->kids.push_back(std::move(kid));
    return n;
  }

  // ---------------------------------------------------------- statements

  // Statements up to a block tag named in `ends` (left unconsumed: the
  // current token is then that name).
  NodePtr subparse(const std::vector<std::string>& ends, const std::string& open_tag, int open_line,
                   int open_col) {
    Deeper d(*this);
    NodePtr body = node(NK::Body, cur());
    while (true) {
      const Token& tok = cur();
      switch (tok.type) {
        case Tok::Data: {
          NodePtr n = node(NK::Text, tok);
          n->name = tok.text;
          body = add(std::move(body), std::move(n));
          next();
          break;
        }
        case Tok::VarBegin: {
          NodePtr n = node(NK::Print, tok);
          next();
          n = add(std::move(n), tuple(true, false, {}));
          if (cur().type != Tok::VarEnd) unexpected("end of print statement");
          next();
          body = add(std::move(body), std::move(n));
          break;
        }
        case Tok::BlockBegin: {
          next();
          if (cur().type != Tok::Name) unexpected("a statement name");
          if (std::find(ends.begin(), ends.end(), cur().text) != ends.end()) return body;
          body = add(std::move(body), statement());
          break;
        }
        case Tok::Eof: {
          if (ends.empty()) return body;
          std::string want;
          for (size_t k = 0; k < ends.size(); ++k) want += (k ? " or '" : "'") + ends[k] + "'";
          fail_here("unexpected end of template, expected " + want + " to close the '" + open_tag +
                    "' block opened at " + std::to_string(open_line) + ":" + std::to_string(open_col));
        }
        default: fail_here("unexpected " + describe(tok));
      }
    }
  }

  NodePtr statement() {
    const Token& tok = cur();
    const std::string& n = tok.text;
    if (n == "for") return for_stmt();
    if (n == "if") return if_stmt();
    if (n == "set") return set_stmt();
    if (n == "break" || n == "continue") {
      if (loops_ == 0) fail_here("'" + n + "' outside a loop");
      NodePtr s = node(n == "break" ? NK::Break : NK::Continue, tok);
      next();
      expect_block_end();
      return s;
    }
    if (n == "generation") {
      NodePtr s = node(NK::Generation, tok);
      int line = tok.line, col = tok.col;
      next();
      expect_block_end();
      s = add(std::move(s), subparse({"endgeneration"}, "generation", line, col));
      next();
      expect_block_end();
      return s;
    }
    static const char* const unsupported[] = {"macro", "call",  "filter", "include", "import", "from",
                                              "extends", "block", "with", "autoescape", "do", "raw"};
    for (const char* u : unsupported)
      if (n == u) fail_here("the '" + n + "' tag is not supported");
    fail_here("unknown tag '" + n + "'");
  }

  // Assignment targets: a name, or names separated by commas (optionally
  // in parentheses).
  std::vector<std::string> targets(const char* stop) {
    std::vector<std::string> names;
    bool paren = skip_op("(");
    while (true) {
      names.push_back(expect_name());
      if (!skip_op(",")) break;
      if (paren ? is_op(")") : is_name(stop)) break;
    }
    if (paren) expect_op(")");
    return names;
  }

  NodePtr for_stmt() {
    const Token& at = cur();
    int line = at.line, col = at.col;
    NodePtr s = node(NK::For, at);
    next();
    s->names = targets("in");
    if (!skip_name("in")) unexpected("'in'");
    s = add(std::move(s), tuple(false, false, {"recursive"}));
    NodePtr cond;
    if (skip_name("if")) cond = expression(true);
    s = add(std::move(s), std::move(cond));
    if (is_name("recursive")) fail_here("recursive loops are not supported");
    expect_block_end();
    ++loops_;
    s = add(std::move(s), subparse({"endfor", "else"}, "for", line, col));
    --loops_;
    NodePtr else_body;
    if (skip_name("else")) {
      expect_block_end();
      else_body = subparse({"endfor"}, "for", line, col);
    }
    s = add(std::move(s), std::move(else_body));
    next();  // endfor
    expect_block_end();
    return s;
  }

  NodePtr if_stmt() {
    const Token& at = cur();
    int line = at.line, col = at.col;
    NodePtr s = node(NK::If, at);
    next();
    s = add(std::move(s), tuple(false, false, {}));
    expect_block_end();
    s = add(std::move(s), subparse({"elif", "else", "endif"}, "if", line, col));
    s = add(std::move(s), else_chain(line, col));
    next();  // endif
    expect_block_end();
    return s;
  }

  // After an if body: the elif and else branches, as nested ifs in the
  // else slot; leaves the current token at 'endif'.
  NodePtr else_chain(int line, int col) {
    std::vector<NodePtr> elifs;
    while (is_name("elif")) {
      NodePtr inner = node(NK::If, cur());
      next();
      inner = add(std::move(inner), tuple(false, false, {}));
      expect_block_end();
      inner = add(std::move(inner), subparse({"elif", "else", "endif"}, "if", line, col));
      elifs.push_back(std::move(inner));
    }
    NodePtr tail;
    if (skip_name("else")) {
      expect_block_end();
      tail = subparse({"endif"}, "if", line, col);
    }
    for (auto it = elifs.rbegin(); it != elifs.rend(); ++it) tail = add(std::move(*it), std::move(tail));
    return tail;
  }

  NodePtr set_stmt() {
    const Token& at = cur();
    int line = at.line, col = at.col;
    next();
    std::vector<std::string> names;
    std::string ns;
    if (cur().type == Tok::Name && look().type == Tok::Op && look().text == ".") {
      ns = expect_name();
      next();
      names.push_back(expect_name());
    } else {
      names = targets("=");
    }
    if (skip_op("=")) {
      NodePtr s = node(ns.empty() ? NK::Set : NK::SetAttr, at);
      s->name = ns;
      s->names = std::move(names);
      s = add(std::move(s), tuple(true, false, {}));
      expect_block_end();
      return s;
    }
    if (names.size() != 1) unexpected("'='");
    NodePtr s = node(NK::SetBlock, at);
    s->name = ns;
    s->names = std::move(names);
    NodePtr filt;
    if (is_op("|")) filt = filter_chain(nullptr);
    expect_block_end();
    s = add(std::move(s), subparse({"endset"}, "set", line, col));
    s = add(std::move(s), std::move(filt));
    next();  // endset
    expect_block_end();
    return s;
  }

  // --------------------------------------------------------- expressions

  bool tuple_end(const std::vector<const char*>& extra) const {
    if (cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd || is_op(")")) return true;
    for (const char* e : extra)
      if (is_name(e)) return true;
    return false;
  }

  NodePtr tuple(bool with_cond, bool explicit_parens, const std::vector<const char*>& extra) {
    const Token& at = cur();
    std::vector<NodePtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (tuple_end(extra)) break;
      items.push_back(expression(with_cond));
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) unexpected("an expression");
    }
    NodePtr n = node(NK::Tuple, at);
    for (auto& k : items) n = add(std::move(n), std::move(k));
    return n;
  }

  NodePtr expression(bool with_cond = true) { return with_cond ? condexpr() : or_expr(); }

  NodePtr condexpr() {
    NodePtr e = or_expr();
    while (is_name("if")) {
      NodePtr n = node(NK::Cond, cur());
      next();
      NodePtr test = or_expr();
      NodePtr other;
      if (skip_name("else")) {
        Deeper d(*this);
        other = condexpr();
      }
      n = add(std::move(n), std::move(test));
      n = add(std::move(n), std::move(e));
      n = add(std::move(n), std::move(other));
      e = std::move(n);
    }
    return e;
  }

  NodePtr or_expr() {
    NodePtr e = and_expr();
    while (is_name("or")) {
      NodePtr n = node(NK::Or, cur());
      next();
      n = add(std::move(n), std::move(e));
      e = add(std::move(n), and_expr());
    }
    return e;
  }

  NodePtr and_expr() {
    NodePtr e = not_expr();
    while (is_name("and")) {
      NodePtr n = node(NK::And, cur());
      next();
      n = add(std::move(n), std::move(e));
      e = add(std::move(n), not_expr());
    }
    return e;
  }

  NodePtr not_expr() {
    if (is_name("not")) {
      Deeper d(*this);
      NodePtr n = node(NK::Not, cur());
      next();
      return add(std::move(n), not_expr());
    }
    return compare();
  }

  NodePtr compare() {
    const Token& at = cur();
    NodePtr first = math1();
    NodePtr n;
    while (true) {
      std::string op;
      if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                    cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && look().type == Tok::Name && look().text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!n) {
        n = node(NK::Compare, at);
        n = add(std::move(n), std::move(first));
      }
      n->names.push_back(op);
      n = add(std::move(n), math1());
    }
    return n ? std::move(n) : std::move(first);
  }

  NodePtr binop(NodePtr left, BinOp op, NodePtr right, const Token& at) {
    NodePtr n = node(NK::Bin, at);
    n->op = op;
    n = add(std::move(n), std::move(left));
    return add(std::move(n), std::move(right));
  }

  NodePtr math1() {
    NodePtr e = concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = cur();
      BinOp op = cur().text == "+" ? BinOp::Add : BinOp::Sub;
      next();
      e = binop(std::move(e), op, concat(), at);
    }
    return e;
  }

  NodePtr concat() {
    const Token& at = cur();
    NodePtr e = math2();
    if (!is_op("~")) return e;
    NodePtr n = node(NK::Concat, at);
    n = add(std::move(n), std::move(e));
    while (skip_op("~")) n = add(std::move(n), math2());
    return n;
  }

  NodePtr math2() {
    NodePtr e = pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = cur();
      const std::string& o = cur().text;
      BinOp op = o == "*" ? BinOp::Mul : o == "/" ? BinOp::Div : o == "//" ? BinOp::FloorDiv : BinOp::Mod;
      next();
      e = binop(std::move(e), op, pow(), at);
    }
    return e;
  }

  NodePtr pow() {
    NodePtr e = unary(true);
    while (is_op("**")) {
      const Token& at = cur();
      next();
      e = binop(std::move(e), BinOp::Pow, unary(true), at);
    }
    return e;
  }

  NodePtr unary(bool with_filter) {
    NodePtr e;
    if (is_op("-") || is_op("+")) {
      Deeper d(*this);
      e = node(is_op("-") ? NK::Neg : NK::Pos, cur());
      next();
      e = add(std::move(e), unary(false));
    } else {
      e = primary();
    }
    e = postfix(std::move(e));
    if (with_filter) e = filter_expr(std::move(e));
    return e;
  }

  NodePtr primary() {
    Deeper d(*this);
    const Token& tok = cur();
    NodePtr n;
    switch (tok.type) {
      case Tok::Name:
        if (tok.text == "true" || tok.text == "True" || tok.text == "false" || tok.text == "False") {
          n = node(NK::Const, tok);
          n->value = Value::boolean(tok.text[0] == 't' || tok.text[0] == 'T');
        } else if (tok.text == "none" || tok.text == "None") {
          n = node(NK::Const, tok);
          n->value = Value::none();
        } else {
          n = node(NK::Name, tok);
          n->name = tok.text;
        }
        next();
        return n;
      case Tok::String: {
        n = node(NK::Const, tok);
        std::string s;
        while (cur().type == Tok::String) {
          s += cur().text;
          next();
        }
        if (s.size() > kMaxString) fail_at(tok, "string too long");
        n->value = Value::str(std::move(s));
        return n;
      }
      case Tok::Int:
        n = node(NK::Const, tok);
        n->value = Value::integer(tok.ival);
        next();
        return n;
      case Tok::Float:
        n = node(NK::Const, tok);
        n->value = Value::real(tok.fval);
        next();
        return n;
      case Tok::Op:
        if (tok.text == "(") {
          next();
          n = tuple(true, true, {});
          expect_op(")");
          return n;
        }
        if (tok.text == "[") {
          n = node(NK::List, tok);
          next();
          while (!is_op("]")) {
            if (!n->kids.empty()) expect_op(",");
            if (is_op("]")) break;
            n = add(std::move(n), expression());
          }
          expect_op("]");
          return n;
        }
        if (tok.text == "{") {
          n = node(NK::Dict, tok);
          next();
          while (!is_op("}")) {
            if (!n->kids.empty()) expect_op(",");
            if (is_op("}")) break;
            n = add(std::move(n), expression());
            expect_op(":");
            n = add(std::move(n), expression());
          }
          expect_op("}");
          return n;
        }
        break;
      default: break;
    }
    fail_here("unexpected " + describe(tok));
  }

  NodePtr postfix(NodePtr e) {
    while (true) {
      if (is_op(".")) {
        const Token& at = cur();
        next();
        const Token& a = cur();
        if (a.type == Tok::Name) {
          NodePtr n = node(NK::Attr, at);
          n->line = e->line;
          n->col = e->col;
          n->name = a.text;
          next();
          e = add(std::move(n), std::move(e));
        } else if (a.type == Tok::Int) {
          NodePtr k = node(NK::Const, a);
          k->value = Value::integer(a.ival);
          next();
          NodePtr n = node(NK::Item, at);
          n = add(std::move(n), std::move(e));
          e = add(std::move(n), std::move(k));
        } else {
          unexpected("a name or number");
        }
      } else if (is_op("[")) {
        const Token& at = cur();
        next();
        std::vector<NodePtr> args;
        while (!is_op("]")) {
          if (!args.empty()) expect_op(",");
          args.push_back(subscribed());
        }
        expect_op("]");
        NodePtr n = node(NK::Item, at);
        n->line = e->line;
        n->col = e->col;
        n = add(std::move(n), std::move(e));
        if (args.size() == 1) {
          n = add(std::move(n), std::move(args[0]));
        } else {
          NodePtr tup = node(NK::Tuple, at);
          for (auto& a : args) tup = add(std::move(tup), std::move(a));
          n = add(std::move(n), std::move(tup));
        }
        e = std::move(n);
      } else if (is_op("(")) {
        e = call(std::move(e));
      } else {
        return e;
      }
    }
  }

  NodePtr subscribed() {
    const Token& at = cur();
    NodePtr start;
    if (!skip_op(":")) {
      NodePtr e = expression();
      if (!skip_op(":")) return e;
      start = std::move(e);
    }
    NodePtr s = node(NK::Slice, at);
    s = add(std::move(s), std::move(start));
    NodePtr stop, step;
    if (!is_op(":") && !is_op("]") && !is_op(",")) stop = expression();
    if (skip_op(":"))
      if (!is_op("]") && !is_op(",")) step = expression();
    s = add(std::move(s), std::move(stop));
    return add(std::move(s), std::move(step));
  }

  // Arguments of a call, filter or test, appended to `n` after kids[0].
  NodePtr call_args(NodePtr n) {
    expect_op("(");
    while (!is_op(")")) {
      if (n->kids.size() > 1) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*") || is_op("**")) fail_here("*args and **kwargs are not supported");
      if (cur().type == Tok::Name && look().type == Tok::Op && look().text == "=") {
        n->names.push_back(cur().text);
        next();
        next();
        n = add(std::move(n), expression());
      } else {
        if (!n->names.empty()) fail_here("positional argument after keyword argument");
        ++n->npos;
        n = add(std::move(n), expression());
      }
    }
    expect_op(")");
    return n;
  }

  NodePtr call(NodePtr callee) {
    NodePtr n = node(NK::Call, cur());
    n = add(std::move(n), std::move(callee));
    return call_args(std::move(n));
  }

  NodePtr filter_chain(NodePtr e) {
    while (skip_op("|")) {
      const Token& at = cur();
      std::string name = expect_name();
      while (skip_op(".")) {
        name += '.';
        name += expect_name();
      }
      NodePtr n = node(NK::Filter, at);
      n->name = name;
      n->filter = find_filter(name);
      if (!n->filter) fail_at(at, "unknown filter '" + name + "'");
      n = add(std::move(n), std::move(e));
      if (is_op("(")) n = call_args(std::move(n));
      e = std::move(n);
    }
    return e;
  }

  NodePtr filter_expr(NodePtr e) {
    while (true) {
      if (is_op("|")) {
        e = filter_chain(std::move(e));
      } else if (is_name("is")) {
        const Token& at = cur();
        next();
        bool negated = skip_name("not");
        const Token& nt = cur();
        std::string name = expect_name();
        while (skip_op(".")) {
        name += '.';
        name += expect_name();
      }
        NodePtr n = node(NK::Test, nt);
        n->name = name;
        n->test = find_test(name);
        if (!n->test) fail_at(nt, "unknown test '" + name + "'");
        n = add(std::move(n), std::move(e));
        if (is_op("(")) {
          n = call_args(std::move(n));
        } else if ((cur().type == Tok::Name || cur().type == Tok::String || cur().type == Tok::Int ||
                    cur().type == Tok::Float || is_op("(") || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          if (is_name("is")) fail_here("you cannot chain multiple tests with is");
          ++n->npos;
          n = add(std::move(n), postfix(primary()));
        }
        if (negated) {
          NodePtr neg = node(NK::Not, at);
          n = add(std::move(neg), std::move(n));
        }
        e = std::move(n);
      } else if (is_op("(")) {
        e = call(std::move(e));
      } else {
        return e;
      }
    }
  }
};

}  // namespace

NodePtr parse_program(std::string_view source) { return Parser(lex(source)).program(); }

}  // namespace tern::chat::detail
