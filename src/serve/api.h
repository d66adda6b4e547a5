// The OpenAI-compatible request and response bodies of tern serve: a
// request's JSON checked into a CompletionRequest (every field's type and
// range, so nothing malformed reaches the engine), and the JSON of
// responses, stream chunks and errors. No I/O; the fuzz target
// (tests/fuzz/fuzz_serve_request.cpp) runs parse_completion on any bytes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "tern/chat_template.h"
#include "tern/generate.h"

namespace tern::serve {

// A request the client got wrong: HTTP status 400 (or `status`), OpenAI's
// error object with `param` naming the field.
struct ApiError {
  int status = 400;
  std::string message = {}, type = "invalid_request_error", param = {}, code = {};
};

nlohmann::json error_json(const ApiError& e);

struct CompletionRequest {
  bool chat = false;
  std::vector<chat::Message> messages;  // chat
  std::string prompt;                   // completions
  std::optional<int> max_tokens;        // max_tokens or max_completion_tokens; none: the default
  SamplerParams sampling;               // seed 0 and no `seed_given`: the server draws one
  bool seed_given = false;
  std::vector<std::string> stop;        // up to 4, none empty
  int n = 1;
  // Log probabilities: -1 none; else how many alternatives per token
  // (chat: top_logprobs with logprobs true; completions: logprobs N).
  int logprobs = -1;
  bool stream = false, include_usage = false;
  bool echo = false;  // completions: the prompt's text before the completion
  bool ignore_eos = false;  // generate past end-of-generation tokens (llama-server's extension)
  // chat: template variables (chat_template_kwargs, llama-server's
  // extension), over the server's --chat-template-kwargs.
  std::vector<std::pair<std::string, std::string>> template_vars;
  // chat: a reply that opens with a <think> block returns it apart, as
  // message.reasoning_content / delta.reasoning_content ("auto", "deepseek"),
  // or inside content ("none"); empty: the server's --reasoning-format.
  std::string reasoning_format;
};

// Parses a /v1/completions (chat false) or /v1/chat/completions body.
// Unknown fields are ignored, as OpenAI-compatible servers do. Limits:
// `max_messages` messages, n up to `max_n`.
struct ParseLimits {
  size_t max_messages = 10000;
  int max_n = 16;
  int vocab = 0;  // logit_bias ids must be below it
};
std::variant<CompletionRequest, ApiError> parse_completion(std::string_view body, bool chat,
                                                           const ParseLimits& limits);

// One token's log probability for the response's logprobs.
struct TokenLogprob {
  std::string text;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // the most likely alternatives
};

// What one choice came to.
struct ChoiceResult {
  std::string text;       // the answer (chat: the reasoning taken out when split)
  std::string reasoning;  // chat: the <think> block's text, when split
  Finish finish = Finish::Stop;
  std::vector<TokenLogprob> logprobs;
  int n_generated = 0;
};

struct Usage {
  int prompt_tokens = 0, completion_tokens = 0;
};

// The whole response (stream false).
nlohmann::json completion_json(const CompletionRequest& r, const std::string& id, int64_t created,
                               const std::string& model, const std::vector<ChoiceResult>& choices,
                               const Usage& usage);
// One stream chunk: choice `index` gains `text` (and its tokens' logprobs),
// or ends with `finish`.
// `reasoning` (chat) goes to delta.reasoning_content.
nlohmann::json chunk_json(const CompletionRequest& r, const std::string& id, int64_t created,
                          const std::string& model, int index, const std::string& text,
                          const std::vector<TokenLogprob>& logprobs, const std::optional<Finish>& finish,
                          bool first, const std::string& reasoning = {});
// The last chunk with usage (stream_options.include_usage), no choices.
nlohmann::json usage_chunk_json(const CompletionRequest& r, const std::string& id, int64_t created,
                                const std::string& model, const Usage& usage);

// "none", "auto" or "deepseek" (llama-server's names; auto and deepseek both
// split a leading <think> block out).
bool is_reasoning_format(const std::string& f);
// Whether the reply's reasoning is returned apart (chat, format not "none").
bool splits_reasoning(const CompletionRequest& r);

// JSON text that never throws: invalid UTF-8 in generated text becomes U+FFFD.
std::string dump(const nlohmann::json& j);

}  // namespace tern::serve
