// Chat templates: the Jinja2 subset that Hugging Face chat templates use,
// rendered exactly as transformers' apply_chat_template renders them
// (jinja2 ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
// loop controls; globals raise_exception and strftime_now; tojson as
// json.dumps(ensure_ascii=False)). Library code: errors are tern::Error
// exceptions whose message starts with "chat template: ".
#pragma once
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::chat {

struct Message {
  std::string role, content;
};

struct RenderOptions {
  bool add_generation_prompt = true;
  std::string bos_token, eos_token;
  // Further template variables, each a name and a JSON value, e.g.
  // {"date_string", "\"26 Jul 2024\""} or {"tools", "[{...}]"}. Like
  // transformers, `tools` and `documents` are none unless given here.
  std::vector<std::pair<std::string, std::string>> extra;
  // The time strftime_now() formats (local time); 0 means now.
  std::time_t now = 0;
  // Work a render may spend (value.h's units: about 64 bytes of string
  // made, or half a statement) besides 2 per byte of input; past it,
  // render throws "the template runs too long". The published templates
  // render a short chat with tools in under 2,000; the default leaves room
  // for long conversations and tool lists, and a fuzzer sets less to spend
  // its time on more inputs.
  uint64_t work_budget = 2'000'000;
};

namespace detail {
struct Program;
}

// A parsed template: parse once, render many times. Not copyable; movable.
class Template {
 public:
  // Throws tern::Error("chat template: LINE:COL: problem") for malformed
  // templates: unclosed tags or blocks, unknown tags, filters or tests, bad
  // expressions, nesting deeper than the parser allows.
  static Template parse(std::string_view source);

  // Throws tern::Error for runtime errors (undefined values used, type
  // errors) and for raise_exception("msg"), whose message it carries.
  std::string render(const std::vector<Message>& messages, const RenderOptions& options) const;

  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;
  ~Template();

 private:
  explicit Template(std::unique_ptr<detail::Program> program);
  std::unique_ptr<detail::Program> program_;
};

// Built-in templates for `--chat-template NAME`, the exact strings of the
// models' tokenizer_config.json (see tests/data/chat/README.md); nullptr for
// an unknown name.
const char* builtin_template(std::string_view name);
std::vector<std::string> builtin_template_names();

}  // namespace tern::chat
