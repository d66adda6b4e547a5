// libFuzzer target for tokenizer.json: any input must either become a
// Tokenizer or throw tern::Error. A Tokenizer that loads is then run on a
// few fixed texts (fuzz_tokenizer_common.h), so that the rules the fuzzer
// invents (regexes, normalizers, decoders, added tokens, merges) are
// executed, not only parsed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_tokenizer_common.h"
#include "tern/error.h"
#include "tern/tokenizer.h"
#include "tern/tokenizer_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string name = "fuzz/tokenizer.json";
  try {
    tern::tok::Spec spec = tern::tok::parse_tokenizer_json(bytes, name);
    if (spec.tokens.empty()) __builtin_trap();  // a Spec that parsed has a vocabulary
    const tern::Tokenizer tok(std::move(spec), name);
    tern_fuzz::exercise(tok);
  } catch (const tern::Error& e) {
    tern_fuzz::note(e);
  }
  return 0;
}
