#include "tern/chat.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tern/error.h"
#include "tern/input_file.h"

namespace tern {

ChatSession::ChatSession(Context& ctx, const Tokenizer& tok, chat::Template tmpl, ChatOptions o)
    : ctx_(ctx), tok_(tok), tmpl_(std::move(tmpl)), o_(std::move(o)) {
  if (!o_.system.empty()) history_.push_back({"system", o_.system});
}

namespace {

chat::RenderOptions render_options(const Tokenizer& tok, const std::vector<std::pair<std::string, std::string>>& vars) {
  chat::RenderOptions ro;
  ro.add_generation_prompt = true;
  if (tok.bos() >= 0) ro.bos_token = tok.token_text(tok.bos());
  if (tok.eos() >= 0) ro.eos_token = tok.token_text(tok.eos());
  ro.extra = vars;
  return ro;
}

}  // namespace

std::string ChatSession::render() const { return tmpl_.render(history_, render_options(tok_, o_.template_vars)); }

bool template_vars_matter(const chat::Template& tmpl, const Tokenizer& tok,
                          const std::vector<std::pair<std::string, std::string>>& vars) {
  const std::vector<chat::Message> one = {{"user", "Hello"}};
  try {
    return tmpl.render(one, render_options(tok, vars)) != tmpl.render(one, render_options(tok, {}));
  } catch (const Error&) {
    return true;  // the template reads them, if only to refuse them
  }
}

std::vector<std::pair<std::string, std::string>> parse_template_vars(const std::string& text, const std::string& what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw Error(what + ": not valid JSON");
  }
  if (!j.is_object()) throw Error(what + ": not a JSON object ({\"name\": value, ...})");
  std::vector<std::pair<std::string, std::string>> vars;
  for (const auto& [k, v] : j.items()) vars.emplace_back(k, v.dump());
  return vars;
}

std::vector<int32_t> ChatSession::tokens(const std::string& text) const {
  // As transformers' apply_chat_template(tokenize=True): the template
  // writes BOS itself where the model wants one.
  EncodeOptions eo;
  eo.add_special = false;
  return tok_.encode(text, eo);
}

ChatTurn ChatSession::reply(const std::string& user, Sampler& sampler, const TextSink& on_text,
                            const std::function<void(const ChatTurn&)>& on_start) {
  ChatTurn turn;
  history_.push_back({"user", user});
  const int ctx = ctx_.n_ctx();
  // Room for the reply: what -n asks for, but never more than half the
  // context, so a long -n cannot crowd out the conversation.
  const int room = o_.gen.n_predict > 0 ? std::min(o_.gen.n_predict, ctx / 2) : ctx / 4;
  turn.rendered = render();
  std::vector<int32_t> ids = tokens(turn.rendered);
  const size_t first_turn = o_.system.empty() ? 0 : 1;
  while (int(ids.size()) + room > ctx && history_.size() - first_turn > 1) {
    // Drop the oldest exchange: a user turn and the reply after it.
    history_.erase(history_.begin() + long(first_turn));
    if (history_.size() - first_turn > 1 && history_[first_turn].role == "assistant")
      history_.erase(history_.begin() + long(first_turn));
    ++turn.n_dropped;
    turn.rendered = render();
    ids = tokens(turn.rendered);
  }

  if (int(ids.size()) + std::min(room, 1) >= ctx) {
    history_.pop_back();
    throw Error("the message makes a prompt of " + std::to_string(ids.size()) + " tokens; the context holds " +
                std::to_string(ctx) + " (raise -c or shorten it)");
  }
  if (on_start) on_start(turn);
  // Feed only what the cache lacks: the longest common prefix is reused.
  size_t p = 0;
  while (p < ids.size() && p < cached_.size() && ids[p] == cached_[p]) ++p;
  if (p == ids.size()) --p;  // at least one token must be fed to get logits
  GenerateOptions g = o_.gen;
  g.n_predict = o_.gen.n_predict > 0 ? o_.gen.n_predict : ctx;
  std::vector<int32_t> out;
  const std::span<const int32_t> fresh(ids.data() + p, ids.size() - p);
  turn.stats = continue_from(ctx_, tok_, fresh, int(p), g, sampler, on_text, &out,
                             std::span<const int32_t>(ids.data(), p));
  turn.n_fed = int(fresh.size());
  cached_ = ids;
  cached_.insert(cached_.end(), out.begin(), out.end());
  cached_.resize(size_t(turn.stats.n_past));
  history_.push_back({"assistant", tok_.decode(out)});
  return turn;
}

chat::Template choose_template(const std::string& choice, const Tokenizer& tok, const std::string& model_path) {
  std::string names;
  for (const std::string& n : chat::builtin_template_names()) names += (names.empty() ? "" : ", ") + n;
  std::string source, where;
  if (choice.empty()) {
    source = tok.chat_template();
    where = model_path;
    if (source.empty())
      throw file_error(model_path, "has no chat template (tokenizer.chat_template); give one with --chat-template NAME|FILE (built-in: " +
                                       names + ")");
  } else if (const char* b = chat::builtin_template(choice)) {
    source = b;
    where = "--chat-template " + choice;
  } else if (std::filesystem::exists(choice)) {
    source = read_input_file(choice, uint64_t(1) << 20, "a chat template");
    where = choice;
  } else {
    throw Error("--chat-template '" + choice + "' is neither a built-in template (" + names + ") nor a file");
  }
  try {
    return chat::Template::parse(source);
  } catch (const Error& e) {
    throw Error(where + ": " + e.what() + " (choose another with --chat-template NAME|FILE; built-in: " + names + ")");
  }
}

}  // namespace tern
