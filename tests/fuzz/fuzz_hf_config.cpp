// libFuzzer target for config.json as `tern pack` reads it: any input must
// give a config whose invariants hold, or throw tern::Error.
#include <cstdint>

#include "fuzz_memfile.h"
#include "pack/hf_config.h"
#include "tern/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tern_fuzz::MemFile mem(data, size);
  try {
    const tern::pack::HfConfig c = tern::pack::load_config(mem.path());
    // What the packer builds on: a family, positive sizes, heads that divide.
    if (!c.family || c.hidden_size == 0 || c.n_layers == 0 || c.n_heads == 0 || c.n_kv_heads == 0 ||
        c.head_dim == 0 || c.vocab_size == 0 || c.n_heads % c.n_kv_heads != 0 || !(c.rms_norm_eps > 0) ||
        !(c.rope_theta > 0))
      __builtin_trap();
  } catch (const tern::Error&) {
  }
  return 0;
}
