// tern serve: an OpenAI-compatible HTTP server with continuous batching
// (src/serve). llama-server's flag names where it has the same flag.
#include <pthread.h>
#include <signal.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "serve/server.h"
#include "tern/chat.h"
#include "tern/error.h"
#include "tern/input_file.h"

namespace tern::cli {
namespace {

struct ServeCliOptions {
  RunOptions run;
  serve::ServerOptions server;
  int parallel = 4;
  int max_queue = 64;
  int batch = 256;
  std::string api_key_file, chat_template, log_level = "info", log_file, alias;
  std::string template_kwargs;  // --chat-template-kwargs JSON
};

std::shared_ptr<spdlog::logger> make_logger(const ServeCliOptions& o) {
  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_sink_mt>()};
  if (!o.log_file.empty()) sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(o.log_file));
  auto log = std::make_shared<spdlog::logger>("tern-serve", sinks.begin(), sinks.end());
  log->set_level(spdlog::level::from_str(o.log_level));
  log->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
  log->flush_on(spdlog::level::info);
  return log;
}

// The key from --api-key or the first line of --api-key-file.
std::string api_key(const ServeCliOptions& o) {
  if (o.api_key_file.empty()) return o.server.api_key;
  if (!o.server.api_key.empty()) throw Error("--api-key and --api-key-file exclude each other");
  std::string key = read_input_file(o.api_key_file, 4096, "an API key file");
  key = key.substr(0, key.find_first_of("\r\n"));
  if (key.empty()) throw file_error(o.api_key_file, "holds no key on its first line");
  return key;
}

void run_serve(const ServeCliOptions& o) {
  serve::ServerOptions so = o.server;
  so.api_key = api_key(o);
  if (!o.template_kwargs.empty()) so.template_vars = parse_template_vars(o.template_kwargs, "--chat-template-kwargs");
  const std::string path = o.run.model.empty() ? default_model_path() : o.run.model;
  so.model_name = o.alias.empty() ? std::filesystem::path(path).filename().string() : o.alias;
  auto log = make_logger(o);
  // SIGINT and SIGTERM go to one thread of their own (every thread made
  // after this inherits the mask), which stops the server: in-flight
  // streams get their last chunk, and the command returns, exit 0.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  serve::Server server(so, log);
  const int port = server.bind();
  log->info("listening on http://{}:{} (the model is loading)", so.host, port);
  std::thread http([&] { server.run(); });
  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    log->info("signal {}: stopping", sig);
    server.stop();
  });
  const auto stop_all = [&] {
    pthread_kill(signals.native_handle(), SIGTERM);
    signals.join();
    http.join();
  };
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
  std::optional<chat::Template> tmpl;
  std::unique_ptr<serve::Engine> engine;
  try {
    model = open_model(o.run);
    tok = std::make_unique<Tokenizer>(model->file());
    for (const std::string& n : tok->notes()) log->warn("{}: {}", path, n);
    if (!o.chat_template.empty() || !tok->chat_template().empty())
      tmpl.emplace(choose_template(o.chat_template, *tok, path));
    else log->warn("{} has no chat template: /v1/chat/completions answers 400 (--chat-template NAME|FILE gives one)", path);
    const ContextOptions co = context_options(o.run, *model, o.parallel);
    serve::EngineOptions eo;
    eo.slots = o.parallel;
    eo.ctx = o.run.ctx < 0 ? context_positions(model->config(), co.ctx) * o.parallel : co.ctx;
    eo.threads = co.threads;
    eo.max_queue = o.max_queue;
    eo.max_batch = o.batch;
    eo.cache_type_k = co.cache_type_k;
    eo.cache_type_v = co.cache_type_v;
    engine = std::make_unique<serve::Engine>(*model, *tok, eo);
  } catch (...) {
    stop_all();
    throw;
  }
  server.set_ready({model.get(), tok.get(), tmpl ? &*tmpl : nullptr, engine.get()});
  log->info("ready: {}, kernel {}, {} slots of {} positions, {} threads", path, model->kernels().name, o.parallel,
            engine->slot_ctx(), engine->context().threads());
  http.join();
  signals.join();
  log->info("stopped");
}

}  // namespace

void add_serve(CLI::App& app) {
  auto o = std::make_shared<ServeCliOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "an OpenAI-compatible HTTP server with continuous batching");
  add_run_options(*cmd, o->run);
  cmd->add_option("--host", o->server.host, "address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", o->server.port, "port (default 8080; 0: any free one)")->check(CLI::Range(0, 65535));
  cmd->add_option("--parallel", o->parallel, "slots: requests generated at once (also -np; default 4)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--api-key", o->server.api_key, "require Authorization: Bearer KEY on every endpoint but /health");
  cmd->add_option("--api-key-file", o->api_key_file, "the API key from the first line of a file");
  cmd->add_option("--max-body", o->server.max_body, "largest request body in bytes (default 1 MiB): 413 past it")
      ->check(CLI::Range(size_t(1024), size_t(1) << 30));
  cmd->add_option("--timeout", o->server.timeout_seconds, "seconds to read a whole request (however it trickles in) or write a response (default 30)")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--max-queue", o->max_queue, "requests waiting for a slot; past it 503 (default 64)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("-b,--batch-size", o->batch, "tokens per step of the engine (default 256)")->check(CLI::Range(1, 8192));
  cmd->add_option("--threads-http", o->server.http_threads, "HTTP threads (default 96)")->check(CLI::Range(1, 4096));
  cmd->add_option("--chat-template", o->chat_template, "a built-in name or a file (default: the model's)");
  cmd->add_option("--chat-template-kwargs", o->template_kwargs,
                  "template variables for every chat request as a JSON object, e.g. '{\"enable_thinking\": false}'");
  cmd->add_option("--reasoning-format", o->server.reasoning_format,
                  "none: a reply's <think> block stays in content; auto, deepseek: it goes to reasoning_content")
      ->check(CLI::IsMember({"none", "auto", "deepseek"}))
      ->capture_default_str();
  cmd->add_option("-a,--alias", o->alias, "the model's name in /v1/models and responses (default: the file name)");
  cmd->add_option("--log-level", o->log_level, "trace, debug, info (default), warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  cmd->add_option("--log-file", o->log_file, "also write the log to FILE");
  cmd->add_flag("--log-prompts", o->server.log_prompts, "put each request's prompt text in the access log");
  cmd->callback([o] { run_serve(*o); });
}

}  // namespace tern::cli
