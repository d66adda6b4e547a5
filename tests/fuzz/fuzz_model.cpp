// libFuzzer target for the whole path a model file takes: GGUF parse,
// hyperparameters, tensor lookup and validation (codes, scales, finiteness),
// the kernel's repack, the tokenizer from its keys, and one forward step of
// a short prompt. Seeds are tiny real models (corpus/model). Any input must
// run or throw tern::Error.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "fuzz_memfile.h"
#include "fuzz_tokenizer_common.h"
#include "tern/context.h"
#include "tern/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tern_fuzz::MemFile mem(data, size);
  try {
    tern::LoadOptions lo;
    lo.threads = 1;
    const std::unique_ptr<tern::Model> m = tern::Model::load(mem.path(), lo);
    tern::Context ctx(*m, {.ctx = 8, .threads = 1});
    const tern::Tokenizer tok(m->file());
    std::vector<int32_t> ids = tok.encode("In the beginning God");
    if (ids.empty()) ids.push_back(0);
    ids.resize(std::min<size_t>(ids.size(), 4));
    for (int32_t id : ids)
      if (id < 0 || id >= m->config().vocab_size) __builtin_trap();
    const auto logits = ctx.forward(ids, 0, false);
    if (logits.size() != size_t(m->config().vocab_size)) __builtin_trap();
    tern_fuzz::g_sink = tern_fuzz::g_sink + uint64_t(logits[0] > 0);
  } catch (const tern::Error& e) {
    tern_fuzz::note(e);
  }
  return 0;
}
