// libFuzzer target for a tokenizer.model (SentencePiece ModelProto): loading
// it must give a Tokenizer that survives every operation on the fixed texts,
// or throw tern::Error (libsentencepiece's own exceptions included).
#include <cstdint>
#include <utility>

#include "fuzz_memfile.h"
#include "fuzz_tokenizer_common.h"
#include "tern/tokenizer_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tern_fuzz::MemFile mem(data, size);
  try {
    tern::tok::Spec spec = tern::tok::load_sentencepiece(mem.path());
    const tern::Tokenizer tok(std::move(spec), mem.path());
    tern_fuzz::exercise(tok);
  } catch (const tern::Error& e) {
    tern_fuzz::note(e);
  }
  return 0;
}
