// tern generate: one continuation streamed to stdout; with -np N, N
// continuations of the prompt printed as llama-batched prints them; with
// --prompts-file, every prompt of a file, -np at a time, one JSON line each.
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "tern/error.h"
#include "tern/generate.h"
#include "tern/input_file.h"
#include "tern/kernels.h"
#include "tern/output_file.h"

namespace tern::cli {
namespace {

struct Options {
  RunOptions run;
  std::string prompt;
  GenerateOptions gen;
  bool no_parse_special = false;
  SamplingOptions sampling;
  int parallel = 1;
  std::string prompts_file, output;
  SpeculativeCli speculative;
};

// Prompts files are data sets: 1 GiB is only there to stop /dev/zero.
constexpr uint64_t kMaxPromptsBytes = uint64_t(1) << 30;

// The context -np sequences need: -c positions in all, or by default the
// trained context (at most 4096) for each of them.
Context open_context(const Model& model, const Options& o, int max_batch) {
  ContextOptions co = context_options(o.run, model, o.parallel);
  co.max_batch = max_batch;
  if (o.run.ctx < 0 && o.parallel > 1) co.ctx = context_positions(model.config(), co.ctx) * o.parallel;
  return Context(model, co);
}

void print_header(const Model& model, const Context& ctx, const SamplerParams& sp) {
  std::fprintf(stderr, "tern: %s, kernel %s, %d threads, seed %llu\n", model.file().path().c_str(),
               model.kernels().name, ctx.threads(), static_cast<unsigned long long>(sp.seed));
}

void run_one(const Model& model, const Tokenizer& tok, const Options& o, const SamplerParams& sp) {
  Context ctx = open_context(model, o, 64);
  const DraftSetup draft = open_drafter(o.speculative, o.run, model, tok, ctx.n_ctx(), sp);
  Sampler sampler(sp);
  GenerateOptions g = o.gen;
  g.drafter = draft.drafter.get();
  const GenerateStats st = generate(ctx, tok, o.prompt, g, sampler, [](const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  // The text ends with a newline so the statistics below never run into it.
  std::printf("\n");
  std::fflush(stdout);
  // Reported after the run so that an error is the only line on stderr.
  print_header(model, ctx, sp);
  std::fprintf(stderr, "prompt: %d tokens in %.3f s (%.2f tok/s)\n", st.n_prompt, st.prompt_seconds,
               st.n_prompt / std::max(st.prompt_seconds, 1e-9));
  std::fprintf(stderr, "generation: %d tokens in %.3f s (%.2f tok/s)%s\n", st.n_generated, st.gen_seconds,
               st.n_generated / std::max(st.gen_seconds, 1e-9), st.hit_eos ? ", stopped at end of generation" : "");
  print_speculative(draft, st.n_drafted, st.n_accepted);
}

void run_parallel(const Model& model, const Tokenizer& tok, const Options& o, const SamplerParams& sp) {
  Context ctx = open_context(model, o, 64);
  const ParallelStats st = generate_parallel(ctx, tok, o.prompt, o.gen, sp, o.parallel);
  for (size_t i = 0; i < st.texts.size(); ++i) std::printf("sequence %zu:\n\n%s\n\n", i, st.texts[i].c_str());
  std::fflush(stdout);
  print_header(model, ctx, sp);
  std::fprintf(stderr, "prompt: %d tokens in %.3f s (%.2f tok/s), once for %d sequences\n", st.n_prompt,
               st.prompt_seconds, st.n_prompt / std::max(st.prompt_seconds, 1e-9), o.parallel);
  int stopped = 0;
  for (Finish f : st.finish) stopped += f == Finish::Stop;
  std::fprintf(stderr, "generation: %d tokens in %.3f s (%.2f tok/s over %d sequences)%s\n", st.n_generated,
               st.gen_seconds, st.n_generated / std::max(st.gen_seconds, 1e-9), o.parallel,
               stopped ? (", " + std::to_string(stopped) + " stopped at end of generation").c_str() : "");
}

// One prompt per line, or a JSON object per line with a "prompt" string
// (JSONL); a line that is neither is an error of its own (its text kept as
// the prompt shown), as is an empty prompt. A last line without a newline counts; the newline after the last
// line does not start another.
struct PromptLine {
  std::string prompt, error;
};
std::vector<PromptLine> read_prompts(const std::string& path) {
  const std::string text = read_input_file(path, kMaxPromptsBytes, "a prompts file");
  std::vector<PromptLine> lines;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(at, nl - at);
    at = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    PromptLine p;
    const size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] == '{') {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) p.error = "not a JSON object";
      else if (!j.contains("prompt") || !j["prompt"].is_string()) p.error = "no \"prompt\" string";
      p.prompt = p.error.empty() ? j["prompt"].get<std::string>() : line;  // a bad line is shown as it is
    } else {
      p.prompt = std::move(line);
    }
    if (p.error.empty() && p.prompt.empty()) p.error = "empty prompt";
    lines.push_back(std::move(p));
  }
  if (lines.empty()) throw file_error(path, "holds no prompt");
  return lines;
}

std::string eta(double seconds) {
  char buf[32];
  const long s = long(seconds + 0.5);
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  return buf;
}

void run_prompts(const Model& model, const Tokenizer& tok, const Options& o, const SamplerParams& sp) {
  const std::vector<PromptLine> lines = read_prompts(o.prompts_file);
  if (!o.output.empty()) check_output_path(o.output);
  std::unique_ptr<OutputFile> out = o.output.empty() ? nullptr : std::make_unique<OutputFile>(o.output);
  Context ctx = open_context(model, o, 256);
  // A line that is no prompt runs as an empty one, which generate_prompts
  // refuses; its own error replaces that one.
  std::vector<std::string> prompts;
  for (const PromptLine& l : lines) prompts.push_back(l.error.empty() ? l.prompt : std::string());
  // Results come in any order and go out in the file's, each as soon as
  // every line before it is out.
  std::vector<std::optional<nlohmann::json>> ready(lines.size());
  size_t written = 0;
  const auto flush_ready = [&] {
    for (; written < ready.size() && ready[written]; ++written) {
      const std::string s = ready[written]->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      if (out) out->write(s);
      else std::fwrite(s.data(), 1, s.size(), stdout);
    }
  };
  size_t refused = 0;
  const bool bar = isatty(STDERR_FILENO);
  int64_t generated = 0;
  double seconds = 0;
  generate_prompts(
      ctx, tok, prompts, o.gen, sp,
      [&](size_t i, PromptResult&& r) {
        nlohmann::json j{{"index", i}, {"prompt", lines[i].prompt}};
        if (r.finish == Finish::Error) {
          ++refused;
          j["finish_reason"] = "error";
          j["error"] = lines[i].error.empty() ? r.error : lines[i].error;
        } else {
          j.update({{"text", r.text}, {"tokens", r.tokens}, {"n_prompt", r.n_prompt},
                    {"finish_reason", finish_name(r.finish)}});
        }
        ready[i] = std::move(j);
        flush_ready();
      },
      [&](const BatchProgress& p) {
        generated = p.generated;
        seconds = p.seconds;
        if (!bar) return;
        const double rate = p.done ? double(p.done) / p.seconds : 0;
        std::fprintf(stderr, "\r%zu/%zu prompts, %.1f tok/s, ETA %s   ", p.done, p.total,
                     double(p.generated) / std::max(p.seconds, 1e-9),
                     rate > 0 ? eta(double(p.total - p.done) / rate).c_str() : "?");
      });
  if (bar) std::fprintf(stderr, "\n");
  if (out) out->commit();
  else std::fflush(stdout);
  print_header(model, ctx, sp);
  std::fprintf(stderr, "%zu prompts (%zu refused), %lld tokens in %.3f s (%.2f tok/s over %d sequences)\n",
               lines.size(), refused, static_cast<long long>(generated), seconds,
               double(generated) / std::max(seconds, 1e-9), o.parallel);
}

void run_generate(const Options& o) {
  if (o.prompt.empty() == o.prompts_file.empty())
    throw Error(o.prompt.empty() ? "generate: give a prompt (-p) or a prompts file (--prompts-file)"
                                 : "generate: -p and --prompts-file exclude each other");
  if (!o.output.empty() && o.prompts_file.empty()) throw Error("generate: --output is for --prompts-file");
  if (o.speculative.on() && (o.parallel > 1 || !o.prompts_file.empty()))
    throw Error("generate: speculative decoding (--model-draft, --lookup) runs one sequence, not -np or --prompts-file");
  std::unique_ptr<Model> model = open_model(o.run);
  Tokenizer tok(model->file());
  print_notes(tok, model->file().path());
  Options opts = o;
  opts.gen.parse_special = !o.no_parse_special;
  const SamplerParams sp = sampler_params(o.sampling, model->config().vocab_size);
  if (!o.prompts_file.empty()) run_prompts(*model, tok, opts, sp);
  else if (o.parallel > 1) run_parallel(*model, tok, opts, sp);
  else run_one(*model, tok, opts, sp);
}

}  // namespace

void add_generate(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("generate", "generate text from a prompt, or from each prompt of a file");
  add_run_options(*cmd, o->run);
  cmd->add_option("-p,--prompt", o->prompt, "prompt text");
  cmd->add_option("-n,--n-predict", o->gen.n_predict, "tokens to generate (default 128)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--parallel", o->parallel,
                  "sequences at once (also -np): continuations of the prompt (seeds seed, seed+1, ...), or "
                  "prompts of --prompts-file (default 1)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--prompts-file", o->prompts_file,
                  "a prompt per line, or JSONL with a \"prompt\" field: one JSON line per prompt, in order");
  cmd->add_option("--output", o->output, "with --prompts-file: write the JSON lines to FILE (default stdout)");
  cmd->add_flag("--ignore-eos", o->gen.ignore_eos, "never stop at end-of-generation tokens");
  cmd->add_flag("--no-parse-special", o->no_parse_special, "special-token text in the prompt stays text");
  add_sampling_options(*cmd, o->sampling);
  add_speculative_options(*cmd, o->speculative);
  cmd->callback([o] { run_generate(*o); });
}

}  // namespace tern::cli
