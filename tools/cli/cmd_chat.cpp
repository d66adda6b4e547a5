// tern chat: a conversation on the terminal or through a pipe, one user turn
// per line of standard input.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "tern/chat.h"
#include "tern/error.h"
#include "tern/reasoning.h"

namespace tern::cli {
namespace {

struct ChatCliOptions {
  RunOptions run;
  ChatOptions chat;
  SamplingOptions sampling;
  std::string chat_template;
  bool verbose_prompt = false;
  bool no_think = false;
  std::string template_kwargs;   // --chat-template-kwargs JSON
  std::string reasoning = "show";  // show | hide the reply's <think> block
  SpeculativeCli speculative;
};

// --chat-template-kwargs, then --no-think on top (enable_thinking=false).
std::vector<std::pair<std::string, std::string>> template_vars(const ChatCliOptions& o) {
  auto vars = o.template_kwargs.empty() ? std::vector<std::pair<std::string, std::string>>{}
                                        : parse_template_vars(o.template_kwargs, "--chat-template-kwargs");
  if (o.no_think) {
    std::erase_if(vars, [](const auto& v) { return v.first == "enable_thinking"; });
    vars.emplace_back("enable_thinking", "false");
  }
  return vars;
}

void run_chat(const ChatCliOptions& o) {
  std::unique_ptr<Model> model = open_model(o.run);
  const std::string path = model->file().path();
  Tokenizer tok(model->file());
  print_notes(tok, path);
  Context ctx(*model, context_options(o.run, *model));
  const SamplerParams sp = sampler_params(o.sampling, model->config().vocab_size);
  const DraftSetup draft = open_drafter(o.speculative, o.run, *model, tok, ctx.n_ctx(), sp);
  ChatOptions chat = o.chat;
  chat.gen.drafter = draft.drafter.get();
  chat.template_vars = template_vars(o);
  chat::Template tmpl = choose_template(o.chat_template, tok, path);
  if (o.no_think && !template_vars_matter(tmpl, tok, {{"enable_thinking", "false"}}))
    std::fprintf(stderr, "tern: --no-think: the chat template has no enable_thinking switch; nothing changes\n");
  ChatSession session(ctx, tok, std::move(tmpl), chat);
  Sampler sampler(sp);
  const bool tty = isatty(STDIN_FILENO);
  std::fprintf(stderr, "tern: %s, kernel %s, %d threads, context %d, seed %llu\n", path.c_str(),
               model->kernels().name, ctx.threads(), ctx.n_ctx(),
               static_cast<unsigned long long>(sp.seed));
  if (tty) std::fprintf(stderr, "tern: one message per line; Ctrl-D ends the conversation\n");

  int turns = 0, generated = 0, drafted = 0, accepted = 0;
  double gen_seconds = 0;
  std::string line;
  while (true) {
    if (tty) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const TextSink print = [](const std::string& text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    };
    // --reasoning hide: the answer only; the history keeps the whole reply
    // and the template decides what of it the next turn sees.
    const bool hide = o.reasoning == "hide";
    ReasoningSplitter split(print, TextSink());
    const ChatTurn t = session.reply(
        line, sampler, [&](const std::string& text) { hide ? split.feed(text) : print(text); },
        [&](const ChatTurn& start) {
          if (start.n_dropped)
            std::fprintf(stderr, "tern: context full: dropped the %d oldest turn%s\n", start.n_dropped,
                         start.n_dropped == 1 ? "" : "s");
          if (o.verbose_prompt) std::fprintf(stderr, "tern: prompt:\n%s\n", start.rendered.c_str());
        });
    if (hide && split.in_reasoning())
      std::fprintf(stderr, "tern: the reply ended inside its reasoning (no </think>); raise -n to see an answer\n");
    split.finish();
    std::printf("\n");
    std::fflush(stdout);
    ++turns;
    generated += t.stats.n_generated;
    gen_seconds += t.stats.gen_seconds;
    drafted += t.stats.n_drafted;
    accepted += t.stats.n_accepted;
  }
  std::fprintf(stderr, "tern: %d turns, %d tokens generated (%.2f tok/s)\n", turns, generated,
               generated / std::max(gen_seconds, 1e-9));
  print_speculative(draft, drafted, accepted);
}

}  // namespace

void add_chat(CLI::App& app) {
  auto o = std::make_shared<ChatCliOptions>();
  o->chat.gen.n_predict = -1;
  CLI::App* cmd = app.add_subcommand("chat", "chat with a model using its chat template");
  add_run_options(*cmd, o->run);
  cmd->add_option("--system", o->chat.system, "system message");
  cmd->add_option("-n,--n-predict", o->chat.gen.n_predict, "tokens per reply at most (default: until the model ends it)");
  cmd->add_option("--chat-template", o->chat_template,
                  "template: a built-in name (chatml, llama2, llama3, falcon3, bitnet, ...) or a file (default: the model's)");
  cmd->add_flag("--verbose-prompt", o->verbose_prompt, "print the rendered prompt on stderr");
  cmd->add_flag("--ignore-eos", o->chat.gen.ignore_eos, "never stop at end-of-generation tokens");
  cmd->add_flag("--no-think", o->no_think,
                "ask a reasoning model to answer without thinking first (the template's enable_thinking=false)");
  cmd->add_option("--chat-template-kwargs", o->template_kwargs,
                  "further template variables as a JSON object, e.g. '{\"enable_thinking\": false}'");
  cmd->add_option("--reasoning", o->reasoning, "show or hide the <think> block a reasoning model opens its reply with")
      ->check(CLI::IsMember({"show", "hide"}))
      ->capture_default_str();
  add_sampling_options(*cmd, o->sampling);
  add_speculative_options(*cmd, o->speculative);
  cmd->callback([o] { run_chat(*o); });
}

}  // namespace tern::cli
