// libFuzzer target for the tokenizer keys of a GGUF file (tokenizer.ggml.*,
// tern.tokenizer.*): any input must either become a Tokenizer or throw
// tern::Error. A Tokenizer that loads is run on a few fixed texts
// (fuzz_tokenizer_common.h). Seeds: small GGUF files holding only
// tokenizer keys for "gpt2" and "llama" vocabularies (make_corpus.py).
#include <cstddef>
#include <cstdint>

#include "fuzz_tokenizer_common.h"
#include "tern/error.h"
#include "tern/gguf.h"
#include "tern/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto file = tern::gguf::File::parse({data, size}, "fuzz.gguf");
    const tern::Tokenizer tok(file);
    tern_fuzz::exercise(tok);
  } catch (const tern::Error& e) {
    tern_fuzz::note(e);
  }
  return 0;
}
