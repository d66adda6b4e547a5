// The request parser of tern serve: OpenAI's fields into a
// CompletionRequest, every wrong type or range an ApiError naming the field.
#include <gtest/gtest.h>

#include <string>

#include "serve/api.h"

namespace {

using tern::serve::ApiError;
using tern::serve::CompletionRequest;

tern::serve::ParseLimits limits() {
  tern::serve::ParseLimits l;
  l.vocab = 1000;
  l.max_n = 4;
  return l;
}

CompletionRequest ok(const std::string& body, bool chat) {
  auto r = tern::serve::parse_completion(body, chat, limits());
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << body << ": " << e->message;
    return {};
  }
  return std::get<CompletionRequest>(r);
}

ApiError bad(const std::string& body, bool chat) {
  auto r = tern::serve::parse_completion(body, chat, limits());
  if (auto* e = std::get_if<ApiError>(&r)) return *e;
  ADD_FAILURE() << body << " was taken";
  return {};
}

TEST(ServeApi, ChatFieldsAreRead) {
  const CompletionRequest r = ok(R"({
      "model": "whatever", "messages": [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": null}, {"role": "developer", "content": "x"}],
      "max_completion_tokens": 12, "temperature": 0.5, "top_p": 0.9, "top_k": 7, "min_p": 0.1, "seed": -3,
      "stop": ["\n", "END"], "n": 2, "presence_penalty": 0.5, "frequency_penalty": -0.5,
      "logit_bias": {"42": -100, "7": 3.5}, "logprobs": true, "top_logprobs": 3,
      "stream": true, "stream_options": {"include_usage": true}, "unknown_field": {"anything": [1, 2]},
      "chat_template_kwargs": {"enable_thinking": false, "n": [1]}, "reasoning_format": "none"})",
                                 true);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[1].content, "Hi there");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.messages[3].role, "system");
  EXPECT_EQ(r.max_tokens, 12);
  EXPECT_FLOAT_EQ(r.sampling.temp, 0.5f);
  EXPECT_EQ(r.sampling.top_k, 7);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
  EXPECT_TRUE(r.seed_given);
  EXPECT_EQ(r.sampling.seed, uint64_t(-3));
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(r.n, 2);
  ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.template_vars, (std::vector<std::pair<std::string, std::string>>{{"enable_thinking", "false"}, {"n", "[1]"}}));
  EXPECT_EQ(r.reasoning_format, "none");
  EXPECT_FALSE(tern::serve::splits_reasoning(r));
}

TEST(ServeApi, CompletionFieldsAndDefaults) {
  CompletionRequest r = ok(R"({"prompt": "Once", "max_tokens": 5, "logprobs": 2, "echo": true, "stop": "x"})", false);
  EXPECT_EQ(r.prompt, "Once");
  EXPECT_EQ(r.logprobs, 2);
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
  r = ok(R"({"prompt": ["only one"]})", false);
  EXPECT_EQ(r.prompt, "only one");
  EXPECT_FALSE(r.max_tokens);
  EXPECT_FALSE(r.seed_given);
  EXPECT_EQ(r.logprobs, -1);
  EXPECT_EQ(r.n, 1);
  EXPECT_FLOAT_EQ(r.sampling.temp, tern::SamplerParams{}.temp);  // generate's defaults
}

TEST(ServeApi, BadRequestsNameTheirField) {
  const std::pair<const char*, const char*> chat[] = {
      {R"({"messages": []})", "messages"},
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": 1e300})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1.5})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 99999999999999999999})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 5})", "n"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a", "b", "c", "d", "e"]})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"abc": 1}})", "logit_bias"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"1000": 1}})", "logit_bias"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"5": 101}})", "logit_bias"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})", "logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": 3})", "stream_options"},
      {R"({"messages": [{"role": "user", "content": "x"}], "presence_penalty": 3})", "presence_penalty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": [1]})", "chat_template_kwargs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": "x"})", "chat_template_kwargs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_format": "raw"})", "reasoning_format"},
      {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_format": 1})", "reasoning_format"},
  };
  for (auto [body, param] : chat) {
    const ApiError e = bad(body, true);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
  EXPECT_EQ(bad(R"({"prompt": 3})", false).param, "prompt");
  EXPECT_EQ(bad(R"({"prompt": ["a", "b"]})", false).param, "prompt");
  EXPECT_EQ(bad(R"({})", false).param, "prompt");
  EXPECT_EQ(bad(R"({"prompt": "x", "logprobs": 6})", false).param, "logprobs");
}

TEST(ServeApi, MalformedBodiesAreErrorsNotCrashes) {
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  std::string many = R"({"messages": [)";
  for (int i = 0; i < 10001; ++i) many += std::string(i ? "," : "") + R"({"role": "user", "content": "x"})";
  many += "]}";
  for (const std::string& body : {std::string("not json"), std::string("{\"prompt\": \"\xff\xfe\"}"), std::string("[]"),
                                  std::string("null"), std::string(""), deep, many, std::string("{\"prompt\": \"a\"")}) {
    const ApiError e = bad(body, body == many);
    EXPECT_EQ(e.status, 400) << body.substr(0, 40);
  }
}

TEST(ServeApi, ResponsesHaveOpenAIsShape) {
  CompletionRequest r = ok(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 1})",
                           true);
  tern::serve::ChoiceResult c;
  c.text = "hello";
  c.finish = tern::Finish::Length;
  c.logprobs = {{"hel", -0.5f, {{"hel", -0.5f}}}, {"lo", -1.0f, {{"lo", -1.0f}}}};
  const auto j = tern::serve::completion_json(r, "chatcmpl-1", 7, "m", {c}, {3, 2});
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"][1]["token"], "lo");
  EXPECT_EQ(j["usage"]["total_tokens"], 5);
  const auto chunk = tern::serve::chunk_json(r, "chatcmpl-1", 7, "m", 0, "he", {}, std::nullopt, true);
  EXPECT_EQ(chunk["object"], "chat.completion.chunk");
  EXPECT_EQ(chunk["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chunk["choices"][0]["delta"]["content"], "he");
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  const auto err = tern::serve::error_json({400, "bad", "invalid_request_error", "n", ""});
  EXPECT_EQ(err["error"]["param"], "n");
  EXPECT_TRUE(err["error"]["code"].is_null());
  // A reply's reasoning, split out, goes beside the content.
  c.reasoning = "Add them.";
  const auto split = tern::serve::completion_json(r, "chatcmpl-1", 7, "m", {c}, {3, 2});
  EXPECT_EQ(split["choices"][0]["message"]["reasoning_content"], "Add them.");
  EXPECT_EQ(split["choices"][0]["message"]["content"], "hello");
  EXPECT_FALSE(j["choices"][0]["message"].contains("reasoning_content"));
  const auto think = tern::serve::chunk_json(r, "chatcmpl-1", 7, "m", 0, "", {}, std::nullopt, true, "Add");
  EXPECT_EQ(think["choices"][0]["delta"]["reasoning_content"], "Add");
  EXPECT_FALSE(think["choices"][0]["delta"].contains("content"));
  // Invalid UTF-8 in generated text does not stop the JSON.
  EXPECT_NE(tern::serve::dump(nlohmann::json{{"t", std::string("a\xff")}}).find("\xef\xbf\xbd"), std::string::npos);
}

}  // namespace
