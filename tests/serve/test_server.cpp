// tern serve end to end, in process: a Server and its Engine on the bundled
// model (and a tiny model with a chat template) on an ephemeral port,
// driven by an HTTP client. Text equals what generate gives with the same
// seed and sampling, streamed or not, alone or beside other requests.
#include <gtest/gtest.h>
#include <httplib.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve/server.h"
#include "support/test_env.h"
#include "tern/chat.h"
#include "tern/error.h"
#include "tern/generate.h"

namespace {

using nlohmann::json;

struct Running {
  std::unique_ptr<tern::Model> model;
  std::unique_ptr<tern::Tokenizer> tok;
  std::optional<tern::chat::Template> tmpl;
  std::unique_ptr<tern::serve::Engine> engine;
  std::unique_ptr<tern::serve::Server> server;
  std::thread thread;
  int port = 0;

  // `chat_template`: a built-in template's name; empty: the model's own.
  Running(const std::string& path, tern::serve::ServerOptions so = {}, tern::serve::EngineOptions eo = {},
          const char* chat_template = "") {
    model = tern::Model::load(path);
    tok = std::make_unique<tern::Tokenizer>(model->file());
    if (*chat_template) tmpl.emplace(tern::chat::Template::parse(tern::chat::builtin_template(chat_template)));
    else if (!tok->chat_template().empty()) tmpl.emplace(tern::chat::Template::parse(tok->chat_template()));
    if (eo.ctx == 0) eo.ctx = 4 * model->config().context_length;
    eo.threads = 2;
    engine = std::make_unique<tern::serve::Engine>(*model, *tok, eo);
    so.port = 0;
    so.model_name = "test-model";
    server = std::make_unique<tern::serve::Server>(so, std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>()));
    port = server->bind();
    server->set_ready({model.get(), tok.get(), tmpl ? &*tmpl : nullptr, engine.get()});
    thread = std::thread([this] { server->run(); });
  }
  ~Running() {
    server->stop();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60);
    return c;
  }
};

std::string bundled() { return tern::test::source("models/kjv-bitnet-6m-tq2_0.gguf"); }

// What tern generate's library gives for a prompt, seed and sampling.
std::string generated(const tern::Model& m, const tern::Tokenizer& tok, const std::string& prompt, int n,
                      tern::SamplerParams sp) {
  tern::Context ctx(m, {.threads = 1});
  tern::Sampler s(sp);
  std::string text;
  tern::generate(ctx, tok, prompt, tern::GenerateOptions{n}, s, [&](const std::string& t) { text += t; });
  return text;
}

// POST with the response body handed to `receive` as it comes (false
// from it drops the connection).
bool post_receiving(httplib::Client& c, const std::string& path, const std::string& body,
                    const std::function<bool(const char*, size_t)>& receive) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) { return receive(data, n); };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  return c.send(req, res, err);
}

json post(httplib::Client& c, const char* path, const json& body, int want = 200) {
  auto r = c.Post(path, body.dump(), "application/json");
  EXPECT_TRUE(r) << path;
  if (!r) return {};
  EXPECT_EQ(r->status, want) << r->body;
  return json::parse(r->body);
}

// The text of a stream's chunks, and its finish reasons, from SSE lines.
struct Streamed {
  std::vector<std::string> text;
  std::vector<std::string> finish;
  std::vector<int> chunks;  // per choice, chunks before the finish chunk
  bool done = false;
  json usage;
};
Streamed stream(httplib::Client& c, const char* path, json body) {
  body["stream"] = true;
  Streamed s;
  std::string buf;
  EXPECT_TRUE(post_receiving(c, path, body.dump(), [&](const char* data, size_t n) {
    buf.append(data, n);
    return true;
  }));
  for (size_t at = 0; (at = buf.find("data: ", at)) != std::string::npos;) {
    const size_t end = buf.find("\n\n", at);
    const std::string line = buf.substr(at + 6, end - at - 6);
    at = end;
    if (line == "[DONE]") {
      s.done = true;
      continue;
    }
    const json j = json::parse(line);
    if (j.contains("usage") && !j["usage"].is_null()) s.usage = j["usage"];
    for (const json& ch : j["choices"]) {
      const size_t i = ch["index"];
      if (s.text.size() <= i) s.text.resize(i + 1), s.finish.resize(i + 1), s.chunks.resize(i + 1);
      if (ch["finish_reason"].is_null()) ++s.chunks[i];
      if (ch.contains("text")) s.text[i] += ch["text"].get<std::string>();
      if (ch.contains("delta") && ch["delta"].contains("content")) s.text[i] += ch["delta"]["content"].get<std::string>();
      if (!ch["finish_reason"].is_null()) s.finish[i] = ch["finish_reason"];
    }
  }
  return s;
}

TEST(Serve, CompletionIsGeneratesTextStreamedOrNot) {
  Running srv(bundled());
  auto c = srv.client();
  const json body{{"prompt", "And God said"}, {"max_tokens", 24}, {"seed", 5}, {"temperature", 0.9}, {"top_k", 30}};
  const json whole = post(c, "/v1/completions", body);
  tern::SamplerParams sp{.temp = 0.9f, .top_k = 30, .top_p = 0.95f, .seed = 5};
  const std::string want = generated(*srv.model, *srv.tok, "And God said", 24, sp);
  EXPECT_EQ(whole["choices"][0]["text"], want);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["object"], "text_completion");
  EXPECT_EQ(whole["model"], "test-model");
  EXPECT_EQ(whole["usage"]["completion_tokens"], 24);
  const Streamed s = stream(c, "/v1/completions", body);
  ASSERT_EQ(s.text.size(), 1u);
  EXPECT_EQ(s.text[0], want);
  EXPECT_EQ(s.finish[0], "length");
  EXPECT_EQ(s.chunks[0], 24);  // one per token, as llama-server streams
  EXPECT_TRUE(s.done);
}

// llama-server's ignore_eos: a request whose end-of-generation token is
// certain (logit_bias) stops at once without it and runs to max_tokens with it.
TEST(Serve, IgnoreEosRunsToMaxTokens) {
  Running srv(bundled());
  auto c = srv.client();
  json body{{"prompt", "And God said"}, {"max_tokens", 12}, {"seed", 3},
            {"logit_bias", {{std::to_string(srv.tok->eos()), 100}}}};
  const json ends = post(c, "/v1/completions", body);
  EXPECT_EQ(ends["usage"]["completion_tokens"], 0);
  EXPECT_EQ(ends["choices"][0]["finish_reason"], "stop");
  body["ignore_eos"] = true;
  const json runs = post(c, "/v1/completions", body);
  EXPECT_EQ(runs["usage"]["completion_tokens"], 12);
  EXPECT_EQ(runs["choices"][0]["finish_reason"], "length");
}

TEST(Serve, NChoicesTakeSuccessiveSeeds) {
  Running srv(bundled());
  auto c = srv.client();
  const json r = post(c, "/v1/completions", {{"prompt", "In the beginning"}, {"max_tokens", 12}, {"seed", 40}, {"n", 3}});
  ASSERT_EQ(r["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    tern::SamplerParams sp;
    sp.seed = uint64_t(40 + i);
    EXPECT_EQ(r["choices"][i]["text"], generated(*srv.model, *srv.tok, "In the beginning", 12, sp)) << i;
  }
  EXPECT_EQ(r["usage"]["completion_tokens"], 36);
}

// A stop string that spans tokens ends the text before it, and no part of
// it is streamed.
TEST(Serve, StopStringsAcrossTokensAreNeverSent) {
  Running srv(bundled());
  auto c = srv.client();
  const json greedy{{"prompt", "In the beginning"}, {"max_tokens", 40}, {"temperature", 0}};
  const std::string full = post(c, "/v1/completions", greedy)["choices"][0]["text"];
  ASSERT_GT(full.size(), 30u);
  const std::string stop = full.substr(10, 9);  // some middle words, across token boundaries
  json body = greedy;
  body["stop"] = json::array({"never there", stop});
  const json r = post(c, "/v1/completions", body);
  EXPECT_EQ(r["choices"][0]["text"], full.substr(0, full.find(stop)));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  const Streamed s = stream(c, "/v1/completions", body);
  EXPECT_EQ(s.text[0], full.substr(0, full.find(stop)));
  EXPECT_EQ(s.finish[0], "stop");
}

// Greedy text of a request alone, and beside 7 others at once (one batch).
TEST(Serve, GreedyTextDoesNotDependOnOtherRequests) {
  tern::serve::EngineOptions eo;
  eo.slots = 8;
  Running srv(bundled(), {}, eo);
  const char* prompts[] = {"In the beginning", "And God said", "The LORD is my shepherd", "Jesus wept",
                           "Blessed are", "And it came to pass", "Let there be", "For God so loved"};
  std::vector<std::string> alone, together(8);
  for (const char* p : prompts) {
    auto c = srv.client();
    alone.push_back(post(c, "/v1/completions", {{"prompt", p}, {"max_tokens", 30}, {"temperature", 0}})["choices"][0]["text"]);
  }
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i)
    ts.emplace_back([&, i] {
      auto c = srv.client();
      together[size_t(i)] = post(c, "/v1/completions", {{"prompt", prompts[i]}, {"max_tokens", 30}, {"temperature", 0}})
          ["choices"][0]["text"];
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(together, alone);
}

TEST(Serve, ChatUsesTheTemplateAndLogprobs) {
  Running srv((tern::test::test_models() / "bpe" / "tq2_0.gguf").string());
  auto c = srv.client();
  const json body{{"messages", json::array({{{"role", "user"}, {"content", "Hello"}}})},
                  {"max_tokens", 6}, {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 2}};
  const json r = post(c, "/v1/chat/completions", body);
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  const json& lp = r["choices"][0]["logprobs"]["content"];
  ASSERT_GE(lp.size(), 1u);
  EXPECT_EQ(lp[0]["top_logprobs"].size(), 2u);
  EXPECT_LE(lp[0]["logprob"].get<double>(), 0.0);
  // Greedy: the chosen token is the most likely one.
  EXPECT_EQ(lp[0]["token"], lp[0]["top_logprobs"][0]["token"]);
  const Streamed s = stream(c, "/v1/chat/completions", {{"messages", body["messages"]}, {"max_tokens", 6},
                                                        {"temperature", 0}, {"stream_options", {{"include_usage", true}}}});
  EXPECT_EQ(s.text[0], r["choices"][0]["message"]["content"]);
  EXPECT_EQ(s.usage["completion_tokens"], r["usage"]["completion_tokens"]);
  // A second turn finds the first in a slot's cache.
  json turn2 = body;
  turn2["messages"].push_back({{"role", "assistant"}, {"content", r["choices"][0]["message"]["content"]}});
  turn2["messages"].push_back({{"role", "user"}, {"content", "And then?"}});
  post(c, "/v1/chat/completions", turn2);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  const size_t at = m->body.find("\ntern_prompt_tokens_cached_total ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::stoll(m->body.substr(at + 33)), 0) << m->body;
}

// chat_template_kwargs reach the template (Qwen3's enable_thinking=false
// adds the empty reasoning block to the prompt), over the server's
// --chat-template-kwargs; a reply without a <think> block is the same text
// whether the reasoning is split out or not, streamed or not.
TEST(Serve, ChatTemplateKwargsAndReasoningFormat) {
  const std::string path = (tern::test::test_models() / "bpe" / "tq2_0.gguf").string();
  const json messages = json::array({{{"role", "user"}, {"content", "Hello"}}});
  const json base{{"messages", messages}, {"max_tokens", 6}, {"temperature", 0}};
  json off = base;
  off["chat_template_kwargs"] = {{"enable_thinking", false}};
  json on = base;
  on["chat_template_kwargs"] = {{"enable_thinking", true}};
  int thinking = 0, not_thinking = 0;
  {
    Running srv(path, {}, {}, "qwen3");
    auto c = srv.client();
    const json r = post(c, "/v1/chat/completions", base);
    thinking = r["usage"]["prompt_tokens"];
    not_thinking = post(c, "/v1/chat/completions", off)["usage"]["prompt_tokens"];
    EXPECT_GT(not_thinking, thinking);  // "<think>\n\n</think>\n\n" more
    EXPECT_EQ(post(c, "/v1/chat/completions", on)["usage"]["prompt_tokens"], thinking);
    EXPECT_FALSE(r["choices"][0]["message"].contains("reasoning_content")) << r.dump();
    json none = base;
    none["reasoning_format"] = "none";
    EXPECT_EQ(post(c, "/v1/chat/completions", none)["choices"][0]["message"]["content"],
              r["choices"][0]["message"]["content"]);
    EXPECT_EQ(stream(c, "/v1/chat/completions", base).text[0], r["choices"][0]["message"]["content"]);
    json bad = base;
    bad["chat_template_kwargs"] = "enable_thinking";
    post(c, "/v1/chat/completions", bad, 400);
  }
  tern::serve::ServerOptions so;
  so.template_vars = {{"enable_thinking", "false"}};
  Running srv(path, so, {}, "qwen3");
  auto c = srv.client();
  EXPECT_EQ(post(c, "/v1/chat/completions", base)["usage"]["prompt_tokens"], not_thinking);
  EXPECT_EQ(post(c, "/v1/chat/completions", on)["usage"]["prompt_tokens"], thinking);
}

TEST(Serve, TokenizeDetokenizeModelsHealth) {
  Running srv(bundled());
  auto c = srv.client();
  const json t = post(c, "/tokenize", {{"content", "In the beginning"}});
  ASSERT_GE(t["tokens"].size(), 2u);
  const json d = post(c, "/detokenize", {{"tokens", t["tokens"]}});
  EXPECT_NE(d["content"].get<std::string>().find("beginning"), std::string::npos);
  post(c, "/detokenize", {{"tokens", {1 << 30}}}, 400);
  EXPECT_EQ(c.Get("/health")->status, 200);
  const auto models = json::parse(c.Get("/v1/models")->body);
  EXPECT_EQ(models["data"][0]["id"], "test-model");
}

TEST(Serve, ErrorsAreOpenAIErrorObjects) {
  tern::serve::ServerOptions so;
  so.api_key = "s3cret";
  so.max_body = 4096;
  Running srv(bundled(), so);
  auto c = srv.client();
  EXPECT_EQ(c.Get("/health")->status, 200);  // no key needed
  auto r = c.Post("/v1/completions", R"({"prompt": "x"})", "application/json");
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_api_key");
  c.set_bearer_token_auth("wrong");
  EXPECT_EQ(c.Get("/v1/models")->status, 401);
  c.set_bearer_token_auth("s3cret");
  EXPECT_EQ(c.Get("/v1/models")->status, 200);
  const auto check = [&](const httplib::Result& res, int status) {
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status) << res->body;
    const json j = json::parse(res->body);
    EXPECT_TRUE(j["error"].contains("message")) << res->body;
    EXPECT_TRUE(j["error"].contains("type")) << res->body;
  };
  check(c.Post("/v1/completions", "{not json", "application/json"), 400);
  check(c.Post("/v1/completions", R"({"prompt": 5})", "application/json"), 400);
  check(c.Get("/v1/nothing"), 404);
  check(c.Post("/v1/completions", std::string(8192, ' '), "application/json"), 413);
  std::string longest = R"({"prompt": ")";
  for (int i = 0; i < 300; ++i) longest += "and the ";
  check(c.Post("/v1/completions", longest + "\"}", "application/json"), 400);  // over a slot's context
  check(c.Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})", "application/json"), 400);
}

// A client that goes away mid-stream frees its slot within a step or two.
TEST(Serve, DisconnectFreesTheSlot) {
  tern::serve::EngineOptions eo;
  eo.slots = 1;
  Running srv(bundled(), {}, eo);
  {
    auto c = srv.client();
    int chunks = 0;
    post_receiving(c, "/v1/completions",
                   json{{"prompt", "And"}, {"max_tokens", 200}, {"stream", true}, {"temperature", 1}}.dump(),
                   [&](const char*, size_t) { return ++chunks < 3; });  // drops the connection
  }
  auto c = srv.client();
  bool freed = false;
  for (int i = 0; i < 100 && !freed; ++i) {
    const std::string m = c.Get("/metrics")->body;
    freed = m.find("tern_slots_busy 0") != std::string::npos;
    if (!freed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(freed);
  // And the slot serves the next request.
  EXPECT_EQ(post(c, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}})["choices"].size(), 1u);
}

// With the one slot busy and no room to wait, a request is refused at once.
TEST(Serve, FullQueueIs503WithRetryAfter) {
  tern::serve::EngineOptions eo;
  eo.slots = 1;
  eo.max_queue = 0;
  Running srv(bundled(), {}, eo);
  std::atomic<bool> started{false};
  std::thread busy([&] {
    auto c = srv.client();
    post_receiving(c, "/v1/completions",
                   json{{"prompt", "And"}, {"max_tokens", 150}, {"stream", true}, {"temperature", 1}}.dump(),
                   [&](const char*, size_t) {
                     started = true;
                     return true;
                   });
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto c = srv.client();
  auto r = c.Post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  busy.join();
  EXPECT_EQ(c.Post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})", "application/json")->status, 200);
}

// A second server on a port in use fails to bind (httplib's default
// SO_REUSEPORT would let both listen and split the connections).
TEST(Serve, APortInUseIsAnError) {
  Running srv(bundled());
  tern::serve::ServerOptions so;
  so.port = srv.port;
  tern::serve::Server second(so, std::make_shared<spdlog::logger>("t2", std::make_shared<spdlog::sinks::null_sink_mt>()));
  EXPECT_THROW(second.bind(), tern::Error);
}

}  // namespace
