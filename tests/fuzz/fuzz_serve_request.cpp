// libFuzzer target for tern serve's request parser (src/serve/api.cpp), the
// first code any client's bytes reach: any body must give a request within
// its limits or an error status, never a crash, and the request's strings
// must come back out through the response JSON.
#include <cstdint>
#include <string_view>

#include "serve/api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tern::serve::ParseLimits limits;
  limits.vocab = 512;
  limits.max_n = 4;
  limits.max_messages = 64;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (const bool chat : {false, true}) {
    const auto r = tern::serve::parse_completion(body, chat, limits);
    if (const auto* e = std::get_if<tern::serve::ApiError>(&r)) {
      if (e->status < 400 || e->status > 599 || e->message.empty()) __builtin_trap();
      continue;
    }
    const auto& q = std::get<tern::serve::CompletionRequest>(r);
    if (q.n < 1 || q.n > limits.max_n || q.stop.size() > 4 || q.messages.size() > limits.max_messages ||
        (chat && q.messages.empty()) || q.logprobs > 20)
      __builtin_trap();
    for (const auto& s : q.stop)
      if (s.empty()) __builtin_trap();
    for (const auto& [id, bias] : q.sampling.logit_bias)
      if (id < 0 || id >= limits.vocab || !(bias >= -100 && bias <= 100)) __builtin_trap();
    tern::serve::ChoiceResult c;
    c.text = chat ? (q.messages.empty() ? std::string() : q.messages.back().content) : q.prompt;
    (void)tern::serve::dump(tern::serve::completion_json(q, "id", 0, "m", {c}, {1, 1}));
  }
  return 0;
}
