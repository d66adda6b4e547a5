// A loaded model: hyperparameters (Config) and read-only tensors mapped from
// the file (Weights), as in llama2.c; the mutable state of a run is a
// Context's (tern/context.h). Weights point into the GGUF mapping; only the
// exact per-row scales and kernels' layouts are copied out.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tern/aligned_buffer.h"
#include "tern/family.h"
#include "tern/gguf.h"
#include "tern/kernel_choice.h"
#include "tern/kernels.h"
#include "tern/ops.h"

namespace tern {

struct Config {
  const Family* family = nullptr;  // from general.architecture
  int dim = 0;          // embedding width
  int hidden_dim = 0;   // FFN width
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;     // attention.key_length, or dim / n_heads; q_dim() need not be dim
  int vocab_size = 0;
  int context_length = 0;  // trained context; the default KV cache size
  float rope_theta = 10000.0f;
  ops::Yarn yarn;           // rope.scaling.* (type yarn); factor 1 when the file has none
  ops::RopeTable rope_table;  // from head_dim, rope_theta and yarn
  float norm_eps = 1e-5f;
  ActMode act_mode = ActMode::Float;  // how ternary linears see their input
  gguf::TensorType weight_type = gguf::TensorType::TQ2_0;
  bool tied_output = false;  // lm_head shares token_embd
  // The family's variations of the Llama block, copied so the forward pass
  // reads them from one place.
  FfnAct ffn_act = FfnAct::SiLU;
  RopeStyle rope = RopeStyle::Pairs;
  bool sub_norms = false;
  bool qk_norms = false;  // RMSNorm of each q and k head before RoPE (Qwen3)
  // Fairy2i: every linear and the head are phase linears (Linear::phase).
  bool phase = false;
  // An RMSNorm on the input of every ternary linear (transformers'
  // use_rms_norm, Falcon-E): its eps, 0 when the file has none.
  float linear_norm_eps = 0;

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
};

// A float matrix [rows x cols] kept in the file's F32, F16, BF16 or Q8_0;
// the kernel set's dense_gemm multiplies it.
struct FloatMatrix : DenseMatrix {
  void row(int64_t r, float* out) const;  // dequantize one row
};

// A ternary linear y = W x with its exact f32 row scales, or in a Fairy2i
// model a phase linear (phase.data set, w unused), or a group-scaled one
// (group.data set, w unused).
struct Linear {
  TernaryMatrix w;
  PhaseMatrix phase;                  // Fairy2i: [phase.rows complex rows x phase.cols] per stage
  GroupMatrix group;                  // PQ2_0 / Q2_0 (Ternary Bonsai): [rows x cols], w unused
  std::vector<float> scales;          // [w.rows]; Fairy2i: [phase.stages][4]
  const float* in_norm = nullptr;     // [logical cols] its input's RMSNorm weight, if the file has them
  std::vector<uint8_t> converted;     // w's TQ2_0 bytes when the file holds another type (I2_S);
                                      // freed (w.data null) once a kernel has prepared its layout
  std::shared_ptr<const void> packed;  // the kernel set's own layout, if it has one
  const KernelSet* kernels = nullptr;  // the set this matrix runs on, its layout made for it

  // Outputs and the width of the input rows the kernels read.
  int64_t rows() const { return group.data ? group.rows : w.rows; }
  int64_t cols() const { return group.data ? group.cols : w.cols; }

  // w and phase point into scales and converted: a move keeps their heap
  // buffers, a copy would leave the copy's pointers in the original.
  Linear() = default;
  Linear(Linear&&) = default;
  Linear& operator=(Linear&&) = default;
  Linear(const Linear&) = delete;
  Linear& operator=(const Linear&) = delete;
};

struct LayerWeights {
  const float* attn_norm = nullptr;  // [dim]
  Linear wq;                         // [q_dim x dim], rows interleaved for RoPE
  Linear wk;                         // [kv_dim x dim]
  Linear wv;                         // [kv_dim x dim]
  const float* attn_q_norm = nullptr;    // [head_dim], each q head's, qk-norm families only
  const float* attn_k_norm = nullptr;    // [head_dim], each k head's
  const float* attn_sub_norm = nullptr;  // [q_dim], sub-norm families only
  Linear wo;                         // [dim x q_dim]
  const float* ffn_norm = nullptr;   // [dim]
  Linear w_gate;                     // [hidden_dim x dim]
  Linear w_up;                       // [hidden_dim x dim]
  const float* ffn_sub_norm = nullptr;   // [hidden_dim], sub-norm families only
  Linear w_down;                     // [dim x hidden_dim]
};

struct Weights {
  FloatMatrix token_embd;             // [vocab x dim]
  std::vector<LayerWeights> layers;   // [n_layers]
  const float* output_norm = nullptr; // [dim]
  FloatMatrix output;                 // [vocab x dim]; token_embd when tied; empty for Fairy2i
  Linear output_phase;                // Fairy2i: the head [vocab x dim] as a phase linear
  Linear output_group;                // a PQ2_0 / Q2_0 head [vocab x dim] (output's bytes) as a group linear
};

// How the linears of a float-activation model (TriLM) take their input.
// Int16: each token's input is rounded to 16 bits (24 where 16 would leave
// a relative error above kWideRelError) and multiplied as int8 digits by
// the int8 kernels (quantize_act_digits): 2-3x the float kernels' speed,
// logits identical on every kernel set, a trained model's perplexity
// within 0.01% of exact (docs/studies/2026-11-26-float-activations.md). Int8: one int8 digit per
// token (BitNet's per-token absmax), faster and lossy. Exact: the float
// kernels. Fairy2i models take the same choices (PhaseGemmI8).
enum class FloatActs { Int16, Int8, Exact };
// ||x - rounded x|| / ||x|| above which an input gets 24 bits: the error
// a ternary dot product then takes is about this over sqrt(K) relative to
// sum |t x|, no more than the float kernels' own rounding.
inline constexpr double kWideRelError = 1e-4;

inline constexpr int kDefaultCtx = 4096;
inline constexpr int kTrainedCtx = -1;

// Choices made when a model is loaded (from the command line in tools/cli).
// What a run of it needs besides (its context size, KV cache types,
// threads) is a ContextOptions (tern/context.h).
struct LoadOptions {
  // Kernel set by name; "": the best for this CPU. "auto": that set, and in
  // int8 mode (int16 activations included) each distinct linear shape runs
  // on whichever available set timed fastest on it at load (exact int sums,
  // so the logits do not depend on the choice; float kernels are not mixed,
  // as their roundings differ).
  std::string kernel;
  int threads = 0;  // threads that load the layers; 0: one per available CPU
  // false: read the file into memory (llama.cpp's --no-mmap) instead of
  // mapping it, so truncating or rewriting it cannot fault the run.
  bool use_mmap = true;
  // Float-activation models only; int8 models quantize as they were trained.
  // None: the family's default (Int16, or Exact where Family::exact_float_acts).
  std::optional<FloatActs> float_acts;
};

struct ModelAccess;

// The weights of a model and how its linears run: immutable once loaded,
// shared by any number of Contexts (tern/context.h), which hold the
// per-sequence state, each from its own thread. The one thing that changes
// after load is where the head is read from: checked by the first product
// over it and then copied off the file's mapping, each once and atomically
// (ModelAccess), never seen by a reader as anything but the same values.
class Model {
 public:
  // Maps and validates the file; throws tern::Error "path: problem".
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& opts = {});
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const Config& config() const { return config_; }
  // As loaded; weights().output.data is where the file holds the head,
  // head() where it is read from now.
  const Weights& weights() const { return weights_; }
  const gguf::File& file() const { return file_; }
  // The kernel set chosen when the model was loaded; weights are prepared
  // for it, so it stays the one this model uses.
  const KernelSet& kernels() const { return *kernels_; }
  // The most int8 vectors a token's linear input becomes: 1 in int8 mode,
  // kMaxActDigits with int16 activations, 0 with float activations.
  int act_digits() const { return digits_; }
  // True when a float-activation model runs its linears on int16
  // activations (LoadOptions::float_acts), through the int8 kernels.
  bool int16_activations() const { return digits_ > 1; }
  // True when a float-activation model runs them on int8 activations.
  bool int8_float_activations() const { return digits_ == 1 && config_.act_mode == ActMode::Float; }
  // The per-shape choices of --kernel auto; empty when the model was not
  // tuned (another kernel option, or float kernels).
  std::span<const KernelChoice> kernel_choices() const { return choices_; }
  // The head [vocab x dim] where it is read from now: the file's mapping,
  // or its copy on huge pages once moved (ModelAccess::after_head_product).
  FloatMatrix head() const;

  // Weights of the model as the checkpoint counts them (ternary linears at
  // their logical width, embeddings, an untied head, norms).
  int64_t n_params() const;
  // Bytes one decode step reads apart from the KV cache: every ternary
  // linear in the layout its kernel reads, the head in its stored type, the
  // norms. The numerator of a decode's fraction of the read roof.
  int64_t bytes_per_token() const;

 private:
  friend struct ModelAccess;
  explicit Model(gguf::File f);
  // Loads (and prepares for the kernel set) layer l; the config, the kernel
  // set and weights_.layers are set. Called from several threads at once.
  void load_layer(int l);
  // --kernel auto: times the candidate sets on layer 0's linears, one
  // KernelChoice per distinct shape (src/model/kernel_choice.cpp).
  void choose_kernels();
  // The pieces of load() after the config, in order: the activations'
  // digits and the kernel set; the token embeddings (which fix the
  // vocabulary); every layer, on `threads` threads; the output norm and head.
  void choose_activations(const LoadOptions& opts);
  void load_embeddings();
  void load_layers(int threads);
  void load_head();

  gguf::File file_;
  const KernelSet* kernels_ = nullptr;
  int digits_ = 0;  // act_digits()
  std::vector<KernelChoice> choices_;
  Config config_;
  Weights weights_;
  // The head after load (src/model/model_access.h says who sets these).
  mutable std::atomic<bool> head_checked_{false};  // a product over every row came out finite or was explained
  mutable std::atomic<bool> head_move_claimed_{true};  // false while a move off the mapping is to come
  mutable std::atomic<const void*> head_data_{nullptr};  // head().data
  mutable AlignedBuffer head_copy_;  // [head bytes] on huge pages, once moved; written before head_data_ points to it
};

}  // namespace tern
