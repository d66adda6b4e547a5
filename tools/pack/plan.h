// What pack and verify share: the checkpoint's inputs, the HF -> GGUF tensor
// mapping with its shape checks, and the per-tensor conversion rules. Verify
// re-runs these from the source and compares against the written file.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pack/fairy2i.h"
#include "pack/hf_config.h"
#include "pack/packer.h"
#include "pack/safetensors.h"
#include "tern/gguf.h"
#include "tern/quant.h"
#include "tern/quant_group.h"
#include "tern/tokenizer_spec.h"

namespace tern::pack {

// Phase: a Fairy2i linear (every linear and the head under --fairy2i).
enum class Role { Ternary, Phase, Norm, Embedding };

// Where a ternary tensor's trits and scale come from. PerRow: float weights
// already ternary, W = s_r * T exactly (TriLM). Absmean: float latent
// weights, T = clamp(round(W / s)), s = mean|W| per tensor (BitNet
// training). Packed: uint8, four 2-bit codes per byte along the rows, and a
// weight_scale tensor (transformers' bitnet quantization).
// Phase: Fairy2i (docs/FAIRY2I.md), per-matrix axis scales of each stage.
// PerGroup: float weights already ternary per group of a group-scaled
// output type's width (Ternary Bonsai: 128), W = s_g * T exactly, each s_g
// exact in fp16 (PQ2_0 / Q2_0 blocks hold the scales; no tern.scale key).
enum class ScaleRule { PerRow, Absmean, Packed, Phase, PerGroup };
const char* scale_rule_name(ScaleRule r);  // the tern.scale_rule value
// general.file_type of a pack whose linears are `t` (llama.h's LLAMA_FTYPE_MOSTLY_*).
uint32_t llama_file_type(gguf::TensorType t);

struct PlanTensor {
  std::string src_name;  // HF name
  std::string name;      // GGUF name
  Role role = Role::Norm;
  const StTensor* src = nullptr;
  const StTensor* scale_src = nullptr;  // Packed: the weight_scale tensor
  float packed_scale = 0;               // Packed: the scale T multiplies, from weight_scale
  uint64_t rows = 1, cols = 0;        // HF [rows, cols]; 1-D tensors have rows = 1
  std::vector<uint64_t> dims;         // GGUF dims: fastest first
  std::vector<uint32_t> perm;         // output row -> source row; empty = identity
  gguf::TensorType type = gguf::TensorType::F32;  // decided by analyze()
  bool finite_checked = false;        // a streamed pass has seen every value finite
  std::vector<float> scales;          // ternary: 1 (per tensor) or rows (output order);
                                      // group types: [rows][cols / group]; phase: [stages][4]

  // Columns in the file: a ternary row is whole QK blocks, its tail zero
  // trits (1bitLLM 3B's 3200 and 8640); the loader pads activations to match.
  uint64_t stored_cols() const {
    return role == Role::Ternary && !is_group_type(type) ? uint64_t(padded_cols(int64_t(cols))) : cols;
  }

  float row_scale(uint64_t out_row) const {
    return scales.size() == 1 ? scales[0] : scales[out_row];
  }
};

struct PackInputs {
  HfConfig cfg;
  tok::Spec tok;                    // padded to the config's vocab_size
  Checkpoint ckpt;
  std::vector<PlanTensor> tensors;  // output order
  ScaleRule rule = ScaleRule::PerRow;
  int phase_stages = 0;             // Fairy2i stages; 0: not a Fairy2i pack
  bool tied = false;                // no output.weight
  std::string name;                 // general.name
  std::string source_dtypes;        // "BF16", or "BF16,F32" when mixed
  uint64_t chunk_floats = 0;        // PackOptions::chunk_floats
  std::optional<gguf::TensorType> output_type, embedding_type;  // PackOptions
};

// Checks the directory, reads config.json, the tokenizer and the
// safetensors headers, maps and shape-checks every tensor. Of the tensor
// data only packed weight_scale values are read.
PackInputs load_inputs(const PackOptions& opts);

// The tensor's values as float, source row order; a packed tensor comes
// back unpacked to its codes minus one (-1, 0, +1, and 2 for code 3).
std::vector<float> read_values(const PackInputs& in, const PlanTensor& t);

// Float tensors (norms, embedding, head) stream in chunks of whole rows of
// about PackOptions::chunk_floats values, so pack's memory does not grow
// with the vocabulary; fn(first row, the chunk's values) in row order.
// Throws "tensor 'NAME' row R has a non-finite value" for the first NaN or
// infinity among rows of t starting at first_row.
void check_finite(const PlanTensor& t, std::span<const float> v, uint64_t first_row);

// The first pass over a tensor checks every value is finite and sets
// t.finite_checked; later passes skip the scan.
void for_each_chunk(const PackInputs& in, PlanTensor& t,
                    const std::function<void(uint64_t, std::span<const float>)>& fn);

// Settles the tensor's output type and scales, reading its source (ternary
// tensors whole, float ones in chunks); throws for a non-ternary row or a
// scale fp16 cannot hold.
void analyze(const PackInputs& in, PlanTensor& t, gguf::TensorType ternary_type);
// The ternary part of analyze(), from the tensor's values (read_values).
void analyze_ternary(PlanTensor& t, const std::vector<float>& data, ScaleRule rule,
                     gguf::TensorType ternary_type);

// Trits of output row `r` (permutation applied) of a ternary tensor.
void row_trits(const PlanTensor& t, const std::vector<float>& data, ScaleRule rule, uint64_t r,
               int8_t* trits);

// GGUF bytes, after analyze(): a whole ternary tensor, or a chunk of rows of
// a float one.
std::vector<uint8_t> encode_ternary(const PlanTensor& t, const std::vector<float>& data, ScaleRule rule);
std::vector<uint8_t> encode_float(const PlanTensor& t, std::span<const float> values);
// A Fairy2i linear's codes and scales (its values checked finite).
PhaseQuantized phase_quantize_checked(const PackInputs& in, const PlanTensor& t, const std::vector<float>& data);
// A Fairy2i linear's FAIRY2I bytes, from its values (read_values); analyze()
// gave it the same scales.
std::vector<uint8_t> encode_phase(const PackInputs& in, const PlanTensor& t, const std::vector<float>& data);

}  // namespace tern::pack
