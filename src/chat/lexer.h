// Template source → tokens, with jinja2's whitespace handling applied to the
// text between tags: newlines normalized and one trailing newline dropped
// (keep_trailing_newline=False), `-` strips, trim_blocks drops the newline
// after a block or comment tag, lstrip_blocks drops the indentation before
// one, `+` turns either off.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::chat::detail {

enum class Tok { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };

struct Token {
  Tok type;
  std::string text;  // data, name, decoded string value, operator
  int64_t ival = 0;
  double fval = 0;
  int line = 1, col = 1;
};

// Throws tern::Error("chat template: LINE:COL: ...").
std::vector<Token> lex(std::string_view source);

[[noreturn]] void syntax_error(int line, int col, const std::string& msg);

}  // namespace tern::chat::detail
