// libFuzzer target for the safetensors reader of `tern pack`: any input must
// parse or throw tern::Error, and every tensor a parsed header describes must
// be readable as f32 within the file.
#include <cstdint>
#include <vector>

#include "fuzz_memfile.h"
#include "pack/safetensors.h"
#include "tern/error.h"

namespace {
volatile float g_sink;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tern_fuzz::MemFile mem(data, size);
  try {
    const auto f = tern::pack::SafetensorsFile::open(mem.path());
    for (const tern::pack::StTensor& t : f->tensors()) {
      if (t.offset + t.nbytes > size) __builtin_trap();  // a tensor outside the file was accepted
      const uint64_t n = t.n_elements();
      if (n == 0 || n > (1u << 20)) continue;
      std::vector<float> v(n);
      try {
        f->read_f32(t, v.data());
      } catch (const tern::Error&) {
        continue;  // a dtype tern cannot convert
      }
      g_sink = g_sink + v.front() + v.back();
    }
  } catch (const tern::Error&) {
  }
  return 0;
}
