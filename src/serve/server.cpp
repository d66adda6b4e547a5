#include "server.h"

#include <httplib.h>
#include <sys/socket.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "conn_watch.h"
#include "tern/error.h"
#include "tern/reasoning.h"

namespace tern::serve {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Every byte compared whatever the first difference, so the time a wrong
// key takes says nothing of how much of it was right.
bool same_key(const std::string& a, const std::string& b) {
  unsigned diff = unsigned(a.size() != b.size());
  for (size_t i = 0; i < a.size(); ++i) diff |= unsigned(uint8_t(a[i]) ^ uint8_t(i < b.size() ? b[i] : 0));
  return diff == 0;
}

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(dump(j), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status, error_json(e)); }

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(prefix) + buf;
}

// One request's choices in flight, and what the access log says of it.
struct Request {
  CompletionRequest req;
  std::vector<std::shared_ptr<Job>> jobs;  // one per choice
  std::string id, model;
  int64_t created = 0;
  int n_prompt = 0;
  Clock::time_point start = Clock::now();
};

}  // namespace

struct Server::Impl {
  ServerOptions o;
  std::shared_ptr<spdlog::logger> log;
  httplib::Server http;
  std::unique_ptr<ConnectionWatch> watch;  // from bind(): cuts connections that never finish a request
  std::atomic<const Backend*> backend{nullptr};
  // Completion responses being written: stop() lets them end before httplib
  // stops (it calls no content provider once stopping, so a stream would
  // lose its last chunk and [DONE]).
  std::atomic<int> responding{0};
  // run() and stop() on different threads: stop() before run() makes run()
  // return at once; stop() after it stops it.
  std::mutex run_m;
  bool stopping = false, started = false;
  std::atomic<bool> returned{false};
  Backend ready;
  // Requests by final status, for /metrics.
  mutable std::mutex counts_m;
  mutable std::map<int, int64_t> by_status;

  void count(int status) const {
    std::lock_guard<std::mutex> lock(counts_m);
    ++by_status[status];
  }
  void access(const std::string& method, const std::string& path, int status, int prompt, int generated,
              double ttft_ms, double total_ms, const std::string& prompt_text = {}) const {
    count(status);
    log->info("{} {} {} prompt={} generated={} ttft_ms={:.1f} total_ms={:.1f}{}", method, path, status, prompt,
              generated, ttft_ms, total_ms, prompt_text.empty() ? "" : " prompt=" + json(prompt_text).dump());
  }

  static bool reads_body(const httplib::Request& req) {
    static const std::set<std::string> paths = {"/v1/completions", "/completions", "/v1/chat/completions",
                                                "/chat/completions", "/tokenize", "/detokenize"};
    return req.method == "POST" && paths.count(req.path);
  }
  // A POST handler that reads its body itself, so that --max-body holds for
  // chunked bodies too (httplib checks only Content-Length against it).
  using BodyHandler = std::function<void(const httplib::Request&, const std::string&, httplib::Response&)>;
  httplib::Server::HandlerWithContentReader with_body(BodyHandler handler) {
    return [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                               const httplib::ContentReader& read) {
      std::string body;
      bool over = req.has_header("Content-Length") &&
                  std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10) > o.max_body;
      const bool whole = !over && read([&](const char* data, size_t n) {
        if (body.size() + n > o.max_body) return !(over = true);
        body.append(data, n);
        return true;
      });
      if (over) {
        res.set_header("Connection", "close");  // the rest of the body is never read
        return send_error(res, {413, "the request body is too large", "invalid_request_error", "", ""});
      }
      if (!whole) {
        res.set_header("Connection", "close");
        return send_error(res, {400, "the request body could not be read", "invalid_request_error", "", ""});
      }
      handler(req, body, res);
    };
  }

  const Backend* need_backend(httplib::Response& res) const {
    const Backend* b = backend.load(std::memory_order_acquire);
    if (!b) send_error(res, {503, "the model is loading", "server_error", "", "loading"});
    return b;
  }

  std::vector<int32_t> prompt_tokens(const Backend& b, const CompletionRequest& r, ApiError& err) const;
  void completion(const httplib::Request& hreq, const std::string& body, httplib::Response& res, bool chat);
  void respond_whole(std::shared_ptr<Request> rq, httplib::Response& res);
  void respond_stream(std::shared_ptr<Request> rq, httplib::Response& res);
  std::string metrics() const;
  void log_done(const Request& rq, const std::string& path, int status) const;
  // The pieces of Server::routes: socket and timeout settings, the hooks
  // around every request (key check, errors, access log), and the token
  // endpoints.
  void configure_transport();
  void install_hooks();
  void tokenize(const std::string& body, httplib::Response& res) const;
  void detokenize(const std::string& body, httplib::Response& res) const;
};

std::vector<int32_t> Server::Impl::prompt_tokens(const Backend& b, const CompletionRequest& r, ApiError& err) const {
  std::string text;
  EncodeOptions eo;
  if (r.chat) {
    if (!b.tmpl) {
      err = {400, "the model has no chat template; use /v1/completions", "invalid_request_error", "messages", ""};
      return {};
    }
    chat::RenderOptions ro;
    ro.add_generation_prompt = true;
    if (b.tok->bos() >= 0) ro.bos_token = b.tok->token_text(b.tok->bos());
    if (b.tok->eos() >= 0) ro.eos_token = b.tok->token_text(b.tok->eos());
    ro.extra = o.template_vars;
    for (const auto& v : r.template_vars) {
      std::erase_if(ro.extra, [&](const auto& e) { return e.first == v.first; });
      ro.extra.push_back(v);
    }
    try {
      text = b.tmpl->render(r.messages, ro);
    } catch (const Error& e) {
      err = {400, e.what(), "invalid_request_error", "messages", ""};
      return {};
    }
    eo.add_special = false;  // the template writes BOS where the model wants one
  } else {
    text = r.prompt;
  }
  std::vector<int32_t> ids = b.tok->encode(text, eo);
  if (ids.empty()) err = {400, "the prompt is empty", "invalid_request_error", r.chat ? "messages" : "prompt", ""};
  return ids;
}

void Server::Impl::log_done(const Request& rq, const std::string& path, int status) const {
  int generated = 0;
  double ttft = -1;
  for (const auto& j : rq.jobs) {
    std::lock_guard<std::mutex> lock(j->m);
    generated += int(j->token_ends.size());
    if (j->first_token)
      ttft = std::chrono::duration<double, std::milli>(*j->first_token - rq.start).count();
  }
  std::string prompt;
  if (o.log_prompts) {
    if (rq.req.chat)
      for (const auto& m : rq.req.messages) prompt += m.role + ": " + m.content + "\n";
    else prompt = rq.req.prompt;
  }
  access("POST", path, status, rq.n_prompt, generated, ttft, ms_since(rq.start), prompt);
}

void Server::Impl::completion(const httplib::Request& hreq, const std::string& body, httplib::Response& res, bool chat) {
  const Backend* b = need_backend(res);
  if (!b) return count(503);
  ParseLimits limits;
  limits.vocab = b->model->config().vocab_size;
  limits.max_n = b->engine->slots();
  auto parsed = parse_completion(body, chat, limits);
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    send_error(res, *e);
    return access("POST", hreq.path, e->status, 0, 0, -1, 0);
  }
  auto rq = std::make_shared<Request>();
  rq->req = std::move(std::get<CompletionRequest>(parsed));
  if (rq->req.reasoning_format.empty()) rq->req.reasoning_format = o.reasoning_format;
  CompletionRequest& r = rq->req;
  ApiError err;
  const std::vector<int32_t> ids = prompt_tokens(*b, r, err);
  if (!err.message.empty()) {
    send_error(res, err);
    return access("POST", hreq.path, err.status, 0, 0, -1, ms_since(rq->start));
  }
  const int slot_ctx = b->engine->slot_ctx();
  rq->n_prompt = int(ids.size());
  if (rq->n_prompt >= slot_ctx) {
    send_error(res, {400,
                     "the prompt is " + std::to_string(ids.size()) + " tokens; a request has at most " +
                         std::to_string(slot_ctx - 1) + " (-c over -np)",
                     "invalid_request_error", chat ? "messages" : "prompt", "context_length_exceeded"});
    return access("POST", hreq.path, 400, rq->n_prompt, 0, -1, ms_since(rq->start));
  }
  // OpenAI's default for completions is 16 tokens; chat runs to its end.
  const int room = slot_ctx - rq->n_prompt;
  const int max_tokens = std::min(room, r.max_tokens.value_or(chat ? room : 16));
  if (!r.seed_given) r.sampling.seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
  rq->id = random_id(chat ? "chatcmpl-" : "cmpl-");
  rq->created = int64_t(std::time(nullptr));
  rq->model = o.model_name;
  for (int i = 0; i < r.n; ++i) {
    auto job = std::make_shared<Job>();
    job->prompt = ids;
    job->max_tokens = max_tokens;
    job->sampling = r.sampling;
    job->sampling.seed = r.sampling.seed + uint64_t(i);
    job->stop = r.stop;
    job->logprobs = r.logprobs;
    job->ignore_eos = r.ignore_eos;
    if (!b->engine->submit(job)) {
      for (auto& j : rq->jobs) j->cancelled = true;
      res.set_header("Retry-After", "1");
      send_error(res, {503, "every slot is busy and the queue is full; retry later", "server_error", "", "overloaded"});
      return access("POST", hreq.path, 503, rq->n_prompt, 0, -1, ms_since(rq->start));
    }
    rq->jobs.push_back(std::move(job));
  }
  if (r.stream) respond_stream(rq, res);
  else respond_whole(rq, res);
}

namespace {

// What a job produced since a reader's last take: its text token by token
// (each piece with that token's log probability, if asked), and with done
// a last piece of text released after the last token (held back for a
// stop string that never came, the end of a UTF-8 character).
struct Piece {
  std::string text;
  std::vector<TokenLogprob> logprobs;  // none or one
};
struct Update {
  std::vector<Piece> pieces;
  bool done = false;
  Finish finish = Finish::Stop;
  std::string error;
};
// How far a reader has taken a job.
struct Cursor {
  size_t text = 0, tokens = 0;
};
// Waits up to `wait` for job j to have a token past the cursor, or to be done.
Update take(Job& j, Cursor& c, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(j.m);
  j.cv.wait_for(lock, wait, [&] { return j.done || j.token_ends.size() > c.tokens; });
  Update u;
  for (; c.tokens < j.token_ends.size(); ++c.tokens) {
    const size_t end = j.token_ends[c.tokens];
    Piece& p = u.pieces.emplace_back(Piece{j.text.substr(c.text, end - c.text), {}});
    if (c.tokens < j.logprobs_out.size()) p.logprobs.push_back(j.logprobs_out[c.tokens]);
    c.text = end;
  }
  if (j.done && c.text < j.text.size()) {
    u.pieces.push_back({j.text.substr(c.text), {}});
    c.text = j.text.size();
  }
  u.done = j.done;
  u.finish = j.finish;
  u.error = j.error;
  return u;
}

}  // namespace

// stream false: the whole response once every choice is done. The body is
// chunked, and while the choices run a space is written each half second
// (JSON allows it before the value): a client that has gone makes that
// write fail, and its jobs are cancelled.
void Server::Impl::respond_whole(std::shared_ptr<Request> rq, httplib::Response& res) {
  res.status = 200;
  const std::string path = rq->req.chat ? "/v1/chat/completions" : "/v1/completions";
  ++responding;
  res.set_chunked_content_provider(
      "application/json",
      [this, rq](size_t, httplib::DataSink& sink) {
        std::vector<ChoiceResult> choices(rq->jobs.size());
        Usage usage{rq->n_prompt, 0};
        auto beat = Clock::now();
        for (size_t i = 0; i < rq->jobs.size(); ++i) {
          Job& j = *rq->jobs[i];
          Cursor cur;
          for (Update u;;) {
            u = take(j, cur, std::chrono::milliseconds(500));
            for (const Piece& p : u.pieces) {
              choices[i].text += p.text;
              choices[i].logprobs.insert(choices[i].logprobs.end(), p.logprobs.begin(), p.logprobs.end());
            }
            if (u.done) {
              if (u.finish == Finish::Error) {
                const std::string body = dump(error_json({500, u.error, "server_error", "", ""}));
                sink.write(body.data(), body.size());
                sink.done();
                return true;
              }
              choices[i].finish = u.finish;
              break;
            }
            if (Clock::now() - beat < std::chrono::milliseconds(500)) continue;
            beat = Clock::now();
            if (!sink.write(" ", 1)) {
              for (auto& other : rq->jobs) other->cancelled = true;
              return false;
            }
          }
          std::lock_guard<std::mutex> lock(j.m);
          choices[i].n_generated = int(j.token_ends.size());
          usage.completion_tokens += choices[i].n_generated;
        }
        if (splits_reasoning(rq->req))
          for (ChoiceResult& c : choices) {
            std::string answer;
            ReasoningSplitter split([&](const std::string& t) { answer += t; },
                                    [&](const std::string& t) { c.reasoning += t; });
            split.feed(c.text);
            split.finish();
            c.text = std::move(answer);
          }
        const std::string body = dump(completion_json(rq->req, rq->id, rq->created, rq->model, choices, usage));
        sink.write(body.data(), body.size());
        sink.done();
        return true;
      },
      [this, rq, path](bool ok) {
        for (auto& j : rq->jobs) j->cancelled = true;  // done ones ignore it
        log_done(*rq, path, ok ? 200 : 499);
        --responding;
      });
}

namespace {

// One streamed response's progress: per choice its cursor, whether its
// first and last chunks have gone, and its reasoning splitter when the
// request splits the reasoning out; the tokens generated, for usage.
class StreamWriter {
 public:
  enum class Pass { More, Done, Gone };  // call again; all sent; a write failed

  explicit StreamWriter(std::shared_ptr<Request> rq)
      : rq_(std::move(rq)), cur_(rq_->jobs.size()), first_(rq_->jobs.size(), true), finished_(rq_->jobs.size(), false) {
    if (splits_reasoning(rq_->req))
      for (size_t i = 0; i < rq_->jobs.size(); ++i)
        split_.push_back(std::make_unique<ReasoningSplitter>([this](const std::string& t) { answer_ += t; },
                                                             [this](const std::string& t) { reasoning_ += t; }));
  }

  // Each unfinished choice's new chunks; once all are finished, the usage
  // chunk if asked and "data: [DONE]".
  Pass pass(httplib::DataSink& sink) {
    bool all = true;
    for (size_t i = 0; i < rq_->jobs.size(); ++i) {
      if (finished_[i]) continue;
      const Pass p = choice(i, sink);
      if (p == Pass::Gone) {
        for (auto& other : rq_->jobs) other->cancelled = true;
        return Pass::Gone;
      }
      if (p == Pass::Done) return Pass::Done;  // an error ended the response
      all = all && finished_[i];
    }
    if (!all) return Pass::More;
    if (rq_->req.include_usage)
      event(sink, usage_chunk_json(rq_->req, rq_->id, rq_->created, rq_->model, {rq_->n_prompt, completion_tokens_}));
    const char done[] = "data: [DONE]\n\n";
    sink.write(done, sizeof done - 1);
    sink.done();
    return Pass::Done;
  }

 private:
  bool event(httplib::DataSink& sink, const json& j) {
    const std::string s = "data: " + dump(j) + "\n\n";
    return sink.write(s.data(), s.size());
  }

  // The text of a piece of choice i, or what the reasoning splitter
  // releases of it: (answer, reasoning).
  std::pair<std::string, std::string> split(size_t i, const std::string& text, bool last) {
    if (split_.empty()) return {text, ""};
    answer_.clear(), reasoning_.clear();
    split_[i]->feed(text);
    if (last) split_[i]->finish();
    return {std::move(answer_), std::move(reasoning_)};
  }

  // Choice i's chunks since the last pass: a chunk per generated token (its
  // text may be empty: part of a character, a stop string's start held
  // back, a token with no text), then any text released at the end and the
  // finish_reason; a choice that ends with no token still opens with one
  // chunk. More while the response goes on (finished_[i] says whether this
  // choice has ended), Done when an error event ended the whole response,
  // Gone when a write failed.
  Pass choice(size_t i, httplib::DataSink& sink) {
    Job& j = *rq_->jobs[i];
    Update u = take(j, cur_[i], std::chrono::milliseconds(rq_->jobs.size() > 1 ? 20 : 200));
    if (u.done && u.finish == Finish::Error) {
      event(sink, error_json({500, u.error, "server_error", "", ""}));
      for (auto& other : rq_->jobs) other->cancelled = true;
      sink.done();
      return Pass::Done;
    }
    const std::optional<Finish> fin = u.done ? std::optional<Finish>(u.finish) : std::nullopt;
    if (fin && first_[i] && u.pieces.empty()) u.pieces.push_back({});
    for (const Piece& p : u.pieces) {
      const auto [answer, reasoning] = split(i, p.text, false);
      if (!event(sink, chunk_json(rq_->req, rq_->id, rq_->created, rq_->model, int(i), answer, p.logprobs,
                                  std::nullopt, first_[i], reasoning)))
        return Pass::Gone;
      first_[i] = false;
    }
    if (!fin) return Pass::More;
    const auto [answer, reasoning] = split(i, "", true);
    if (!event(sink, chunk_json(rq_->req, rq_->id, rq_->created, rq_->model, int(i), answer, {}, fin, false, reasoning)))
      return Pass::Gone;
    finished_[i] = true;
    std::lock_guard<std::mutex> lock(j.m);
    completion_tokens_ += int(j.token_ends.size());
    return Pass::More;
  }

  std::shared_ptr<Request> rq_;
  std::vector<Cursor> cur_;
  std::vector<bool> first_, finished_;
  int completion_tokens_ = 0;
  std::vector<std::unique_ptr<ReasoningSplitter>> split_;
  std::string answer_, reasoning_;  // what a splitter released into the chunk being built
};

}  // namespace

// stream true: server-sent events, a chunk per piece of text of any
// choice as it comes, each choice's last chunk with its finish_reason, the
// usage chunk if asked, then "data: [DONE]". A write that fails (the
// client gone, or not reading within the write timeout) cancels the jobs.
void Server::Impl::respond_stream(std::shared_ptr<Request> rq, httplib::Response& res) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  const std::string path = rq->req.chat ? "/v1/chat/completions" : "/v1/completions";
  auto writer = std::make_shared<StreamWriter>(rq);
  ++responding;
  res.set_chunked_content_provider(
      "text/event-stream",
      [writer](size_t, httplib::DataSink& sink) { return writer->pass(sink) != StreamWriter::Pass::Gone; },
      [this, rq, path](bool ok) {
        for (auto& j : rq->jobs) j->cancelled = true;
        log_done(*rq, path, ok ? 200 : 499);
        --responding;
      });
}

std::string Server::Impl::metrics() const {
  std::string out;
  const auto line = [&](const char* name, const char* type, const char* help, const std::string& value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + value;
  };
  {
    std::lock_guard<std::mutex> lock(counts_m);
    std::string v;
    for (auto [status, n] : by_status)
      v += "tern_requests_total{status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
    line("tern_requests_total", "counter", "HTTP requests answered, by status.", v);
  }
  const Backend* b = backend.load(std::memory_order_acquire);
  if (!b) return out;
  const EngineStats s = b->engine->stats();
  line("tern_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
       "tern_prompt_tokens_total " + std::to_string(s.prompt_tokens) + "\n");
  line("tern_prompt_tokens_cached_total", "counter", "Prompt tokens found in a slot's cache, not fed again.",
       "tern_prompt_tokens_cached_total " + std::to_string(s.cached_tokens) + "\n");
  line("tern_generated_tokens_total", "counter", "Tokens generated.",
       "tern_generated_tokens_total " + std::to_string(s.generated_tokens) + "\n");
  line("tern_queue_depth", "gauge", "Requests waiting for a slot.", "tern_queue_depth " + std::to_string(s.queued) + "\n");
  line("tern_slots_busy", "gauge", "Slots running a request.", "tern_slots_busy " + std::to_string(s.busy_slots) + "\n");
  line("tern_slots", "gauge", "Slots (-np).", "tern_slots " + std::to_string(b->engine->slots()) + "\n");
  char tps[64];
  std::snprintf(tps, sizeof tps, "%.3f", s.tokens_per_second);
  line("tern_tokens_per_second", "gauge", "Tokens generated per second over the last seconds.",
       std::string("tern_tokens_per_second ") + tps + "\n");
  return out;
}

Server::Server(const ServerOptions& o, std::shared_ptr<spdlog::logger> log) : impl_(std::make_unique<Impl>()) {
  impl_->o = o;
  impl_->log = std::move(log);
  routes();
}

Server::~Server() = default;

void Server::Impl::configure_transport() {
  httplib::Server& h = http;
  const int threads = o.http_threads > 0 ? o.http_threads : 96;
  h.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  h.set_payload_max_length(o.max_body);
  h.set_read_timeout(o.timeout_seconds);
  h.set_write_timeout(o.timeout_seconds);
  h.set_keep_alive_timeout(5);
  h.set_keep_alive_max_count(100);
  // Responses go out in pieces (stream chunks, the chunked encoding): with
  // Nagle's algorithm against the client's delayed ACK each would wait ~40 ms.
  h.set_tcp_nodelay(true);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second server on the same port starts without error and the kernel
  // splits the connections between the two.
  h.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

void Server::Impl::install_hooks() {
  httplib::Server& h = http;
  Impl& I = *this;
  h.set_pre_routing_handler([&I](const httplib::Request& req, httplib::Response& res) {
    if (I.watch) I.watch->begin(ConnectionWatch::peer_key(req.remote_addr, req.remote_port));
    // httplib would read a chunked body of any size into req.body for a
    // route that does not read its own (with_body): refuse it unread.
    if (req.has_header("Transfer-Encoding") && !I.reads_body(req)) {
      res.set_header("Connection", "close");
      send_json(res, 404, error_json({404, "no such endpoint", "invalid_request_error", "", ""}));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (I.o.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0 && same_key(auth.substr(7), I.o.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_json(res, 401, error_json({401, "invalid API key", "invalid_request_error", "", "invalid_api_key"}));
    return httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib sets itself (404, 413, 400 for a malformed request
  // line) get OpenAI's error object too.
  h.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const char* what = res.status == 404   ? "no such endpoint"
                       : res.status == 413 ? "the request body is too large"
                                           : "bad request";
    send_json(res, res.status, error_json({res.status, what, "invalid_request_error", "", ""}));
  });
  h.set_exception_handler([&I](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    I.log->error("request failed: {}", what);
    send_json(res, 500, error_json({500, what, "server_error", "", ""}));
  });
  // The completion endpoints log what they answer themselves (with token
  // counts, when their response ends); what httplib or the key check
  // answered for them is logged here.
  h.set_logger([&I](const httplib::Request& req, const httplib::Response& res) {
    if (I.watch) I.watch->end(ConnectionWatch::peer_key(req.remote_addr, req.remote_port));
    const bool completion = req.path.find("completions") != std::string::npos;
    if (!completion || res.status == 401 || res.status == 404 || res.status == 413)
      I.access(req.method, req.path, res.status, 0, 0, -1, 0);
  });
}

void Server::Impl::tokenize(const std::string& body, httplib::Response& res) const {
  const Backend* b = need_backend(res);
  if (!b) return;
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("content") || !j["content"].is_string())
    return send_error(res, {400, "expected {\"content\": TEXT}", "invalid_request_error", "content", ""});
  EncodeOptions eo;
  eo.add_special = j.value("add_special", false);
  eo.parse_special = j.value("parse_special", true);
  const std::vector<int32_t> ids = b->tok->encode(j["content"].get<std::string>(), eo);
  json tokens = json::array();
  const bool pieces = j.value("with_pieces", false);
  for (int32_t id : ids) {
    if (pieces) tokens.push_back({{"id", id}, {"piece", b->tok->token_piece(id)}});
    else tokens.push_back(id);
  }
  send_json(res, 200, {{"tokens", tokens}});
}

void Server::Impl::detokenize(const std::string& body, httplib::Response& res) const {
  const Backend* b = need_backend(res);
  if (!b) return;
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tokens") || !j["tokens"].is_array())
    return send_error(res, {400, "expected {\"tokens\": [ids]}", "invalid_request_error", "tokens", ""});
  std::vector<int32_t> ids;
  for (const json& t : j["tokens"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= b->tok->vocab_size())
      return send_error(res, {400, "a token id is not in the vocabulary", "invalid_request_error", "tokens", ""});
    ids.push_back(int32_t(t.get<int64_t>()));
  }
  std::string text;
  for (int32_t id : ids) text += b->tok->token_piece(id);
  send_json(res, 200, {{"content", text}});
}

void Server::routes() {
  Impl& I = *impl_;
  httplib::Server& h = I.http;
  I.configure_transport();
  I.install_hooks();
  h.Get("/health", [&I](const httplib::Request&, httplib::Response& res) {
    if (I.backend.load(std::memory_order_acquire)) send_json(res, 200, {{"status", "ok"}});
    else send_json(res, 503, error_json({503, "the model is loading", "server_error", "", "loading"}));
  });
  h.Get("/metrics", [&I](const httplib::Request&, httplib::Response& res) {
    res.set_content(I.metrics(), "text/plain; version=0.0.4");
  });
  const auto models = [&I](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200,
              {{"object", "list"},
               {"data", json::array({{{"id", I.o.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "tern"}}})}});
  };
  h.Get("/v1/models", models);
  h.Get("/models", models);
  for (const auto& [path, chat] : {std::pair{"/v1/completions", false}, {"/completions", false},
                                    {"/v1/chat/completions", true}, {"/chat/completions", true}})
    h.Post(path, I.with_body([&I, chat](const httplib::Request& req, const std::string& body, httplib::Response& res) {
      I.completion(req, body, res, chat);
    }));
  h.Post("/tokenize", I.with_body([&I](const httplib::Request&, const std::string& body, httplib::Response& res) {
    I.tokenize(body, res);
  }));
  h.Post("/detokenize", I.with_body([&I](const httplib::Request&, const std::string& body, httplib::Response& res) {
    I.detokenize(body, res);
  }));
}

int Server::bind() {
  Impl& I = *impl_;
  const int port = I.o.port == 0 ? I.http.bind_to_any_port(I.o.host)
                                 : (I.http.bind_to_port(I.o.host, I.o.port) ? I.o.port : -1);
  if (port < 0) throw Error("serve: cannot listen on " + I.o.host + ":" + std::to_string(I.o.port));
  // The whole request within --timeout, however slowly it trickles in.
  I.watch = std::make_unique<ConnectionWatch>(port, std::chrono::seconds(I.o.timeout_seconds), [&I](const std::string& peer) {
    I.log->debug("closed {}: no whole request within {} s", peer, I.o.timeout_seconds);
  });
  return port;
}

void Server::set_ready(const Backend& b) {
  impl_->ready = b;
  impl_->backend.store(&impl_->ready, std::memory_order_release);
}

void Server::run() {
  {
    std::lock_guard<std::mutex> lock(impl_->run_m);
    if (impl_->stopping) return;
    impl_->started = true;
  }
  impl_->http.listen_after_bind();
  impl_->returned = true;
}

void Server::stop() {
  if (const Backend* b = impl_->backend.load(std::memory_order_acquire)) b->engine->shutdown();
  // Every job is done now: the responses write their last chunks (a client
  // that does not read them loses its connection at --timeout; stopping
  // waits no longer than that).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(impl_->o.timeout_seconds);
  while (impl_->responding.load() > 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  bool started = false;
  {
    std::lock_guard<std::mutex> lock(impl_->run_m);
    impl_->stopping = true;
    started = impl_->started;
  }
  // httplib's stop() does nothing until its listen loop has begun: repeat
  // it until run() has returned, should run() be just starting.
  while (started && !impl_->returned) {
    impl_->http.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace tern::serve
