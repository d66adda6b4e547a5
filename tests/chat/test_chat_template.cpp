// Chat templates against jinja2 itself: every golden in
// tests/data/chat/goldens.json (made by tests/tools/render_chat_goldens.py
// with the environment transformers uses) must come out byte for byte, and
// every error there must be an error here. Then parse errors, nesting limits
// and the expression language one feature at a time.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tern/chat_template.h"
#include "tern/error.h"

namespace {

using json = nlohmann::ordered_json;
using tern::chat::Message;
using tern::chat::RenderOptions;
using tern::chat::Template;

const std::string kDataDir = std::string(TERN_SOURCE_DIR) + "/tests/data/chat/";

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f) << path;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

const json& goldens() {
  static const json g = json::parse(read_file(kDataDir + "goldens.json"));
  return g;
}

// Renders `source` with the variables of a snippet (all passed as extras).
std::string render_vars(const std::string& source, const json& vars, const std::vector<Message>& messages = {}) {
  RenderOptions opt;
  for (const auto& [k, v] : vars.items()) opt.extra.emplace_back(k, v.dump());
  return Template::parse(source).render(messages, opt);
}

std::string render(const std::string& source) { return render_vars(source, json::object()); }

// The message of the tern::Error that `fn` throws ("" if none).
template <typename F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const tern::Error& e) {
    return e.what();
  }
  return "";
}

TEST(ChatGoldens, EveryTemplateCaseMatchesJinja) {
  std::map<std::string, Template> parsed;
  for (const std::string name : goldens()["templates"]) parsed.emplace(name, Template::parse(read_file(kDataDir + name + ".jinja")));
  size_t checked = 0;
  for (const json& c : goldens()["cases"]) {
    std::vector<Message> messages;
    for (const json& m : c["messages"]) messages.push_back({m["role"], m["content"]});
    RenderOptions opt;
    opt.add_generation_prompt = c["add_generation_prompt"];
    opt.bos_token = c["bos_token"];
    opt.eos_token = c["eos_token"];
    for (const auto& [k, v] : c["extra"].items()) opt.extra.emplace_back(k, v.dump());
    const Template& t = parsed.at(c["template"]);
    std::string what = std::string(c["template"]) + " / " + std::string(c["conversation"]) + " / extra " +
                       c["extra"].dump().substr(0, 40) + " / add_generation_prompt=" +
                       (opt.add_generation_prompt ? "true" : "false");
    if (c.contains("output")) {
      std::string got;
      std::string err = error_of([&] { got = t.render(messages, opt); });
      EXPECT_EQ(err, "") << what;
      EXPECT_EQ(got, c["output"].get<std::string>()) << what;
    } else {
      std::string err = error_of([&] { t.render(messages, opt); });
      EXPECT_NE(err, "") << what << ": jinja2 says " << c["error"];
      if (c["raised"]) {
        EXPECT_EQ(err, "chat template: " + c["error"].get<std::string>()) << what;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 200u);
}

TEST(ChatGoldens, EverySnippetMatchesJinja) {
  for (const json& s : goldens()["snippets"]) {
    const std::string source = s["source"];
    if (s.contains("output")) {
      std::string got;
      std::string err = error_of([&] { got = render_vars(source, s["vars"]); });
      EXPECT_EQ(err, "") << source;
      EXPECT_EQ(got, s["output"].get<std::string>()) << source;
    } else {
      std::string err = error_of([&] { render_vars(source, s["vars"]); });
      EXPECT_NE(err, "") << source << ": jinja2 says " << s["error"];
      EXPECT_EQ(err.rfind("chat template: ", 0), 0u) << err;
      if (s["raised"]) {
        EXPECT_EQ(err, "chat template: " + s["error"].get<std::string>()) << source;
      }
    }
  }
}

TEST(ChatBuiltins, AreTheSavedTemplates) {
  std::vector<std::string> names = tern::chat::builtin_template_names();
  std::vector<std::string> files = goldens()["templates"];
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, files);
  for (const std::string& n : files) {
    const char* t = tern::chat::builtin_template(n);
    ASSERT_NE(t, nullptr) << n;
    EXPECT_EQ(std::string(t), read_file(kDataDir + n + ".jinja")) << n;
  }
  for (const char* n : {"bitnet", "chatml", "falcon3", "llama2", "llama3"})
    EXPECT_NE(tern::chat::builtin_template(n), nullptr) << n;
  EXPECT_EQ(tern::chat::builtin_template("nope"), nullptr);
  EXPECT_EQ(tern::chat::builtin_template(""), nullptr);
}

TEST(ChatBuiltins, Llama3EndToEnd) {
  Template t = Template::parse(tern::chat::builtin_template("llama3"));
  RenderOptions opt;
  opt.bos_token = "<|begin_of_text|>";
  opt.eos_token = "<|eot_id|>";
  std::vector<Message> chat = {{"system", "Be brief."}, {"user", "  Hi!  "}};
  EXPECT_EQ(t.render(chat, opt),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  opt.add_generation_prompt = false;
  EXPECT_EQ(t.render({{"user", "x"}}, opt),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
}

TEST(ChatBuiltins, Llama2RaisesOnNonAlternatingRoles) {
  Template t = Template::parse(tern::chat::builtin_template("llama2"));
  RenderOptions opt;
  opt.bos_token = "<s>";
  opt.eos_token = "</s>";
  EXPECT_EQ(t.render({{"system", "S"}, {"user", "U"}}, opt), "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST]");
  EXPECT_EQ(error_of([&] { t.render({{"user", "a"}, {"user", "b"}}, opt); }),
            "chat template: Conversation roles must alternate user/assistant/user/assistant/...");
}

// --- parse errors: position and problem ------------------------------------

std::string parse_error(const std::string& source) {
  return error_of([&] { Template::parse(source); });
}

TEST(ChatParse, ErrorsSayLineAndColumn) {
  EXPECT_EQ(parse_error("ok\n{{ x | nosuch }}"), "chat template: 2:8: unknown filter 'nosuch'");
  EXPECT_EQ(parse_error("{{ x is nosuchtest }}"), "chat template: 1:9: unknown test 'nosuchtest'");
  EXPECT_EQ(parse_error("a\n  {% frobnicate %}"), "chat template: 2:6: unknown tag 'frobnicate'");
  EXPECT_EQ(parse_error("{% macro m() %}{% endmacro %}"), "chat template: 1:4: the 'macro' tag is not supported");
  EXPECT_EQ(parse_error("{{ 1 + }}"), "chat template: 1:8: unexpected end of print statement");
  EXPECT_EQ(parse_error("{{ (1, 2 }}"), "chat template: 1:10: unexpected '}', expected ')'");
  EXPECT_EQ(parse_error("{{ x }"), "chat template: 1:6: unexpected '}'");
  EXPECT_EQ(parse_error("x\n\n{# open"), "chat template: 3:1: missing end of comment tag");
  EXPECT_EQ(parse_error("{{ 'open }}"), "chat template: 1:4: unterminated string literal");
  EXPECT_EQ(parse_error("{{ x"), "chat template: 1:1: unclosed tag: expected '}}'");
  EXPECT_EQ(parse_error("{% if x"), "chat template: 1:1: unclosed tag: expected '%}'");
  EXPECT_EQ(parse_error("{{ x ! y }}"), "chat template: 1:6: unexpected char '!'");
  EXPECT_EQ(parse_error("{% for x in y %}{% break %}{% endfor %}{% break %}"),
            "chat template: 1:43: 'break' outside a loop");
  EXPECT_EQ(parse_error("{% set x = 1 %}{% endif %}"), "chat template: 1:19: unknown tag 'endif'");
  EXPECT_EQ(parse_error("{% for x in y %}\n{% endif %}"), "chat template: 2:4: unknown tag 'endif'");
}

TEST(ChatParse, UnclosedBlocksNameTheBlock) {
  EXPECT_EQ(parse_error("{% if true %}\nunclosed"),
            "chat template: 2:9: unexpected end of template, expected 'elif' or 'else' or 'endif' to close the "
            "'if' block opened at 1:4");
  EXPECT_EQ(parse_error("x {% for a in b %}{% if a %}{% endif %}"),
            "chat template: 1:40: unexpected end of template, expected 'endfor' or 'else' to close the 'for' "
            "block opened at 1:6");
  EXPECT_EQ(parse_error("{% set x %}abc"),
            "chat template: 1:15: unexpected end of template, expected 'endset' to close the 'set' block "
            "opened at 1:4");
}

TEST(ChatParse, DeepNestingIsRefusedNotACrash) {
  for (int n : {1000, 100000}) {
    EXPECT_NE(parse_error("{{ " + std::string(n, '(') + "1" + std::string(n, ')') + " }}"), "") << n;
    EXPECT_NE(parse_error("{{ " + std::string(n, '[') + std::string(n, ']') + " }}"), "") << n;
    std::string ifs, ends;
    for (int k = 0; k < n; ++k) {
      ifs += "{% if 1 %}";
      ends += "{% endif %}";
    }
    EXPECT_NE(parse_error(ifs + ends), "") << n;
    std::string nots;
    for (int k = 0; k < n; ++k) nots += "not ";
    EXPECT_NE(parse_error("{{ " + nots + "1 }}"), "") << n;
    std::string negs(static_cast<size_t>(n), '-');
    EXPECT_NE(parse_error("{{ " + negs + "1 }}"), "") << n;
    std::string sum = "{{ 1";
    for (int k = 0; k < n; ++k) sum += " + 1";
    EXPECT_NE(parse_error(sum + " }}"), "") << n;
    std::string filters = "{{ 'x'";
    for (int k = 0; k < n; ++k) filters += "|trim";
    EXPECT_NE(parse_error(filters + " }}"), "") << n;
    std::string attrs = "{{ x";
    for (int k = 0; k < n; ++k) attrs += ".a";
    EXPECT_NE(parse_error(attrs + " }}"), "") << n;
  }
  // Moderate nesting is fine.
  EXPECT_EQ(render("{{ " + std::string(40, '(') + "7" + std::string(40, ')') + " }}"), "7");
  std::string sum = "{{ 0";
  for (int k = 0; k < 300; ++k) sum += " + 1";
  EXPECT_EQ(render(sum + " }}"), "300");
}

// --- runtime errors -----------------------------------------------------------

std::string render_error(const std::string& source) {
  return error_of([&] { render(source); });
}

TEST(ChatRender, RuntimeErrorsSayWhere) {
  EXPECT_EQ(render_error("a\n{{ missing.attr }}"), "chat template: 2:4: 'missing' is undefined");
  EXPECT_EQ(render_error("{{ 1 + 'a' }}"),
            "chat template: 1:6: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(render_error("{{ 'a' + 1 }}"), "chat template: 1:8: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(render_error("{{ 1 // 0 }}"), "chat template: 1:6: integer division or modulo by zero");
  EXPECT_EQ(render_error("{% for x in 3 %}{% endfor %}"), "chat template: 1:4: 'int' object is not iterable");
  EXPECT_EQ(render_error("{{ raise_exception('Only user and assistant roles are supported!') }}"),
            "chat template: Only user and assistant roles are supported!");
  EXPECT_EQ(render_error("{{ [].append(1) }}"),
            "chat template: 1:13: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(render_error("{{ 9223372036854775807 + 1 }}"), "chat template: 1:24: integer overflow");
}

TEST(ChatRender, RunawayTemplatesStop) {
  EXPECT_NE(render_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"), "");
  EXPECT_NE(render_error("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
                         "{% endfor %}"),
            "");
  EXPECT_NE(render_error("{{ 'x' * 9000000000000000000 }}"), "");
  EXPECT_NE(render_error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), "");
  EXPECT_NE(render_error("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
                         "{% endfor %}"),
            "");
  // A namespace that holds itself is freed with the render (LeakSanitizer checks).
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{% set ns.l = [ns] %}{{ ns.me.me.l|length }}"),
            "1");
}

// RenderOptions::work_budget: every published template renders a short
// conversation with tools in 2,000 units (what its comment promises; the
// fuzz target gives each render 20,000), and a loop of 100,000 steps that
// the default budget allows stops under a small one.
TEST(ChatRender, WorkBudgetIsAnOption) {
  const std::vector<Message> chat = {
      {"system", "You are terse."}, {"user", "Hi there!"}, {"assistant", "  Hello.\n"}, {"user", "Again?"}};
  RenderOptions small;
  small.bos_token = "<s>";
  small.eos_token = "</s>";
  small.work_budget = 2'000;
  small.extra = {{"tools", R"([{"type":"function","function":{"name":"f","parameters":{"x":[1,2.5]}}}])"}};
  for (const std::string& n : tern::chat::builtin_template_names()) {
    const Template t = Template::parse(tern::chat::builtin_template(n));
    EXPECT_EQ(error_of([&] { t.render(chat, small); }), "") << n;
  }
  const Template loop = Template::parse("{% for i in range(100000) %}{% endfor %}ok");
  EXPECT_EQ(loop.render({}, RenderOptions{}), "ok");
  small.extra.clear();
  EXPECT_EQ(error_of([&] { loop.render({}, small); }), "chat template: 1:18: the template runs too long");
}

TEST(ChatRender, ExtraVariablesAreJson) {
  RenderOptions opt;
  opt.extra = {{"tools", R"([{"name": "f", "n": [1, 2.5, true, null]}])"}, {"date_string", "\"1 Jan 2025\""}};
  EXPECT_EQ(Template::parse("{{ tools[0].name }} {{ tools[0].n }} {{ date_string }} {{ documents }}").render({}, opt),
            "f [1, 2.5, True, None] 1 Jan 2025 None");
  opt.extra = {{"bad", "{not json"}};
  EXPECT_NE(error_of([&] { Template::parse("x").render({}, opt); }), "");
}

TEST(ChatRender, DefaultVariables) {
  RenderOptions opt;
  opt.bos_token = "<s>";
  opt.eos_token = "</s>";
  EXPECT_EQ(Template::parse("{{ bos_token }}{{ eos_token }}{{ add_generation_prompt }}{{ tools }}{{ messages|length }}")
                .render({{"user", "a"}, {"assistant", "b"}}, opt),
            "<s></s>TrueNone2");
}

TEST(ChatRender, StrftimeNowUsesTheGivenTime) {
  RenderOptions opt;
  opt.now = 1732000000;
  std::tm tm{};
  localtime_r(&opt.now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%d %b %Y", &tm);
  EXPECT_EQ(Template::parse("{{ strftime_now('%d %b %Y') }}").render({}, opt), buf);
}

TEST(ChatRender, ParseOnceRenderMany) {
  Template t = Template::parse("{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}");
  Template moved = std::move(t);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(moved.render({{"user", "a"}, {"assistant", "b"}}, {}), "user:a;assistant:b;");
}

// --- the expression language, feature by feature -----------------------------

struct Case {
  const char* source;
  const char* expected;
};

TEST(ChatExpr, Features) {
  const Case cases[] = {
      {"{{ 1 + 2 * 3 }}", "7"},
      {"{{ (1 + 2) * 3 }}", "9"},
      {"{{ 7 // 2 }},{{ -7 // 2 }},{{ -7 % 3 }},{{ 7 / 2 }},{{ 2 ** 10 }}", "3,-4,2,3.5,1024"},
      {"{{ 'a' ~ 1 ~ none ~ undefined_thing }}", "a1None"},
      {"{{ 'ab' + 'cd' }}", "abcd"},
      {"{{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ 1 < 2 <= 2 }}", "True True True"},
      {"{{ 'b' in 'abc' }} {{ 2 not in [1, 3] }} {{ 'k' in {'k': 0} }}", "True True True"},
      {"{{ '' or 'fallback' }} {{ 'x' and 'y' }} {{ not none }}", "fallback y True"},
      {"{{ 'yes' if 1 else 'no' }}{{ 'never' if 0 }}", "yes"},
      {"{{ message['role'] }}/{{ message.role }}", "user/user"},
      {"{{ messages[1:] | length }} {{ messages[-1].content }}", "1 there"},
      {"{{ 'héllo'[1:3] }} {{ 'abc'[::-1] }}", "él cba"},
      {"{{ x is defined }} {{ undefined_thing is defined }} {{ none is none }} {{ 'a' is string }}",
       "False False True True"},
      {"{{ 'a' is not none }} {{ [1] is iterable }} {{ {} is mapping }} {{ 2 is even }}", "True True True True"},
      {"{{ '  pad  ' | trim }}|{{ 'abc' | upper }}|{{ 'ABC' | lower }}|{{ [1, 2, 3] | length }}", "pad|ABC|abc|3"},
      {"{{ {'b': [1, 'é'], 'a': none} | tojson }}", "{\"b\": [1, \"é\"], \"a\": null}"},
      {"{{ [1] | tojson(indent=2) }}", "[\n  1\n]"},
      {"{{ undefined_thing | default('d') }} {{ [1, 2] | join('-') }} {{ [3, 4] | first }}{{ [3, 4] | last }}",
       "d 1-2 34"},
      {"{{ '  s  '.strip() }}{{ 'xax'.lstrip('x') }}{{ 'xax'.rstrip('x') }}", "saxxa"},
      {"{{ 'abc'.startswith('a') }} {{ 'abc'.endswith('c') }} {{ 'a b'.split() }} {{ 'a-b'.replace('-', '+') }}",
       "True True ['a', 'b'] a+b"},
      {"{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}", "ABab"},
      {"{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}", "2"},
      {"{% for m in messages %}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{% endfor %}",
       "1TrueFalse22FalseTrue2"},
      {"{% for m in messages %}{% if loop.first %}{% continue %}{% endif %}{{ m.content }}{% endfor %}", "there"},
      {"{% for x in [1, 2, 3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}", "1"},
      {"{% for x in [] %}{{ x }}{% else %}none{% endfor %}", "none"},
      {"{% if false %}a{% elif 0 %}b{% else %}c{% endif %}", "c"},
      {"{%- if true -%}\n  x  \n{%- endif -%}", "x"},
      {"  {% if true %}\nline\n  {% endif %}\n", "line\n"},
      {"{# a comment #}kept", "kept"},
      {"{{ '{{ not a tag }}' }}", "{{ not a tag }}"},
  };
  std::vector<Message> messages = {{"user", "hi"}, {"assistant", "there"}};
  for (const Case& c : cases) {
    std::string got;
    json vars = {{"message", {{"role", "user"}, {"content", "hi"}}}};
    std::string err = error_of([&] { got = render_vars(c.source, vars, messages); });
    EXPECT_EQ(err, "") << c.source;
    EXPECT_EQ(got, c.expected) << c.source;
  }
}

TEST(ChatExpr, ContentIsDataNotTemplate) {
  // Jinja-looking text in a message is printed, never evaluated.
  Template t = Template::parse(tern::chat::builtin_template("chatml"));
  EXPECT_EQ(t.render({{"user", "{{ 7 * 7 }} {% raise %}"}}, {}),
            "<|im_start|>user\n{{ 7 * 7 }} {% raise %}<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatExpr, InvalidUtf8ContentPassesThrough) {
  Template t = Template::parse("[{{ messages[0].content }}|{{ messages[0].content | length }}|"
                               "{{ messages[0].content | trim }}]");
  std::string bad = std::string("a\xff\xc3") + " ";
  EXPECT_EQ(t.render({{"user", bad}}, {}), "[" + bad + "|4|a\xff\xc3]");
}

// --- limits: no template overflows, makes a huge value first and checks
// after, or works long for a little budget ----------------------------------

// The message of the tern::Error that rendering `source` throws, checked to
// end with `tail` (the position before it varies).
void expect_error(const std::string& source, const std::string& tail) {
  std::string err = render_error(source);
  EXPECT_TRUE(err.starts_with("chat template: ") && err.ends_with(tail)) << source << "\n -> " << err.substr(0, 200);
}

TEST(ChatLimits, RangeCountsWithoutOverflow) {
  // F5: `k += step` overflowed (UB) past the last item
  EXPECT_EQ(render("{{ range(9223372036854775806, 9223372036854775807, 9223372036854775807) | list }}"),
            "[9223372036854775806]");
  EXPECT_EQ(render("{{ range(-9223372036854775807 - 1, 9223372036854775807, 4611686018427387904) | list }}"),
            "[-9223372036854775808, -4611686018427387904, 0, 4611686018427387904]");
  EXPECT_EQ(render("{{ range(9223372036854775807, -9223372036854775807 - 1, -9223372036854775807 - 1) | list }}"),
            "[9223372036854775807, -1]");
  EXPECT_EQ(render("{{ range(0, 10, -9223372036854775807 - 1) | list }}|{{ range(10, 0, -9223372036854775807 - 1) "
                   "| list }}|{{ range(5, 0, -2) | list }}|{{ range(0, 5, 2) | list }}"),
            "[]|[10]|[5, 3, 1]|[0, 2, 4]");
  expect_error("{{ range(-9223372036854775807 - 1, 9223372036854775807) }}",
               "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
}

TEST(ChatLimits, PercentFormatsAnyFloatAsPythonDoes) {
  // F6: %d cast the float to int64 (UB past its range); Python takes int(x)
  expect_error("{{ '%d' % ('inf' | float) }}", "cannot convert float infinity to integer");
  expect_error("{{ '%i' % ('-inf' | float) }}", "cannot convert float infinity to integer");
  expect_error("{{ '%d' % ('nan' | float) }}", "cannot convert float NaN to integer");
  const std::string e300 =
      "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443"
      "8328838781769425232353604305756447921847867069828483872009265758037378302337947880900593689532349707999450811"
      "19038967640880074652742780142494579258788820056842838115669472196386865459400540160";
  EXPECT_EQ(render("{{ '%d' % 1e300 }}|{{ '%i' % -1e20 }}|{{ '%d' % -2.7 }}|{{ '%d' % -0.5 }}|{{ '%d' % true }}"),
            e300 + "|-100000000000000000000|-2|0|1");
  EXPECT_EQ(render("{{ '%f' % 1e300 }}"), e300 + ".000000");  // was cut at 63 characters
}

TEST(ChatLimits, IntFilterConvertsInRangeOrFails) {
  // Python's int() would make a big int: out of int64 range is an error,
  // not a silent default (nor UB); inf fails as in jinja2, nan gives the default.
  expect_error("{{ 1e300 | int }}", "integer overflow");
  expect_error("{{ '99999999999999999999' | int }}", "integer overflow");
  expect_error("{{ 'inf' | float | int }}", "cannot convert float infinity to integer");
  EXPECT_EQ(render("{{ 'nan' | float | int }}|{{ 'nan' | int(7) }}|{{ 9.21e18 | int }}|{{ -9.2e18 | int }}"),
            "0|7|9210000000000000000|-9200000000000000000");
  EXPECT_EQ(render("{{ '-9223372036854775808' | int }}|{{ '9223372036854775807' | int }}|{{ ' 42 ' | int }}"),
            "-9223372036854775808|9223372036854775807|42");
  // std::from_chars takes a '-' of its own: '--5' was -(-5), '--9223372036854775808' negated INT64_MIN (UB)
  EXPECT_EQ(render("{{ '--9223372036854775808' | int }}|{{ '--5' | int }}|{{ '+-5' | int }}|{{ '0x-5' | int(base=16) }}|"
                   "{{ '-0x10' | int(base=16) }}"),
            "0|0|0|0|-16");
}

TEST(ChatLimits, RepetitionIsCheckedWithoutOverflow) {
  // size * n wrapped around: 3 * 6148914691236517206 is 2 (mod 2^64)
  expect_error("{{ 'abc' * 6148914691236517206 }}", "string too long");
  expect_error("{{ [1, 2, 3] * 6148914691236517206 }}", "list too long");
  // nothing repeated a huge number of times looped that many times
  EXPECT_EQ(render("{{ '' * 9000000000000000000 }}|{{ [] * 9000000000000000000 }}|{{ 'ab' * 3 }}|{{ (1,) * 2 }}"),
            "|[]|ababab|(1, 1)");
  expect_error("{% set l = range(100000) | list %}{% set l = l * 6 %}{{ (l + l) | length }}", "list too long");
}

// Renders `source` for one user message `content`: a long message gives the
// render a larger budget, so limits other than the budget are met first.
std::string render_error_with(const std::string& source, const std::string& content) {
  return error_of([&] { Template::parse(source).render({{"user", content}}, {}); });
}

// Renders `source`, which must fail with a message ending in `tail`, and
// returns how long that took.
double seconds_to_fail(const std::string& source, const std::string& tail = "") {
  auto t0 = std::chrono::steady_clock::now();
  std::string err = render_error(source);
  EXPECT_TRUE(err.starts_with("chat template: ") && err.ends_with(tail)) << source << "\n -> " << err;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(ChatLimits, JoinStopsAtTheStringLimit) {
  // F7: the whole string was built (16 TB asked for) before its size was
  // checked; now the list itself is over budget, and a join stops at 16 MiB.
  EXPECT_LT(seconds_to_fail("{% set l = ['x' * 16000000] * 1000000 %}{{ l | join | length }}"), 2.0);
  expect_error("{% set l = ['x' * 1000000] * 100000 %}{{ l | join | length }}", "string too long");
  expect_error("{% set l = ['x' * 1000000] * 100000 %}{{ ''.join(l) | length }}", "string too long");
  expect_error("{% set l = ['x'] * 100000 %}{{ l | join('y' * 1000) | length }}", "string too long");
  EXPECT_EQ(render("{{ ['a', 1, none] | join('-') }}|{{ ','.join(['a', 'b']) }}"), "a-1-None|a,b");
}

TEST(ChatLimits, ReplaceStopsAtTheStringLimit) {
  // F8: likewise for replace, by the method and by the filter
  expect_error("{% set s = 'ab' * 8000000 %}{{ s.replace('a', 'a' * 16000000) | length }}", "string too long");
  expect_error("{% set s = 'ab' * 8000000 %}{{ s | replace('a', 'a' * 16000000) | length }}", "string too long");
  expect_error("{% set s = 'ab' * 1000 %}{{ s.replace('', 'x' * 100000) | length }}", "string too long");
  EXPECT_EQ(render("{{ 'abab'.replace('b', 'xy') }}|{{ 'abab'.replace('b', '', 1) }}|{{ 'ab'.replace('', '-') }}"),
            "axyaxy|aab|-a-b-");
}

TEST(ChatLimits, CopiesAreCharged) {
  // F9: 16M empty strings (1.2 GB, seconds) were made before the budget
  // ran out; the parts are charged as they are made now.
  EXPECT_LT(seconds_to_fail("{% set s = 'x' * 16000000 %}{{ s.split('x') | length }}"), 2.0);
  // With a budget large enough (a long message), a list stops at 2^20 items.
  std::string lines;
  for (int k = 0; k < 1100000; ++k) lines += "x\n";
  for (const char* t : {"{{ messages[0].content.split('x') | length }}",
                        "{{ messages[0].content.rsplit('x') | length }}", "{{ messages[0].content.split() | length }}",
                        "{{ messages[0].content.splitlines() | length }}", "{{ messages[0].content | list | length }}"}) {
    std::string err = render_error_with(t, lines);
    EXPECT_TRUE(err.ends_with(": list too long")) << t << " -> " << err;
  }
  // Printing (repr, tojson) a million copies of an 8 MB string built 8 TB.
  const std::string eight_m(8000000, 'y');
  for (const char* t : {"{{ [messages[0].content] * 1000000 }}", "{{ ([messages[0].content] * 1000000) | tojson }}",
                        "{{ 'x' ~ [messages[0].content] * 1000000 }}"}) {
    std::string err = render_error_with(t, eight_m);
    EXPECT_TRUE(err.ends_with(": string too long")) << t << " -> " << err;
  }
  expect_error("{{ [[[[1]]]] | tojson(indent='x' * 8000000) }}", "string too long");
  expect_error("{{ ('%s' * 1000) % (('x' * 100000,) * 1000) }}", "string too long");
  expect_error("{{ ('\\n' * 100000) | indent('x' * 1000, blank=true) }}", "string too long");
  expect_error("{{ strftime_now('%Y' * 8000000) }}", "strftime_now: format too long");
  // Work that copied, compared, scanned or decoded a long string cost one
  // unit: loops of it ran for minutes.
  const char* runaways[] = {
      "{% set s = 'x' * 16000000 %}{% set t = s ~ '' %}{% for i in range(100000) %}{% if s == t %}{% endif %}"
      "{% endfor %}",
      "{% set s = 'x' * 16000000 %}{% set t = s ~ '' %}{% for i in range(100000) %}{% if s < t %}{% endif %}"
      "{% endfor %}",
      "{% set s = 'x' * 16000000 %}{% for i in range(100000) %}{% set n = s | length %}{% endfor %}",
      "{% set s = 'x' * 16000000 %}{% for i in range(100000) %}{% if 1 | attr(s) is defined %}{% endif %}"
      "{% endfor %}",
      "{% set s = 'x' * 16000000 %}{% set t = (s,) * 1000 %}{% for i in range(100000) %}"
      "{% set n = s.startswith(t) %}{% endfor %}",
      "{% set s = 'x' * 16000000 %}{% set d = {s: 1} %}{% for i in range(100000) %}{% set n = d[s] %}{% endfor %}",
      "{% set t = (1,) * 1000000 %}{% for i in range(100000) %}{% set n = {}.get(t) %}{% endfor %}",
      // a tuple made of itself twice, 300 deep: 2^300 items to hash
      "{% set ns = namespace(t=(1,)) %}{% for i in range(300) %}{% set ns.t = (ns.t, ns.t) %}{% endfor %}"
      "{{ {}[ns.t] }}",
      "{% set s = 'x' * 16000000 %}{% for i in range(100000) %}{% set n = s.count('x') %}{% endfor %}",
      "{% set s = 'x' * 1000000 %}{% for i in range(100000) %}{% set n = s.replace('', '') %}{% endfor %}",
  };
  for (const char* t : runaways) EXPECT_LT(seconds_to_fail(t, "the template runs too long"), 2.0) << t;
  // A long conversation gets a budget to match: 1000 messages of 8 KB.
  Template t = Template::parse(tern::chat::builtin_template("llama3"));
  std::vector<Message> long_chat(1000, Message{"user", std::string(8000, 'w')});
  for (size_t k = 1; k < long_chat.size(); k += 2) long_chat[k].role = "assistant";
  EXPECT_EQ(error_of([&] { t.render(long_chat, {}); }), "");
}

TEST(ChatLimits, SearchesTakeLinearTime) {
  // strip(chars) looked each character up in `chars` one by one: quadratic
  EXPECT_EQ(render("{% set s = 'a' * 200000 %}{% set t = 'b' * 200000 ~ 'a' %}{{ s.strip(t) | length }}"), "0");
  const std::string set = "zyxwvutsrqponmlkjihgfedcba0123456789ABCDEFGHIJKLMNOP";  // long: sorted, halved
  EXPECT_EQ(render("{{ 'xaby'.strip('yx') }}|{{ 'abcxyz'.strip('" + set + "') }}|{{ 'ab-c9Q'.lstrip('" + set +
                   "') }}|{{ 'Qab-c9'.rstrip('" + set + "') }}"),
            "ab||-c9Q|Qab-");
  // std::string::find and rfind take time |hay| * |needle|: the budget
  // stopped these, which take linear time now.
  EXPECT_EQ(render("{% set s = 'a' * 1000000 %}{{ s.rfind('b' ~ 'a' * 100000) }}|{{ ('a' * 100000 ~ 'b') in s }}|"
                   "{{ s.find('a' * 1000 ~ 'b') }}|{{ s.rsplit('a' * 100000 ~ 'b') | length }}"),
            "-1|False|-1|1");
  EXPECT_EQ(render("{{ 'a,b,,c'.rsplit(',') }}|{{ 'a,b,,c'.rsplit(',', 1) }}|{{ ',a'.rsplit(',') }}|"
                   "{{ 'abcabc'.rfind('c') }}|{{ 'abc'.rfind('x') }}|{{ 'abc'.rfind('a') }}"),
            "['a', 'b', '', 'c']|['a,b,', 'c']|['', 'a']|5|-1|0");
  // The forward search looks in windows that double, overlapping: a match
  // across their ends is found, and every search agrees with std::string's.
  for (const std::string& needle : std::vector<std::string>{"ab", "abc", std::string(200, 'q') + "z"}) {
    for (size_t off = 0; off < 2200; off += 3) {
      std::string hay = std::string(off, 'x') + needle + std::string(2200 - off, 'x') + needle.substr(0, 2);
      size_t n = 0;
      for (size_t f = hay.find(needle); f != std::string::npos; f = hay.find(needle, f + needle.size())) ++n;
      std::string want = std::to_string(hay.find(needle)) + "|" + std::to_string(hay.rfind(needle)) + "|" +
                         std::to_string(n) + "|" + std::to_string(n + 1) + "|" + std::to_string(hay.rfind(needle)) +
                         "|True";
      EXPECT_EQ(render_vars("{{ h.find(n) }}|{{ h.rfind(n) }}|{{ h.count(n) }}|{{ h.split(n) | length }}|"
                            "{{ h.rsplit(n, 1)[0] | length }}|{{ n in h }}",
                            {{"h", hay}, {"n", needle}}),
                want)
          << "needle " << needle.size() << " at " << off;
    }
  }
}

TEST(ChatLimits, ArgumentsOverTheLimitsAreErrors) {
  // Value limits met outside evaluation threw an exception that was not a
  // tern::Error: a string literal over 16 MiB, a message over it.
  std::string big = "{{ '" + std::string((16u << 20) + 1, 'x') + "' }}";
  EXPECT_EQ(error_of([&] { Template::parse(big); }), "chat template: 1:4: string too long");
  Template t = Template::parse("{{ messages | length }}");
  std::string err = error_of([&] { t.render({{"user", std::string((16u << 20) + 1, 'x')}}, {}); });
  EXPECT_EQ(err, "chat template: string too long");
}

}  // namespace
