// llama-bench's flags and output (-m, -p, -n, -pg, -t, -r, -o md|csv|json|
// jsonl) for tern: prompt processing (pp) of a batch of random tokens, text
// generation (tg) one token at a time, and both (pg), each from an empty
// KV cache after one warm-up run. With -npl, llama-batched-bench's runs as
// well: N sequences at once, each a -p prompt (all N in one batch), then
// -n tokens each, a batch of N tokens per step; rows "ppP xN" and
// "tgT @ dP xN" give the aggregate tokens per second. Beside llama-bench's columns tern prints
// what makes a decode figure comparable across machines: the bytes one
// token reads, the plain read bandwidth measured in the same run on the
// same threads (the roof), and the fraction of it the decode reached.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <vector>

#include "cli/bench_output.h"
#include "cli/commands.h"
#include "tern/aligned_buffer.h"
#include "tern/error.h"
#include "tern/kernels.h"
#include "tern/thread_pool.h"

namespace tern::cli {
namespace {

struct BenchOptions {
  std::vector<std::string> models;
  std::vector<int> n_prompt{512};
  std::vector<int> n_gen{128};
  std::vector<std::string> pg;  // "pp,tg" pairs
  std::vector<int> threads;     // empty: all cores
  std::vector<int> npl;         // -npl: sequences at once, llama-batched-bench's runs
  int reps = 5;
  std::string output = "md";
  std::string kernel;
  std::string cache_type_k = "f32", cache_type_v = "f32";
  std::string float_act;
  bool roof = true;
};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string iso_time() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%FT%TZ", std::gmtime(&t));
  return buf;
}

// Bytes per second of plain reads over `bytes` on `threads` threads: the best
// of three passes over a buffer filled once (distinct words, so no shared
// zero page is read instead), on huge pages as the prepared weights are.
double read_roof(size_t bytes, int threads) {
  bytes = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const AlignedBuffer mem = alloc_aligned(bytes, "the read-roof buffer");
  auto* buf = reinterpret_cast<uint64_t*>(mem.get());
  ThreadPool pool(threads);
  const size_t words = bytes / 8, nt = size_t(threads);
  pool.run([&](int t) {  // each thread faults in the pages it will read
    for (size_t i = words * size_t(t) / nt; i < words * size_t(t + 1) / nt; ++i)
      buf[i] = i * 0x9E3779B97F4A7C15ull;
  });
  const auto* p = mem.get();
  const size_t chunks = bytes / kReadChunk;
  double best = 0;
  volatile uint64_t sink = 0;
  std::vector<uint64_t> totals(nt);
  for (int pass = 0; pass < 3; ++pass) {
    const double t0 = now();
    pool.run([&](int t) {
      const size_t c0 = chunks * size_t(t) / nt, c1 = chunks * size_t(t + 1) / nt;
      totals[size_t(t)] = read_sum(p + c0 * kReadChunk, (c1 - c0) * kReadChunk);
    });
    best = std::max(best, double(bytes) / (now() - t0));
    for (uint64_t x : totals) sink = sink + x;
  }
  return best;
}

std::vector<int32_t> random_tokens(int n, int vocab) {
  std::vector<int32_t> toks(size_t(std::max(n, 1)));
  uint64_t x = 12345;
  for (int32_t& t : toks) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t = int32_t((x >> 33) % uint64_t(vocab));
  }
  return toks;
}

// One pp/tg/pg run from an empty cache: the prompt as one batch, then the
// generated tokens one at a time after it.
void run_once(Context& m, const std::vector<int32_t>& toks, int n_prompt, int n_gen) {
  if (n_prompt > 0) m.forward(std::span<const int32_t>(toks.data(), size_t(n_prompt)), 0, false);
  for (int i = 0; i < n_gen; ++i)
    m.forward(std::span<const int32_t>(&toks[size_t(n_prompt + i) % toks.size()], 1), n_prompt + i,
              false);
}

// One llama-batched-bench run from an empty cache: n_seq prompts of
// n_prompt tokens in one batch (each sequence's last token asks for
// logits), then n_gen steps of one token per sequence. Returns the seconds
// of each phase.
std::pair<double, double> run_batched(Context& ctx, const std::vector<int32_t>& toks, int n_seq, int n_prompt,
                                      int n_gen) {
  for (int s = 0; s < n_seq; ++s) ctx.seq_remove(s);
  const auto token = [&](int s, int i) { return toks[size_t(s * 7919 + i) % toks.size()]; };
  std::vector<BatchToken> batch;
  for (int s = 0; s < n_seq; ++s)
    for (int i = 0; i < n_prompt; ++i) batch.push_back({token(s, i), s, i, i + 1 == n_prompt});
  double t0 = now();
  if (!batch.empty()) ctx.decode(batch);
  const double pp = now() - t0;
  t0 = now();
  for (int j = 0; j < n_gen; ++j) {
    batch.clear();
    for (int s = 0; s < n_seq; ++s) batch.push_back({token(s, n_prompt + j), s, n_prompt + j, true});
    ctx.decode(batch);
  }
  return {pp, now() - t0};
}

std::pair<int, int> parse_pg(const std::string& s) {
  const size_t comma = s.find(',');
  try {
    if (comma != std::string::npos) {
      size_t a = 0, b = 0;
      const int pp = std::stoi(s.substr(0, comma), &a), tg = std::stoi(s.substr(comma + 1), &b);
      if (a == comma && b == s.size() - comma - 1 && pp >= 0 && tg >= 0) return {pp, tg};
    }
  } catch (const std::exception&) {
  }
  throw Error("-pg " + s + ": expected two non-negative counts 'pp,tg'");
}

void run_bench(const BenchOptions& o) {
  std::vector<int> threads = o.threads;
  if (threads.empty()) threads.push_back(ThreadPool::available_cpus());
  std::vector<std::pair<int, int>> tests;  // (n_prompt, n_gen)
  for (int p : o.n_prompt)
    if (p > 0) tests.push_back({p, 0});
  for (int n : o.n_gen)
    if (n > 0) tests.push_back({0, n});
  for (const std::string& s : o.pg) tests.push_back(parse_pg(s));
  if (tests.empty()) throw Error("bench: no test to run (every -p, -n and -pg count is 0)");
  int ctx = 1, batch = 1, max_seqs = 1;
  for (auto [p, n] : tests) {
    ctx = std::max(ctx, p + n);
    batch = std::max(batch, std::min(p, 512));
  }
  // -npl: every -p prompt with every -n count, at each number of sequences.
  const int longest_p = *std::max_element(o.n_prompt.begin(), o.n_prompt.end());
  const int longest_n = *std::max_element(o.n_gen.begin(), o.n_gen.end());
  for (int b : o.npl) {
    max_seqs = std::max(max_seqs, b);
    batch = std::max(batch, std::min(b * std::max(longest_p, 1), 512));
  }
  const int seq_len = std::max(ctx, longest_p + longest_n);  // what the header check below needs
  const int cache = o.npl.empty() ? ctx : std::max(ctx, max_seqs * seq_len);
  const std::vector<std::string> models = o.models.empty() ? std::vector<std::string>{""} : o.models;
  // Every model's context is checked from its header before the table
  // starts, so a test too long for any of them prints no partial results.
  for (const std::string& given : models) {
    const std::string path = given.empty() ? default_model_path() : given;
    const gguf::File f = gguf::File::open(path);
    const std::string arch = f.get("general.architecture").as_string("general.architecture");
    const std::string key = arch + ".context_length";
    const uint64_t trained = f.get(key).as_uint(key);
    if (uint64_t(seq_len) > trained)
      throw file_error(path, "a bench test needs " + std::to_string(seq_len) +
                                 " positions; the model's context is " + std::to_string(trained));
  }
  std::unique_ptr<BenchPrinter> out = make_bench_printer(o.output);
  out->header();
  for (const std::string& given : models) {
    RunOptions run;
    run.model = given;
    run.kernel = o.kernel;
    run.cache_type_k = o.cache_type_k;
    run.cache_type_v = o.cache_type_v;
    run.float_act = o.float_act;
    std::unique_ptr<Model> model = open_model(run);
    const Config& c = model->config();
    ContextOptions co = context_options(run, *model);
    co.ctx = cache;
    co.max_batch = batch;
    co.max_seqs = max_seqs;
    const std::vector<int32_t> toks = random_tokens(ctx, c.vocab_size);
    BenchRow row;
    row.model_filename = model->file().path();
    row.model_type = std::string(c.family ? c.family->gguf_arch : "?") + " " +
                     gguf::traits(c.weight_type).name;
    row.model_size = int64_t(std::filesystem::file_size(model->file().path()));
    row.model_n_params = model->n_params();
    row.kernel = model->kernel_choices().empty() ? model->kernels().name : "auto";
    for (int t : threads) {
      co.threads = t;
      Context context(*model, co);
      // The model's one-time work before any test is timed: the first head
      // product checks the head and the step after it copies the head onto
      // huge pages (ModelAccess::before_step). A pp test's warm-up is one
      // step, so that copy (0.66 GB at L) landed in its first timed run.
      run_once(context, toks, 1, 0);
      run_once(context, toks, 1, 0);
      row.n_threads = t;
      // The roof over as many bytes as a token reads (at least 256 MiB, at
      // most 2 GiB), so it comes from DRAM as the weights do.
      const int64_t per_token = model->bytes_per_token();
      row.roof_bytes_per_sec =
          o.roof ? read_roof(size_t(std::clamp<int64_t>(per_token, int64_t(256) << 20, int64_t(2) << 30)), t)
                 : 0;
      for (auto [p, n] : tests) {
        row.n_prompt = p;
        row.n_gen = n;
        row.test_time = iso_time();
        run_once(context, toks, p, n);  // warm-up
        row.samples_ns.clear();
        for (int r = 0; r < o.reps; ++r) {
          const double t0 = now();
          run_once(context, toks, p, n);
          row.samples_ns.push_back(int64_t((now() - t0) * 1e9));
        }
        // A decode token at position pos reads the weights and pos + 1 KV
        // entries; tg from an empty cache averages over positions 0..n-1.
        row.bytes_per_token = 0;
        if (p == 0) row.bytes_per_token = per_token + (context.kv_bytes_at(0) + context.kv_bytes_at(n - 1)) / 2;
        out->row(row);
      }
      for (int b : o.npl)
        for (int p : o.n_prompt)
          for (int n : o.n_gen) {
            if (p + n == 0) continue;
            run_batched(context, toks, b, p, n);  // warm-up
            BenchRow pp = row, tg = row;
            pp.n_seq = tg.n_seq = b;
            pp.n_prompt = p;
            pp.n_gen = tg.n_prompt = 0;
            pp.bytes_per_token = 0;
            tg.n_gen = n;
            tg.n_depth = p;
            pp.test_time = tg.test_time = iso_time();
            pp.samples_ns.clear();
            tg.samples_ns.clear();
            for (int r = 0; r < o.reps; ++r) {
              const auto [tp, tt] = run_batched(context, toks, b, p, n);
              pp.samples_ns.push_back(int64_t(tp * 1e9));
              tg.samples_ns.push_back(int64_t(tt * 1e9));
            }
            // A step reads the weights once and each sequence's cache, positions p .. p + n - 1.
            tg.bytes_per_token = per_token / b + (context.kv_bytes_at(p) + context.kv_bytes_at(p + n - 1)) / 2;
            if (p > 0) out->row(pp);
            if (n > 0) out->row(tg);
          }
    }
  }
  out->footer();
}

}  // namespace

void add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "measure prompt and generation speed (llama-bench's flags)");
  cmd->add_option("-m,--model", o->models, "GGUF model file(s), comma-separated (default: the bundled model)")
      ->delimiter(',');
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens per pp test, comma-separated (default 512)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-n,--n-gen", o->n_gen, "tokens per tg test, comma-separated (default 128)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--pg", o->pg, "-pg pp,tg: a prompt then generation test (repeatable)");
  cmd->add_option("-t,--threads", o->threads, "thread counts, comma-separated (default: all cores)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--npl", o->npl,
                  "also llama-batched-bench's runs (also -npl): N sequences at once, each a -p prompt, then -n "
                  "tokens; comma-separated N")
      ->delimiter(',')
      ->check(CLI::Range(1, 256));
  cmd->add_option("-r,--repetitions", o->reps, "repetitions of each test (default 5)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("-o,--output", o->output, "output format (default md)")
      ->check(CLI::IsMember({"md", "csv", "json", "jsonl"}));
  cmd->add_option("--kernel", o->kernel, "force a kernel set (see 'tern kernels'); auto: time them per shape");
  const std::vector<std::string> cache_types{"f32", "f16", "bf16"};
  cmd->add_option("--cache-type-k", o->cache_type_k, "KV cache type for K (also -ctk): f32, f16, bf16")
      ->check(CLI::IsMember(cache_types, CLI::ignore_case));
  cmd->add_option("--cache-type-v", o->cache_type_v, "KV cache type for V (also -ctv): f32, f16, bf16")
      ->check(CLI::IsMember(cache_types, CLI::ignore_case));
  add_float_act_option(*cmd, o->float_act);
  cmd->add_flag("!--no-roof", o->roof, "skip measuring the read bandwidth");
  cmd->callback([o] { run_bench(*o); });
}

}  // namespace tern::cli
