#include "cli/bench_output.h"

#include <cmath>
#include <cstdio>
#include <numeric>

namespace tern::cli {
namespace {

std::vector<double> rates(const BenchRow& r) {
  std::vector<double> ts;
  for (int64_t ns : r.samples_ns) ts.push_back(ns > 0 ? 1e9 * r.tokens() / double(ns) : 0);
  return ts;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1));
}

std::string test_name(const BenchRow& r) {
  std::string t = r.n_gen == 0    ? "pp" + std::to_string(r.n_prompt)
                  : r.n_prompt == 0 ? "tg" + std::to_string(r.n_gen)
                                    : "pp" + std::to_string(r.n_prompt) + "+tg" + std::to_string(r.n_gen);
  if (r.n_depth > 0) t += " @ d" + std::to_string(r.n_depth);
  if (r.n_seq > 1) t += " x" + std::to_string(r.n_seq);
  return t;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// llama-bench's field names first, then tern's own.
const char* const kFields[] = {"model_filename", "model_type", "model_size", "model_n_params",
                               "backends",       "n_threads",  "n_prompt",   "n_gen",
                               "test_time",      "avg_ns",     "stddev_ns",  "avg_ts",
                               "stddev_ts",      "bytes_per_token", "read_gbps", "roof_fraction",
                               "n_seq",          "n_depth"};
const bool kString[] = {true, true, false, false, true, false, false, false, true,
                        false, false, false, false, false, false, false, false, false};

std::vector<std::string> values(const BenchRow& r) {
  std::vector<double> ns(r.samples_ns.begin(), r.samples_ns.end());
  const std::vector<double> ts = rates(r);
  return {r.model_filename, r.model_type, std::to_string(r.model_size), std::to_string(r.model_n_params),
          r.kernel, std::to_string(r.n_threads), std::to_string(r.n_prompt), std::to_string(r.n_gen),
          r.test_time, fmt("%.0f", mean(ns)), fmt("%.0f", stddev(ns)), fmt("%.6f", mean(ts)),
          fmt("%.6f", stddev(ts)), std::to_string(r.bytes_per_token),
          fmt("%.3f", r.roof_bytes_per_sec / 1e9), fmt("%.4f", r.roof_fraction()),
          std::to_string(r.n_seq), std::to_string(r.n_depth)};
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string json_object(const BenchRow& r, const char* sep) {
  const std::vector<std::string> v = values(r);
  std::string out = "{";
  for (size_t i = 0; i < v.size(); ++i) {
    out += sep;
    out += '"';
    out += kFields[i];
    out += "\": ";
    if (kString[i]) {
      out += '"';
      out += json_escape(v[i]);
      out += '"';
    } else {
      out += v[i];
    }
    out += ',';
  }
  std::string ns, ts;
  for (int64_t s : r.samples_ns) {
    if (!ns.empty()) ns += ", ";
    ns += std::to_string(s);
  }
  for (double s : rates(r)) {
    if (!ts.empty()) ts += ", ";
    ts += fmt("%.6f", s);
  }
  out += std::string(sep) + "\"samples_ns\": [ " + ns + " ]," + sep + "\"samples_ts\": [ " + ts + " ]";
  return out + (*sep == '\n' ? "\n  }" : " }");
}

class Markdown : public BenchPrinter {
 public:
  void header() override {
    std::printf("| %-30s | %10s | %10s | %-12s | %7s | %17s | %20s | %8s | %9s | %7s |\n", "model", "size",
                "params", "backend", "threads", "test", "t/s", "GB/s", "read GB/s", "of roof");
    std::printf("| %s | %s: | %s: | %s | %s: | %s: | %s: | %s: | %s: | %s: |\n", std::string(30, '-').c_str(),
                std::string(9, '-').c_str(), std::string(9, '-').c_str(), std::string(12, '-').c_str(),
                std::string(6, '-').c_str(), std::string(16, '-').c_str(), std::string(19, '-').c_str(),
                std::string(7, '-').c_str(), std::string(8, '-').c_str(), std::string(6, '-').c_str());
  }
  void row(const BenchRow& r) override {
    const double p = double(r.model_n_params);
    const std::string params = p >= 1e9 ? fmt("%.2f B", p / 1e9) : fmt("%.2f M", p / 1e6);
    const std::string ts = fmt("%.2f", r.avg_ts()) + " ± " + fmt("%.2f", r.stddev_ts());
    const bool decode = r.bytes_per_token > 0;
    const std::string gbs = decode ? fmt("%.2f", r.avg_ts() * double(r.bytes_per_token) / 1e9) : "";
    const std::string roof = r.roof_bytes_per_sec > 0 ? fmt("%.2f", r.roof_bytes_per_sec / 1e9) : "";
    const std::string frac = decode && r.roof_bytes_per_sec > 0 ? fmt("%.2f", r.roof_fraction()) : "";
    // "±" is two bytes and one column: printf's width counts bytes.
    std::printf("| %-30s | %10s | %10s | %-12s | %7d | %17s | %21s | %8s | %9s | %7s |\n",
                r.model_type.c_str(), fmt("%.2f GiB", double(r.model_size) / (1 << 30)).c_str(),
                params.c_str(), r.kernel.c_str(), r.n_threads, test_name(r).c_str(), ts.c_str(),
                gbs.c_str(), roof.c_str(), frac.c_str());
    std::fflush(stdout);
  }
};

class Csv : public BenchPrinter {
 public:
  void header() override {
    std::string line;
    for (const char* f : kFields) {
      if (!line.empty()) line += ',';
      line += f;
    }
    std::printf("%s\n", line.c_str());
  }
  void row(const BenchRow& r) override {
    std::string line;
    for (const std::string& v : values(r)) {
      if (!line.empty()) line += ',';
      line += '"';
      for (char c : v) {
        if (c == '"') line += '"';
        line += c;
      }
      line += '"';
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
};

class Json : public BenchPrinter {
 public:
  void header() override { std::printf("[\n"); }
  void row(const BenchRow& r) override {
    std::printf("%s  %s", first_ ? "" : ",\n", json_object(r, "\n    ").c_str());
    first_ = false;
    std::fflush(stdout);
  }
  void footer() override { std::printf("\n]\n"); }

 private:
  bool first_ = true;
};

class JsonLines : public BenchPrinter {
 public:
  void row(const BenchRow& r) override {
    std::printf("%s\n", json_object(r, " ").c_str());
    std::fflush(stdout);
  }
};

}  // namespace

double BenchRow::avg_ts() const { return mean(rates(*this)); }
double BenchRow::stddev_ts() const { return stddev(rates(*this)); }
double BenchRow::roof_fraction() const {
  return bytes_per_token > 0 && roof_bytes_per_sec > 0 ? avg_ts() * double(bytes_per_token) / roof_bytes_per_sec
                                                        : 0;
}

std::unique_ptr<BenchPrinter> make_bench_printer(const std::string& format) {
  if (format == "csv") return std::make_unique<Csv>();
  if (format == "json") return std::make_unique<Json>();
  if (format == "jsonl") return std::make_unique<JsonLines>();
  return std::make_unique<Markdown>();
}

}  // namespace tern::cli
