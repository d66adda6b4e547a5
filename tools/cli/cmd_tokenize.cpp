// tern tokenize: llama-tokenize's flags and output, for any model file.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>

#include "cli/commands.h"
#include "tern/error.h"
#include "tern/input_file.h"
#include "tern/printable.h"

namespace tern::cli {
namespace {

struct TokenizeOptions {
  std::string model, prompt, file;
  bool from_stdin = false, ids = false, no_bos = false, no_parse_special = false, no_escape = false,
       show_count = false;
};

// llama.cpp's string_process_escapes: \n \r \t \' \" \\ and \xHH.
std::string process_escapes(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case 'x':
        if (i + 2 < s.size() + 0 && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
          out += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
          i += 2;
          break;
        }
        [[fallthrough]];
      default:
        out += '\\';
        out += c;
    }
  }
  return out;
}

std::string read_stdin() {
  std::string text;
  char buf[1 << 16];
  while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
    text.append(buf, size_t(std::cin.gcount()));
    if (text.size() > kMaxTextBytes) throw file_error("<stdin>", "over the " + byte_size(kMaxTextBytes) + " limit for a text");
  }
  if (std::cin.bad()) throw file_error("<stdin>", "read error");
  return text;
}

void run_tokenize(const TokenizeOptions& o) {
  const int sources = !o.prompt.empty() + !o.file.empty() + o.from_stdin;
  if (sources != 1) throw Error("tokenize: give exactly one of -p, -f and --stdin");
  std::string text = o.prompt;
  if (!o.file.empty()) {
    text = read_input_file(o.file, kMaxTextBytes, "a text file");
  } else if (o.from_stdin) {
    text = read_stdin();
  }
  if (!o.no_escape) text = process_escapes(text);

  const std::string path = o.model.empty() ? default_model_path() : o.model;
  const gguf::File f = gguf::File::open(path);  // the vocabulary only: no weights are touched
  const Tokenizer tok(f);
  print_notes(tok, path);
  EncodeOptions eo;
  eo.add_special = !o.no_bos;
  eo.parse_special = !o.no_parse_special;
  const std::vector<int32_t> ids = tok.encode(text, eo);

  std::string out;
  if (o.ids) {
    out += "[";
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
    out += "]\n";
  } else {
    // Pieces are llama-tokenize's bytes when piped; on a terminal a
    // vocabulary's escape sequences are shown, not obeyed.
    const bool terminal = ::isatty(STDOUT_FILENO);
    char num[16];
    for (int32_t id : ids) {
      std::snprintf(num, sizeof num, "%6d", id);
      const std::string piece = tok.token_piece(id);
      out += std::string(num) + " -> '" + (terminal ? printable(piece, true) : piece) + "'\n";
    }
  }
  if (o.show_count) out += "Total number of tokens: " + std::to_string(ids.size()) + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void add_tokenize(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "print the tokens of a text, as llama-tokenize");
  cmd->add_option("-m,--model", o->model, "GGUF model file (default: the bundled model)");
  cmd->add_option("-p,--prompt", o->prompt, "text to tokenize");
  cmd->add_option("-f,--file", o->file, "read the text from a file");
  cmd->add_flag("--stdin", o->from_stdin, "read the text from standard input");
  cmd->add_flag("--ids", o->ids, "print only the ids, as [1, 2, 3]");
  cmd->add_flag("--no-bos", o->no_bos, "add no BOS (or EOS) even where the model adds one");
  cmd->add_flag("--no-parse-special", o->no_parse_special, "special-token text stays text");
  cmd->add_flag("--no-escape", o->no_escape, "do not turn \\n, \\t, \\xHH ... into characters");
  cmd->add_flag("--show-count", o->show_count, "print the number of tokens");
  cmd->callback([o] { run_tokenize(*o); });
}

}  // namespace tern::cli
