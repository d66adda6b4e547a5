#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <filesystem>
#include <limits>

#include "cli/commands.h"
#include "tern/error.h"
#include "tern/kernels.h"
#include "tern/printable.h"

namespace tern::cli {

std::string default_model_path() {
  if (const char* env = std::getenv("TERN_MODEL"); env && *env) return env;
  return TERN_DEFAULT_MODEL;
}

void add_run_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("-m,--model", o.model, "GGUF model file (default: the bundled model)");
  cmd.add_option("-t,--threads", o.threads, "threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd.add_option("--kernel", o.kernel,
                 "force a kernel set (see 'tern kernels'); auto: time the sets on each linear shape at load");
  cmd.add_option("-c,--ctx-size,--ctx", o.ctx,
                 "context size in tokens; 0 is the model's trained context (default: that, at most 4096)")
      ->check(CLI::Range(0, 1 << 24));
  cmd.add_flag("--no-mmap", o.no_mmap, "read the model into memory instead of mapping it");
  const std::vector<std::string> cache_types{"f32", "f16", "bf16"};
  cmd.add_option("--cache-type-k", o.cache_type_k, "KV cache type for K (also -ctk): f32 (default), f16, bf16")
      ->check(CLI::IsMember(cache_types, CLI::ignore_case));
  cmd.add_option("--cache-type-v", o.cache_type_v, "KV cache type for V (also -ctv): f32 (default), f16, bf16")
      ->check(CLI::IsMember(cache_types, CLI::ignore_case));
  add_float_act_option(cmd, o.float_act);
}

std::optional<FloatActs> float_acts(const std::string& flag) {
  if (flag.empty()) return std::nullopt;
  return flag == "f32" ? FloatActs::Exact : flag == "i8" ? FloatActs::Int8 : FloatActs::Int16;
}

void add_float_act_option(CLI::App& cmd, std::string& value) {
  cmd.add_option("--float-act", value,
                 "inputs of a float-activation model's linears: i16 (TriLM's default: int16 through "
                 "the int8 kernels; 24 bits where 16 lose more than 1e-4), i8 (one int8 per value, "
                 "per-token absmax: faster, lossy) or f32 (exact float; Fairy2i's default)")
      ->check(CLI::IsMember({"i16", "i8", "f32"}));
}

std::string ascii_lower(std::string s) {
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

namespace {
gguf::TensorType cache_type(const std::string& name) {
  const std::string s = ascii_lower(name);
  if (s == "f16") return gguf::TensorType::F16;
  if (s == "bf16") return gguf::TensorType::BF16;
  if (s == "f32") return gguf::TensorType::F32;
  throw Error("cache type " + name + ": expected f32, f16 or bf16");
}
}  // namespace

std::string kernel_choice(const std::string& flag) {
  if (!flag.empty()) {
    find_kernel_set(flag);  // an unknown or unavailable name fails before the load
    return flag;
  }
  const char* env = std::getenv("TERN_KERNEL");
  if (env == nullptr || *env == '\0') return "";
  find_kernel_set(env, std::string("TERN_KERNEL=") + env);  // the error says where the name came from
  return env;
}

std::unique_ptr<Model> open_model(const RunOptions& o) {
  const std::string path = o.model.empty() ? default_model_path() : o.model;
  LoadOptions lo;
  lo.kernel = kernel_choice(o.kernel);
  lo.threads = o.threads;
  lo.use_mmap = !o.no_mmap;
  lo.float_acts = float_acts(o.float_act);
  return Model::load(path, lo);
}

ContextOptions context_options(const RunOptions& o, const Model& m, int seqs) {
  // As llama.cpp: allowed, but positions past training are extrapolation.
  if (o.ctx / seqs > m.config().context_length)
    std::fprintf(stderr, "warning: -c %d%s is more than the %d positions %s was trained on\n", o.ctx,
                 seqs > 1 ? (" over " + std::to_string(seqs) + " sequences").c_str() : "",
                 m.config().context_length, m.file().path().c_str());
  ContextOptions co;
  co.max_seqs = seqs;
  co.ctx = o.ctx < 0 ? 0 : o.ctx == 0 ? kTrainedCtx : o.ctx;
  co.threads = o.threads;
  co.cache_type_k = cache_type(o.cache_type_k);
  co.cache_type_v = cache_type(o.cache_type_v);
  return co;
}

namespace {
// CLI11's ranges compare, and every comparison with NaN is false, so
// "--temp nan" passed them; this one parses the text itself.
CLI::Validator finite_number(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') return "'" + text + "' is not a number";
        if (!std::isfinite(v) || v < lo || v > hi)
          return "'" + text + "' is not a finite number from " + CLI::detail::to_string(lo) +
                 (hi < 1e300 ? " to " + CLI::detail::to_string(hi) : std::string(" or more"));
        return "";
      },
      "");
}
}  // namespace

void add_sampling_options(CLI::App& cmd, SamplingOptions& o) {
  cmd.add_option("--temp", o.params.temp, "temperature; 0 is greedy (default 0.8)")
      ->check(finite_number(0, 1e308));
  cmd.add_option("--top-k", o.params.top_k, "keep the K most likely tokens; 0 keeps all (default 40)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--top-p", o.params.top_p, "nucleus sampling threshold (default 0.95)")
      ->check(finite_number(0, 1));
  cmd.add_option("-s,--seed", o.seed, "random seed (default: random, printed)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--min-p", o.params.min_p,
                 "drop tokens below this times the most likely one's probability (default 0: off)")
      ->check(finite_number(0, 1));
  cmd.add_option("--presence-penalty", o.params.presence_penalty,
                 "subtracted from the logit of every token already generated (default 0)")
      ->check(finite_number(-100, 100));
  cmd.add_option("--frequency-penalty", o.params.frequency_penalty,
                 "subtracted from a token's logit once per time it was generated (default 0)")
      ->check(finite_number(-100, 100));
  cmd.add_option("-l,--logit-bias", o.logit_bias,
                 "TOKEN_ID+BIAS or TOKEN_ID-BIAS added to a token's logit (-inf bans it); repeatable")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              parse_logit_bias(text);
              return "";
            } catch (const Error& e) {
              return e.what();
            }
          },
          ""));
}

std::pair<int32_t, float> parse_logit_bias(const std::string& text) {
  const size_t at = text.find_first_of("+-", 1);
  const std::string bad = "logit bias '" + text + "': expected TOKEN_ID+BIAS or TOKEN_ID-BIAS";
  if (at == std::string::npos || at == 0) throw Error(bad);
  char* end = nullptr;
  const long id = std::strtol(text.c_str(), &end, 10);
  if (end != text.c_str() + at || id < 0 || id > INT32_MAX) throw Error(bad);
  const std::string value = text.substr(at);
  if (value == "-inf") return {int32_t(id), -std::numeric_limits<float>::infinity()};
  const double v = std::strtod(value.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v) || std::fabs(v) > 1e6) throw Error(bad);
  return {int32_t(id), float(v)};
}

SamplerParams sampler_params(const SamplingOptions& o, int vocab) {
  SamplerParams p = o.params;
  for (const std::string& b : o.logit_bias) {
    p.logit_bias.push_back(parse_logit_bias(b));
    if (p.logit_bias.back().first >= vocab)
      throw Error("--logit-bias " + b + ": token " + std::to_string(p.logit_bias.back().first) +
                  " is outside the vocabulary of " + std::to_string(vocab));
  }
  // Like llama.cpp, no seed means a fresh one; it is printed so the run can
  // be repeated exactly.
  p.seed = o.seed >= 0 ? uint64_t(o.seed) : std::random_device{}();
  return p;
}

void add_speculative_options(CLI::App& cmd, SpeculativeCli& o) {
  cmd.add_option("--model-draft", o.model_draft,
                 "speculative decoding with this draft model (also -md; its vocabulary must be the model's)");
  cmd.add_flag("--lookup", o.spec.lookup,
               "speculative decoding without a draft model: drafts copied from earlier text of the sequence");
  cmd.add_option("--draft-max", o.spec.draft_max, "tokens per draft (default 8)")->check(CLI::Range(1, 256));
  cmd.add_option("--draft-min", o.spec.draft_min, "shorter drafts are not verified (default 0)")
      ->check(CLI::Range(0, 256));
}

DraftSetup open_drafter(const SpeculativeCli& o, const RunOptions& run, const Model& target,
                        const Tokenizer& target_tok, int n_ctx, const SamplerParams& sp) {
  DraftSetup d;
  if (!o.on()) return d;
  if (!o.model_draft.empty() && o.spec.lookup) throw Error("--model-draft and --lookup exclude each other");
  if (!o.model_draft.empty()) {
    RunOptions r = run;
    r.model = o.model_draft;
    d.model = open_model(r);
    const Tokenizer draft_tok(d.model->file());
    check_same_vocabulary(target, target_tok, *d.model, draft_tok);
    ContextOptions co = context_options(r, *d.model);
    co.ctx = n_ctx;
    d.ctx = std::make_unique<Context>(*d.model, co);
  }
  d.drafter = std::make_unique<Drafter>(d.ctx.get(), o.spec, sp);
  return d;
}

void print_speculative(const DraftSetup& d, int drafted, int accepted) {
  if (!d.drafter) return;
  std::fprintf(stderr, "speculative (%s, up to %d tokens a draft): %d drafted, %d accepted (acceptance %.3f)\n",
               d.model ? printable(d.model->file().path()).c_str() : "lookup", d.drafter->options().draft_max,
               drafted, accepted, drafted ? double(accepted) / drafted : 0.0);
}

void print_notes(const Tokenizer& tok, const std::string& path) {
  for (const std::string& n : tok.notes()) std::fprintf(stderr, "tern: %s: %s\n", printable(path).c_str(), printable(n).c_str());
}

}  // namespace tern::cli
