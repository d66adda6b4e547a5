// Each subcommand registers its flags and a run callback; callbacks throw
// tern::Error, and main() alone turns errors into exit codes.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "tern/generate.h"
#include "tern/context.h"
#include "tern/model.h"
#include "tern/speculative.h"
#include "tern/tokenizer.h"

namespace tern::cli {

// Texts read whole (perplexity -f, tokenize -f and --stdin): WikiText-103's
// test set is 1.3 MB, so 1 GiB is only there to stop /dev/zero-like inputs.
inline constexpr uint64_t kMaxTextBytes = uint64_t(1) << 30;

// Flags every model-running command shares.
struct RunOptions {
  std::string model;
  int threads = 0;      // 0: all cores
  std::string kernel;   // empty: best available (or TERN_KERNEL)
  int ctx = -1;         // -c; -1: not given (the trained context, at most 4096); 0: the trained context
  std::string cache_type_k = "f32", cache_type_v = "f32";  // -ctk, -ctv
  std::string float_act;  // --float-act: i16, i8 or f32; "": the family's default
  bool no_mmap = false;
};

// Adds -m, -t, --kernel, -c, -ctk, -ctv and --float-act to a subcommand.
void add_run_options(CLI::App& cmd, RunOptions& o);
// The kernel set to ask for: --kernel's value, else the environment's
// TERN_KERNEL, else "" (the best); a bad name throws, saying which it was.
std::string kernel_choice(const std::string& flag);
// s with A-Z turned to a-z (flag values are matched as llama.cpp's tools spell them).
std::string ascii_lower(std::string s);
// The --float-act option, shared by the run commands and bench.
void add_float_act_option(CLI::App& cmd, std::string& value);
// The load option a --float-act value (already checked) asks for; none
// for "" (the family's default).
std::optional<FloatActs> float_acts(const std::string& flag);
// Applies the kernel choice and loads the model.
std::unique_ptr<Model> open_model(const RunOptions& o);
// The context the flags ask for (-c, -t, -ctk, -ctv) for `seqs`
// sequences; warns on stderr when -c gives each more positions than the
// model was trained on.
ContextOptions context_options(const RunOptions& o, const Model& m, int seqs = 1);
// --temp, --top-k, --top-p, -s, --min-p, the penalties and -l, shared by
// generate and chat.
struct SamplingOptions {
  SamplerParams params;
  int64_t seed = -1;  // -1: a fresh one, printed
  std::vector<std::string> logit_bias;  // -l: TOKEN_ID(+|-)BIAS
};
// One -l value; throws tern::Error naming it when malformed.
std::pair<int32_t, float> parse_logit_bias(const std::string& text);
void add_sampling_options(CLI::App& cmd, SamplingOptions& o);
// Throws for a -l token outside the vocabulary of `vocab` ids.
SamplerParams sampler_params(const SamplingOptions& o, int vocab);
// Speculative decoding's flags (generate, chat): -md, --draft-max,
// --draft-min, --lookup; and what they set up for a target model.
struct SpeculativeCli {
  std::string model_draft;
  SpeculativeOptions spec;
  bool on() const { return !model_draft.empty() || spec.lookup; }
};
void add_speculative_options(CLI::App& cmd, SpeculativeCli& o);
struct DraftSetup {
  std::unique_ptr<Model> model;    // -md's, if given
  std::unique_ptr<Context> ctx;    // over it, as long as the target's context
  std::unique_ptr<Drafter> drafter;
};
// Null drafter when no flag asks for one; throws for a draft model whose
// vocabulary is not the target's.
DraftSetup open_drafter(const SpeculativeCli& o, const RunOptions& run, const Model& target,
                        const Tokenizer& target_tok, int n_ctx, const SamplerParams& sp);
// "speculative: N drafted, M accepted (acceptance F)" on stderr, when drafts ran.
void print_speculative(const DraftSetup& d, int drafted, int accepted);

// The tokenizer's load-time notes, one stderr line each.
void print_notes(const Tokenizer& tok, const std::string& path);

// The model used when -m is not given.
std::string default_model_path();

void add_generate(CLI::App& app);
void add_perplexity(CLI::App& app);
void add_pack(CLI::App& app);
void add_info(CLI::App& app);
void add_kernels(CLI::App& app);
void add_bench(CLI::App& app);
void add_tokenize(CLI::App& app);
void add_chat(CLI::App& app);
void add_serve(CLI::App& app);

}  // namespace tern::cli
