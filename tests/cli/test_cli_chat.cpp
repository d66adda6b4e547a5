// tern tokenize and tern chat as a user meets them, on the fixture's model
// that carries Llama-3's tokenizer.json and chat template.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_env.h"

namespace fs = std::filesystem;
using tern::test::expect_one_line_error;
using tern::test::quote;

namespace {

std::string bpe_model() { return (tern::test::test_models() / "bpe" / "tq2_0.gguf").string(); }
std::string spm_model() { return (tern::test::test_models() / "bitnet" / "tq2_0.gguf").string(); }
int lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

class CliChat : public ::testing::Test {
 protected:
  tern::test::RunResult cli(const std::string& args, const std::string& tag = "out") {
    return tern::test::tern_cli(args, tag, dir_);
  }
  // Runs tern with `input` on its standard input, as through a pipe.
  tern::test::RunResult piped(const std::string& args, const std::string& input, const std::string& tag) {
    const std::string in = write_file(tag + ".in", input);
    const std::string out = (dir_ / (tag + ".out")).string(), err = (dir_ / (tag + ".err")).string();
    const std::string cmd = quote(TERN_EXE) + " " + args + " <" + quote(in) + " >" + quote(out) + " 2>" + quote(err);
    const int rc = std::system(cmd.c_str());
    tern::test::RunResult r;
    r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  std::string write_file(const std::string& name, const std::string& bytes) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  const fs::path dir_ = tern::test::test_dir();
};

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]\n";
}

// The packed file tokenizes as Hugging Face's own tokenizer does: the
// golden ids of the Llama-3 cases, through the binary.
TEST_F(CliChat, TokenizeIdsEqualHuggingFaceGoldens) {
  std::ifstream g(tern::test::source("tests/data/tokenizers/goldens/llama3.json"));
  const nlohmann::json goldens = nlohmann::json::parse(g);
  int checked = 0;
  for (const auto& c : goldens["cases"]) {
    if (!c.contains("text")) continue;
    const std::string name = c["name"];
    const std::string f = write_file(name + ".txt", c["text"].get<std::string>());
    auto r = cli("tokenize -m " + quote(bpe_model()) + " -f " + quote(f) + " --ids --no-escape", name);
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(r.out, ids_text(c["ids"].get<std::vector<int32_t>>())) << name;
    if (c.contains("ids_no_parse_special")) {
      r = cli("tokenize -m " + quote(bpe_model()) + " -f " + quote(f) + " --ids --no-escape --no-parse-special",
              name + "-lit");
      EXPECT_EQ(r.out, ids_text(c["ids_no_parse_special"].get<std::vector<int32_t>>())) << name;
    }
    if (++checked == 12) break;  // each run loads the 128k vocabulary; a dozen cases show the path
  }
  EXPECT_EQ(checked, 12);
}

TEST_F(CliChat, TokenizePrintsPiecesAsLlamaTokenize) {
  auto r = cli("tokenize -m " + quote(bpe_model()) + " -p 'Hello world<|eot_id|>\\n' --show-count");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "  9906 -> 'Hello'\n"
            "  1917 -> ' world'\n"
            "128009 -> '<|eot_id|>'\n"
            "   198 -> '\n'\n"
            "Total number of tokens: 4\n");
  r = cli("tokenize -m " + quote(bpe_model()) + " -p '<|eot_id|>' --ids --no-parse-special", "lit");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("128009"), std::string::npos) << r.out;
  // The SentencePiece model adds BOS unless told not to.
  r = cli("tokenize -m " + quote(spm_model()) + " -p 'In the beginning' --ids", "spm");
  EXPECT_EQ(r.out.rfind("[1, ", 0), 0u) << r.out;
  r = cli("tokenize -m " + quote(spm_model()) + " -p 'In the beginning' --ids --no-bos", "spm-nobos");
  EXPECT_NE(r.out.rfind("[1, ", 0), 0u) << r.out;
}

TEST_F(CliChat, TokenizeBadInput) {
  expect_one_line_error(cli("tokenize -m " + quote(bpe_model())), "exactly one of -p, -f and --stdin");
  expect_one_line_error(cli("tokenize -m " + quote(bpe_model()) + " -f /nonexistent/x.txt", "nofile"),
                        "/nonexistent/x.txt");
  const std::string junk = write_file("junk.gguf", "GGUF but not really");
  expect_one_line_error(cli("tokenize -m " + quote(junk) + " -p hi", "junk"), "junk.gguf");
}

TEST_F(CliChat, ChatThroughAPipeKeepsTheHistory) {
  const std::string args = "chat -m " + quote(bpe_model()) + " -n 6 --temp 0 --verbose-prompt";
  auto r = piped(args, "Hi there\nHow are you?\n", "chat");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 2) << r.out;  // one line per reply
  const std::string first = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
                            "<|start_header_id|>assistant<|end_header_id|>\n\n";
  EXPECT_NE(r.err.find("tern: prompt:\n" + first + "\n"), std::string::npos) << r.err;
  // The second prompt holds the first exchange, the reply as it was printed.
  const std::string reply = r.out.substr(0, r.out.find('\n'));
  EXPECT_NE(r.err.find(first + reply + "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHow are you?"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("2 turns"), std::string::npos) << r.err;
  // Same seed and input, same conversation.
  auto again = piped(args, "Hi there\nHow are you?\n", "chat2");
  EXPECT_EQ(again.out, r.out);
}

TEST_F(CliChat, ChatDropsOldTurnsWhenTheContextIsFull) {
  std::string input;
  for (int i = 0; i < 6; ++i) input += "Tell me about the number " + std::to_string(i) + " and the sea\n";
  auto r = piped("chat -m " + quote(bpe_model()) + " -c 64 -n 8 --temp 0", input, "full");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 6) << r.out;
  EXPECT_NE(r.err.find("context full: dropped the"), std::string::npos) << r.err;
}

TEST_F(CliChat, ChatTemplateChoices) {
  // The SentencePiece test model has no template: the error names the flag.
  expect_one_line_error(piped("chat -m " + quote(spm_model()), "hi\n", "none"), "--chat-template");
  auto r = piped("chat -m " + quote(spm_model()) + " --chat-template chatml -n 4 --temp 0 --verbose-prompt", "hi\n",
                 "chatml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"), std::string::npos) << r.err;
  expect_one_line_error(piped("chat -m " + quote(bpe_model()) + " --chat-template no-such-template", "hi\n", "bad"),
                        "--chat-template 'no-such-template'");
  const std::string broken = write_file("broken.jinja", "{% for m in messages %}{{ m.content }");
  expect_one_line_error(piped("chat -m " + quote(bpe_model()) + " --chat-template " + quote(broken), "hi\n", "broken"),
                        "broken.jinja");
}

// --no-think sets the Qwen3 template's enable_thinking to false: the
// generation prompt then carries the empty reasoning block, as
// apply_chat_template(enable_thinking=False) writes it.
TEST_F(CliChat, NoThinkAsksTheTemplateForNoReasoning) {
  const std::string base = "chat -m " + quote(bpe_model()) + " --chat-template qwen3 -n 4 --temp 0 --verbose-prompt";
  auto think = piped(base, "What is 2+2?\n", "think");
  ASSERT_EQ(think.exit_code, 0) << think.err;
  const std::string turn = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_NE(think.err.find("tern: prompt:\n" + turn + "\n"), std::string::npos) << think.err;
  auto no = piped(base + " --no-think", "What is 2+2?\n", "nothink");
  ASSERT_EQ(no.exit_code, 0) << no.err;
  EXPECT_NE(no.err.find("tern: prompt:\n" + turn + "<think>\n\n</think>\n\n\n"), std::string::npos) << no.err;
  EXPECT_EQ(no.err.find("nothing changes"), std::string::npos) << no.err;
  // The same through --chat-template-kwargs, llama.cpp's spelling.
  auto kw = piped(base + " --chat-template-kwargs '{\"enable_thinking\": false}'", "What is 2+2?\n", "kwargs");
  ASSERT_EQ(kw.exit_code, 0) << kw.err;
  EXPECT_EQ(kw.out, no.out);
  EXPECT_NE(kw.err.find(turn + "<think>\n\n</think>\n\n"), std::string::npos) << kw.err;
  // A template without the switch is told, not silently ignored.
  auto llama3 = piped("chat -m " + quote(bpe_model()) + " -n 2 --temp 0 --no-think", "hi\n", "llama3");
  ASSERT_EQ(llama3.exit_code, 0) << llama3.err;
  EXPECT_NE(llama3.err.find("--no-think: the chat template has no enable_thinking switch"), std::string::npos)
      << llama3.err;
}

TEST_F(CliChat, ReasoningFlagsAndTheirErrors) {
  const std::string base = "chat -m " + quote(bpe_model()) + " --chat-template qwen3 -n 6 --temp 0";
  // The random model writes no <think> block: hiding changes nothing.
  auto show = piped(base, "Hi\nAgain\n", "show");
  auto hide = piped(base + " --reasoning hide", "Hi\nAgain\n", "hide");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  ASSERT_EQ(hide.exit_code, 0) << hide.err;
  EXPECT_EQ(hide.out, show.out);
  expect_one_line_error(piped(base + " --reasoning maybe", "hi\n", "badr"), "--reasoning");
  expect_one_line_error(piped(base + " --chat-template-kwargs '[1]'", "hi\n", "badk1"),
                        "--chat-template-kwargs: not a JSON object");
  expect_one_line_error(piped(base + " --chat-template-kwargs '{oops'", "hi\n", "badk2"),
                        "--chat-template-kwargs: not valid JSON");
}

TEST_F(CliChat, GenerateEndsWithANewline) {
  auto r = cli("generate -m " + quote(bpe_model()) + " -p 'Hello' -n 3 --temp 0 --ignore-eos");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), '\n');
}

}  // namespace
