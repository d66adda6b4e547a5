// Hugging Face checkpoint of a ternary family (safetensors + config.json +
// tokenizer) -> GGUF with TQ2_0 / TQ1_0 linears, in the architecture and
// conventions llama.cpp (llama, bitnet) or bitnet.cpp (bitnet-b1.58) use for
// that family. See packer.cpp for every key.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "tern/gguf.h"

namespace tern::pack {

struct PackOptions {
  std::string input_dir;    // HF checkpoint directory
  std::string output_path;  // .gguf
  gguf::TensorType type = gguf::TensorType::TQ2_0;  // or TQ1_0
  bool force_ternarize = false;  // --ternarize: absmean-quantize non-ternary weights
  // --fairy2i: a float LLaMA checkpoint becomes a Fairy2i model of this many
  // residual stages (0: off; Fairy2i-W2 is 2). `type` is then unused.
  int fairy2i_stages = 0;
  bool verify = false;           // --verify: pack_checkpoint re-reads and checks its output
  // --output-type / --token-embedding-type: a type of kDenseTypes (quant.h) for the
  // head and the embedding (as llama-quantize's flags); unset keeps the
  // source's precision losslessly. Tied embeddings are one tensor, which
  // the output type sets unless the embedding type is given.
  std::optional<gguf::TensorType> output_type, embedding_type;
  // Float tensors are converted in chunks of about this many values (16 MiB
  // as f32): pack's peak memory is then about the largest ternary tensor.
  uint64_t chunk_floats = uint64_t(1) << 22;
  // Progress lines with an ETA: a few while checking the source, one per
  // tensor written. May be empty.
  std::function<void(const std::string& line)> progress;
};

struct PackReport {
  uint64_t n_tensors = 0;
  uint64_t n_ternary = 0;
  uint64_t bytes_written = 0;            // size of the output file
  double bits_per_weight_ternary = 0;    // ternary tensor bytes * 8 / their weights
  std::string activation_mode;           // "int8" or "float"
};

// Packs opts.input_dir into opts.output_path atomically: on any error no
// output (and no temporary) is left. With opts.verify it then calls
// verify_packed and removes the output if that fails. Throws tern::Error.
PackReport pack_checkpoint(const PackOptions& opts);

// Re-derives every tensor, scale and tokenizer entry from the source and
// compares with opts.output_path; throws tern::Error naming the first
// mismatch (tensor and row).
// `progress` hears the source bytes of each tensor checked.
void verify_packed(const PackOptions& opts, const std::function<void(uint64_t)>& progress = {});

}  // namespace tern::pack
