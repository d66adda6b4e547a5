#include "api.h"

#include <cmath>
#include <limits>

namespace tern::serve {

using nlohmann::json;

json error_json(const ApiError& e) {
  json err{{"message", e.message}, {"type", e.type}};
  err["param"] = e.param.empty() ? json(nullptr) : json(e.param);
  err["code"] = e.code.empty() ? json(nullptr) : json(e.code);
  return json{{"error", err}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

bool is_reasoning_format(const std::string& f) { return f == "none" || f == "auto" || f == "deepseek"; }
bool splits_reasoning(const CompletionRequest& r) { return r.chat && r.reasoning_format != "none"; }

namespace {

// Deeper than any request has reason to be; checked before parsing, so a
// hostile body of a million brackets costs one scan.
constexpr int kMaxDepth = 32;

bool too_deep(std::string_view s) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

struct Bad {
  ApiError e;
};

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw Bad{ApiError{400, message, "invalid_request_error", param, ""}};
}

// Field `key` of `body` as a number in [lo, hi], if present and not null.
std::optional<double> number(const json& body, const char* key, double lo, double hi) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) bad(key, std::string("'") + key + "' must be a number");
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi)
    bad(key, std::string("'") + key + "' must be from " + json(lo).dump() + " to " + json(hi).dump());
  return v;
}

std::optional<int64_t> integer(const json& body, const char* key, int64_t lo, int64_t hi) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() && !it->is_number_unsigned()) bad(key, std::string("'") + key + "' must be an integer");
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    bad(key, std::string("'") + key + "' is out of range");
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi)
    bad(key, std::string("'") + key + "' must be from " + std::to_string(lo) + " to " + std::to_string(hi));
  return v;
}

std::optional<bool> boolean(const json& body, const char* key) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) bad(key, std::string("'") + key + "' must be true or false");
  return it->get<bool>();
}

// A message's content: a string, or text parts [{"type": "text", "text": ...}].
std::string content_text(const json& c, const std::string& param) {
  if (c.is_null()) return "";
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) bad(param, "'content' must be a string or an array of text parts");
  std::string text;
  for (const json& part : c) {
    if (!part.is_object() || !part.contains("type") || part["type"] != "text")
      bad(param, "only text content parts are supported");
    if (!part.contains("text") || !part["text"].is_string()) bad(param, "a text part needs a 'text' string");
    text += part["text"].get<std::string>();
  }
  return text;
}

void parse_messages(const json& body, const ParseLimits& limits, CompletionRequest& r) {
  const auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty()) bad("messages", "'messages' must be a non-empty array");
  if (it->size() > limits.max_messages)
    bad("messages", "at most " + std::to_string(limits.max_messages) + " messages");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) bad(at, at + " must be an object");
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string()) bad(at + ".role", at + " needs a 'role' string");
    std::string name = role->get<std::string>();
    if (name == "developer") name = "system";  // OpenAI's newer name for it
    if (name != "system" && name != "user" && name != "assistant" && name != "tool")
      bad(at + ".role", "role '" + name + "' is not system, user, assistant or tool");
    const auto content = m.find("content");
    r.messages.push_back({name, content_text(content == m.end() ? json(nullptr) : *content, at + ".content")});
  }
}

void parse_prompt(const json& body, CompletionRequest& r) {
  const auto it = body.find("prompt");
  if (it == body.end()) bad("prompt", "'prompt' is required");
  if (it->is_string()) {
    r.prompt = it->get<std::string>();
  } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
    r.prompt = (*it)[0].get<std::string>();
  } else {
    bad("prompt", "'prompt' must be a string (or an array of one string)");
  }
}

void parse_stop(const json& body, CompletionRequest& r) {
  const auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return;
  if (it->is_string()) {
    if (!it->get<std::string>().empty()) r.stop.push_back(it->get<std::string>());
    return;
  }
  if (!it->is_array() || it->size() > 4) bad("stop", "'stop' must be a string or an array of up to 4 strings");
  for (const json& s : *it) {
    if (!s.is_string()) bad("stop", "'stop' must be a string or an array of up to 4 strings");
    if (!s.get<std::string>().empty()) r.stop.push_back(s.get<std::string>());
  }
}

void parse_logit_bias(const json& body, const ParseLimits& limits, CompletionRequest& r) {
  const auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_object()) bad("logit_bias", "'logit_bias' must be an object of token ids to numbers");
  if (it->size() > 1024) bad("logit_bias", "at most 1024 tokens in 'logit_bias'");
  for (const auto& [key, value] : it->items()) {
    char* end = nullptr;
    const long id = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || id < 0 || id >= limits.vocab)
      bad("logit_bias", "'logit_bias' key '" + key + "' is not a token id below " + std::to_string(limits.vocab));
    if (!value.is_number() || !std::isfinite(value.get<double>()) || std::fabs(value.get<double>()) > 100)
      bad("logit_bias", "'logit_bias' values must be numbers from -100 to 100");
    r.sampling.logit_bias.push_back({int32_t(id), value.get<float>()});
  }
}

void parse_logprobs(const json& body, CompletionRequest& r) {
  if (r.chat) {
    if (boolean(body, "logprobs").value_or(false)) r.logprobs = int(integer(body, "top_logprobs", 0, 20).value_or(0));
    else if (integer(body, "top_logprobs", 0, 20)) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    return;
  }
  if (const auto n = integer(body, "logprobs", 0, 5)) r.logprobs = int(*n);
}

// llama-server's chat extensions: chat_template_kwargs {"name": value} and
// reasoning_format.
void parse_template_options(const json& body, CompletionRequest& r) {
  if (const auto k = body.find("chat_template_kwargs"); k != body.end() && !k->is_null()) {
    if (!k->is_object()) bad("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    for (const auto& [name, v] : k->items()) r.template_vars.emplace_back(name, v.dump());
  }
  if (const auto f = body.find("reasoning_format"); f != body.end() && !f->is_null()) {
    if (!f->is_string() || !is_reasoning_format(f->get<std::string>()))
      bad("reasoning_format", "'reasoning_format' must be \"none\", \"auto\" or \"deepseek\"");
    r.reasoning_format = f->get<std::string>();
  }
}

CompletionRequest parse_object(const json& body, bool chat, const ParseLimits& limits) {
  if (!body.is_object()) bad("", "the request body must be a JSON object");
  CompletionRequest r;
  r.chat = chat;
  if (chat) parse_messages(body, limits, r);
  else parse_prompt(body, r);
  r.max_tokens = integer(body, "max_completion_tokens", 0, std::numeric_limits<int32_t>::max());
  if (!r.max_tokens) r.max_tokens = integer(body, "max_tokens", 0, std::numeric_limits<int32_t>::max());
  SamplerParams& s = r.sampling;
  s.temp = float(number(body, "temperature", 0, 100).value_or(s.temp));
  s.top_p = float(number(body, "top_p", 0, 1).value_or(s.top_p));
  s.top_k = int(integer(body, "top_k", 0, std::numeric_limits<int32_t>::max()).value_or(s.top_k));
  s.min_p = float(number(body, "min_p", 0, 1).value_or(s.min_p));
  s.presence_penalty = float(number(body, "presence_penalty", -2, 2).value_or(0));
  s.frequency_penalty = float(number(body, "frequency_penalty", -2, 2).value_or(0));
  if (const auto seed = integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) {
    s.seed = uint64_t(*seed);
    r.seed_given = true;
  }
  parse_stop(body, r);
  parse_logit_bias(body, limits, r);
  parse_logprobs(body, r);
  r.n = int(integer(body, "n", 1, limits.max_n).value_or(1));
  r.stream = boolean(body, "stream").value_or(false);
  r.ignore_eos = boolean(body, "ignore_eos").value_or(false);  // llama-server's extension
  if (const auto so = body.find("stream_options"); so != body.end() && !so->is_null()) {
    if (!so->is_object()) bad("stream_options", "'stream_options' must be an object");
    r.include_usage = boolean(*so, "include_usage").value_or(false);
  }
  if (!chat) r.echo = boolean(body, "echo").value_or(false);
  if (chat) parse_template_options(body, r);
  return r;
}

}  // namespace

std::variant<CompletionRequest, ApiError> parse_completion(std::string_view body, bool chat,
                                                           const ParseLimits& limits) {
  if (too_deep(body)) return ApiError{400, "the request nests deeper than " + std::to_string(kMaxDepth) + " levels"};
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return ApiError{400, "the request body is not valid JSON"};
  try {
    return parse_object(j, chat, limits);
  } catch (const Bad& b) {
    return b.e;
  } catch (const json::exception& e) {  // a string field with invalid UTF-8 read back, and the like
    return ApiError{400, std::string("bad request: ") + e.what()};
  }
}

namespace {

const char* finish_text(Finish f) { return f == Finish::Length ? "length" : "stop"; }

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

// Chat's logprobs: {"content": [{token, logprob, bytes, top_logprobs}]}.
json chat_logprobs(const std::vector<TokenLogprob>& lp) {
  json content = json::array();
  for (const TokenLogprob& t : lp) {
    json top = json::array();
    for (const auto& [text, l] : t.top) top.push_back({{"token", text}, {"logprob", l}, {"bytes", bytes_of(text)}});
    content.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", bytes_of(t.text)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

// Completions' logprobs: parallel arrays, text offsets from `offset`.
json completion_logprobs(const std::vector<TokenLogprob>& lp, size_t offset) {
  json tokens = json::array(), logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const TokenLogprob& t : lp) {
    tokens.push_back(t.text);
    logprobs.push_back(t.logprob);
    json alt = json::object();
    for (const auto& [text, l] : t.top) alt[text] = l;
    top.push_back(alt);
    offsets.push_back(offset);
    offset += t.text.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

}  // namespace

json completion_json(const CompletionRequest& r, const std::string& id, int64_t created, const std::string& model,
                     const std::vector<ChoiceResult>& choices, const Usage& usage) {
  json out{{"id", id}, {"object", r.chat ? "chat.completion" : "text_completion"}, {"created", created}, {"model", model}};
  json cs = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    json choice{{"index", i}, {"finish_reason", finish_text(c.finish)}};
    const std::string text = r.echo ? r.prompt + c.text : c.text;
    if (r.chat) {
      choice["message"] = {{"role", "assistant"}, {"content", text}};
      if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
    } else {
      choice["text"] = text;
    }
    if (r.logprobs < 0) choice["logprobs"] = nullptr;
    else choice["logprobs"] = r.chat ? chat_logprobs(c.logprobs) : completion_logprobs(c.logprobs, r.echo ? r.prompt.size() : 0);
    cs.push_back(choice);
  }
  out["choices"] = cs;
  out["usage"] = usage_json(usage);
  return out;
}

json chunk_json(const CompletionRequest& r, const std::string& id, int64_t created, const std::string& model, int index,
                const std::string& text, const std::vector<TokenLogprob>& logprobs,
                const std::optional<Finish>& finish, bool first, const std::string& reasoning) {
  json choice{{"index", index}};
  if (r.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
    if (!text.empty() || (first && !finish && reasoning.empty())) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  if (r.logprobs < 0 || logprobs.empty()) choice["logprobs"] = nullptr;
  else choice["logprobs"] = r.chat ? chat_logprobs(logprobs) : completion_logprobs(logprobs, 0);
  choice["finish_reason"] = finish ? json(finish_text(*finish)) : json(nullptr);
  json out{{"id", id},
           {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
           {"created", created},
           {"model", model},
           {"choices", json::array({choice})}};
  if (r.include_usage) out["usage"] = nullptr;
  return out;
}

json usage_chunk_json(const CompletionRequest& r, const std::string& id, int64_t created, const std::string& model,
                      const Usage& usage) {
  return {{"id", id},
          {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", json::array()},
          {"usage", usage_json(usage)}};
}

}  // namespace tern::serve
