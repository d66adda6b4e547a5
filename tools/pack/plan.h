// What pack and verify share: the checkpoint's inputs, the HF -> GGUF tensor
// mapping with its shape checks, and the per-tensor conversion rules. Verify
// re-runs these from the source and compares against the written file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pack/hf_config.h"
#include "pack/packer.h"
#include "pack/safetensors.h"
#include "tern/gguf.h"
#include "tern/tokenizer_spec.h"

namespace tern::pack {

enum class Role { Ternary, Norm, Embedding };

struct PlanTensor {
  std::string src_name;  // HF name
  std::string name;      // GGUF name
  Role role = Role::Norm;
  const StTensor* src = nullptr;
  uint64_t rows = 1, cols = 0;        // HF [rows, cols]; 1-D tensors have rows = 1
  std::vector<uint64_t> dims;         // GGUF dims: fastest first
  std::vector<uint32_t> perm;         // output row -> source row; empty = identity
  gguf::TensorType type = gguf::TensorType::F32;  // decided by analyze()
  std::vector<float> scales;          // ternary: 1 (per tensor) or rows (output order)

  float row_scale(uint64_t out_row) const {
    return scales.size() == 1 ? scales[0] : scales[out_row];
  }
};

struct PackInputs {
  LlamaConfig cfg;
  tok::Spec tok;                    // padded to the config's vocab_size
  Checkpoint ckpt;
  std::vector<PlanTensor> tensors;  // output order
  bool absmean = false;             // scale rule: absmean-per-tensor vs exact per-row
  bool tied = false;                // no output.weight
  std::string name;                 // general.name
  std::string source_dtypes;        // "BF16", or "BF16,F32" when mixed
};

// Checks the directory, reads config.json, the tokenizer and the
// safetensors headers, maps and shape-checks every tensor. No tensor data
// is read yet.
PackInputs load_inputs(const PackOptions& opts);

// Reads the tensor's data once and settles its output type and scales;
// throws for a non-ternary row (per-row rule) or a scale fp16 cannot hold.
void analyze(PlanTensor& t, const std::vector<float>& data, bool absmean,
             gguf::TensorType ternary_type);

// Trits of output row `r` (permutation applied) of a ternary tensor.
void row_trits(const PlanTensor& t, const std::vector<float>& data, bool absmean, uint64_t r,
               int8_t* trits);

// The tensor's GGUF bytes, after analyze().
std::vector<uint8_t> encode(const PlanTensor& t, const std::vector<float>& data, bool absmean);

}  // namespace tern::pack
