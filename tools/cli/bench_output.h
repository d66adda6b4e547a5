// tern bench's result rows and their printers, in llama-bench's formats:
// a Markdown table, CSV with a header line, a JSON array, JSON lines.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tern::cli {

struct BenchRow {
  std::string model_filename, model_type, kernel, test_time;
  int64_t model_size = 0, model_n_params = 0;
  int n_threads = 0, n_prompt = 0, n_gen = 0;
  // llama-batched-bench's runs (tern bench -npl): n_seq sequences at once,
  // each n_prompt tokens of prompt, or n_gen tokens generated after n_depth
  // of prompt; the rate is over all of them.
  int n_seq = 1, n_depth = 0;
  std::vector<int64_t> samples_ns;  // one per repetition
  int64_t bytes_per_token = 0;      // tg only: what one decode token reads; 0 otherwise
  double roof_bytes_per_sec = 0;    // plain read bandwidth, same run and threads; 0: not measured

  int tokens() const { return (n_prompt + n_gen) * n_seq; }
  double avg_ts() const;  // mean of the per-sample tokens per second
  double stddev_ts() const;
  // tg only: decode bytes per second over the roof (0 when unknown).
  double roof_fraction() const;
};

class BenchPrinter {
 public:
  virtual ~BenchPrinter() = default;
  virtual void header() {}
  virtual void row(const BenchRow& r) = 0;
  virtual void footer() {}
};

// format: md, csv, json or jsonl (the CLI checks the name).
std::unique_ptr<BenchPrinter> make_bench_printer(const std::string& format);

}  // namespace tern::cli
