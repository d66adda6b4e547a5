// A conversation with a model: each turn is rendered with the model's chat
// template, only the tokens the KV cache does not already hold are fed, and
// the reply is sampled until an end-of-generation token. When the history
// outgrows the context, the oldest turns are dropped.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tern/chat_template.h"
#include "tern/generate.h"
#include "tern/context.h"
#include "tern/tokenizer.h"

namespace tern {

struct ChatOptions {
  std::string system;           // a system message first, if not empty
  GenerateOptions gen;          // n_predict is per reply; < 0: until the context is full
  // Template variables beside messages (a name and a JSON value each), as
  // transformers' apply_chat_template(**kwargs): {"enable_thinking", "false"}.
  std::vector<std::pair<std::string, std::string>> template_vars;
};

struct ChatTurn {
  GenerateStats stats;
  int n_fed = 0;          // prompt tokens fed this turn (the rest were cached)
  int n_dropped = 0;      // turns dropped from the front of the history to fit
  std::string rendered;   // the whole prompt text the template produced
};

class ChatSession {
 public:
  ChatSession(Context& ctx, const Tokenizer& tok, chat::Template tmpl, ChatOptions o);

  // Adds the user's message and streams the reply through on_text.
  // on_start, if given, sees the turn before the reply begins (the rendered
  // prompt, not yet tokenized, and how many turns were dropped to fit).
  // Throws if the message alone does not fit the context.
  ChatTurn reply(const std::string& user, Sampler& sampler, const TextSink& on_text,
                 const std::function<void(const ChatTurn&)>& on_start = nullptr);
  const std::vector<chat::Message>& history() const { return history_; }

 private:
  std::string render() const;                                  // the history through the template
  std::vector<int32_t> tokens(const std::string& text) const;  // as apply_chat_template tokenizes

  Context& ctx_;
  const Tokenizer& tok_;
  chat::Template tmpl_;
  ChatOptions o_;
  std::vector<chat::Message> history_;  // system (if any), then user/assistant turns
  std::vector<int32_t> cached_;         // ids whose keys and values the cache holds, in order
};

// The template a command should use: `choice` is a built-in name, a file,
// or empty for the model's own (tokenizer.chat_template). Throws
// tern::Error naming --chat-template when there is none or it is malformed.
chat::Template choose_template(const std::string& choice, const Tokenizer& tok, const std::string& model_path);

// Whether the template renders a one-message conversation differently with
// `vars` than without them: a variable the template never reads (e.g.
// enable_thinking for a template without a thinking switch) changes nothing.
bool template_vars_matter(const chat::Template& tmpl, const Tokenizer& tok,
                          const std::vector<std::pair<std::string, std::string>>& vars);

// {"name": value, ...} as template variables; throws tern::Error naming
// `what` when `json` is not a JSON object.
std::vector<std::pair<std::string, std::string>> parse_template_vars(const std::string& json, const std::string& what);

}  // namespace tern
