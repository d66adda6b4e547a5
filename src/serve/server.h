// tern serve's HTTP side (cpp-httplib): the OpenAI-compatible endpoints,
// llama-server's /health, /tokenize, /detokenize and /metrics, the API key,
// body and time limits, server-sent events, the access log. Requests are
// turned into engine Jobs (engine.h) and their output written as it comes;
// a client that goes away cancels its jobs.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine.h"
#include "tern/chat_template.h"
#include "tern/model.h"
#include "tern/tokenizer.h"

namespace spdlog {
class logger;
}
namespace httplib {
class Server;
}

namespace tern::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;           // 0: any free port (tests)
  std::string api_key;       // "": no key asked
  size_t max_body = size_t(1) << 20;
  int timeout_seconds = 30;  // reading a request, writing a response
  int http_threads = 0;      // 0: enough for every slot and queued request
  bool log_prompts = false;  // the access log never shows prompt text unless asked
  std::string model_name;    // /v1/models and the responses' "model"
  // Chat template variables for every request (--chat-template-kwargs);
  // a request's chat_template_kwargs override them name by name.
  std::vector<std::pair<std::string, std::string>> template_vars;
  std::string reasoning_format = "auto";  // a request's reasoning_format, when it gives none
};

// What the endpoints run on, once the model is loaded.
struct Backend {
  const Model* model = nullptr;
  const Tokenizer* tok = nullptr;
  const chat::Template* tmpl = nullptr;  // null: the model has none (chat answers 400)
  Engine* engine = nullptr;
};

class Server {
 public:
  Server(const ServerOptions& o, std::shared_ptr<spdlog::logger> log);
  ~Server();

  // Binds the socket (before the model loads, so /health can say 503
  // meanwhile); returns the port. Throws tern::Error when it cannot.
  int bind();
  // The endpoints start answering; `b` must outlive the server.
  void set_ready(const Backend& b);
  // Serves until stop(); returns then.
  void run();
  // Ends every job (their streams get their last chunk), then stops
  // accepting and lets run() return.
  void stop();

 private:
  void routes();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tern::serve
