// A loaded model: hyperparameters (Config), read-only tensors mapped from the
// file (Weights) and the mutable buffers of a forward pass (RunState) are
// kept apart, as in llama2.c. Weights point into the GGUF mapping; only the
// exact per-row scales are copied out.
#pragma once
#include <cstdint>
#include <functional>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <optional>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "tern/aligned_buffer.h"
#include "tern/family.h"
#include "tern/gguf.h"
#include "tern/kernels.h"
#include "tern/thread_pool.h"

namespace tern {

struct Config {
  const Family* family = nullptr;  // from general.architecture
  int dim = 0;          // embedding width
  int hidden_dim = 0;   // FFN width
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;     // dim / n_heads unless the file says otherwise
  int vocab_size = 0;
  int context_length = 0;  // trained context; the default KV cache size
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;
  ActMode act_mode = ActMode::Float;  // how ternary linears see their input
  gguf::TensorType weight_type = gguf::TensorType::TQ2_0;
  bool tied_output = false;  // lm_head shares token_embd
  // The family's variations of the Llama block, copied so the forward pass
  // reads them from one place.
  FfnAct ffn_act = FfnAct::SiLU;
  RopeStyle rope = RopeStyle::Pairs;
  bool sub_norms = false;
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
// model a phase linear (phase.data set, w unused).
struct Linear {
  TernaryMatrix w;
  PhaseMatrix phase;                  // Fairy2i: [phase.rows complex rows x phase.cols] per stage
  std::vector<float> scales;          // [w.rows]; Fairy2i: [phase.stages][4]
  const float* in_norm = nullptr;     // [logical cols] its input's RMSNorm weight, if the file has them
  std::vector<uint8_t> converted;     // w's TQ2_0 bytes when the file holds another type (I2_S);
                                      // freed (w.data null) once a kernel has prepared its layout
  std::shared_ptr<const void> packed;  // the kernel set's own layout, if it has one
  const KernelSet* kernels = nullptr;  // the set this matrix runs on, its layout made for it

  // w and phase point into scales and converted: a move keeps their heap
  // buffers, a copy would leave the copy's pointers in the original.
  Linear() = default;
  Linear(Linear&&) = default;
  Linear& operator=(Linear&&) = default;
  Linear(const Linear&) = delete;
  Linear& operator=(const Linear&) = delete;
};

// A distinct shape of ternary linear, timed at load by --kernel auto: the
// time each candidate set took for one product over every row (one
// thread; one int8 vector, or two, a token's 16-bit digits, for a
// float-activation model; the best of repeated calls, round robin over the
// sets, each with the matrix flushed from the caches as a decode step finds
// it), and the one every linear of the shape then runs on. Decode times
// within kDisplaceMargin of the fastest are ties: sets that share a decode
// loop and differ in prompts (avx512-amx, avx512-vnni) time alike, and a
// shared machine's drift must not pick the one without tiles. The tied sets
// are then timed on kChoicePromptTokens tokens at once (prompt_seconds), and
// the choice is the first tied set in all_kernel_sets()' best-first order
// unless a later one is more than kDisplaceMargin faster there.
constexpr double kDisplaceMargin = 0.05;
constexpr int kChoicePromptTokens = 32;
struct KernelChoice {
  gguf::TensorType type = gguf::TensorType::TQ2_0;
  int64_t rows = 0, cols = 0;
  std::vector<std::pair<const KernelSet*, double>> seconds;         // candidates in all_kernel_sets() order
  std::vector<std::pair<const KernelSet*, double>> prompt_seconds;  // the tied ones, if more than one
  const KernelSet* chosen = nullptr;

  bool fits(const TernaryMatrix& w) const { return w.type == type && w.rows == rows && w.cols == cols; }
};

struct LayerWeights {
  const float* attn_norm = nullptr;  // [dim]
  Linear wq;                         // [q_dim x dim], rows interleaved for RoPE
  Linear wk;                         // [kv_dim x dim]
  Linear wv;                         // [kv_dim x dim]
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
};

// A zero-filled array whose pages take no memory until written, so a KV
// cache sized for the trained context costs only the positions a run
// reaches. `huge`: on 2 MiB pages (alloc_zeroed), for an array that fills
// in order.
template <class T>
class ZeroedArray {
 public:
  void assign(size_t n, bool huge = false) {
    p_.reset();  // the old array's pages go back before the new one's are asked for
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    p_ = alloc_zeroed(n * sizeof(T), huge);
    n_ = n;
  }
  T* data() { return reinterpret_cast<T*>(p_.get()); }
  const T* data() const { return reinterpret_cast<const T*>(p_.get()); }
  size_t size() const { return n_; }

 private:
  ZeroedBuffer p_;
  size_t n_ = 0;
};

// Positions per tile of the value cache (RunState). A token's stores touch
// 32 f32 pages per KV head at head_dim 128 (untiled: 128), and the first
// prompt faults in one tile per KV head and layer. Narrower tiles touch
// fewer pages but cost prompts their per-tile horizontal sums: at 64, S's
// pp512 and pp2000 ran at 0.93 and 0.90 of the untiled cache on Zen 5, at
// 256 at 1.00 and 0.95 (docs/PERFORMANCE.md).
inline constexpr int kValueTile = 256;
inline constexpr int value_tiles(int positions) { return (positions + kValueTile - 1) / kValueTile; }

// Buffers for a batch of up to `max_batch` tokens and a KV cache of
// `max_seq` positions.
struct RunState {
  int max_batch = 0, max_seq = 0;
  int query_block = 1;         // tokens per batch of attention (forward.cpp)
  std::vector<float> x;        // [max_batch][dim] residual stream
  std::vector<float> xb;       // [max_batch][dim] normed input of a block
  std::vector<float> xb2;      // [max_batch][max(dim, q_dim)] attention output
  std::vector<float> q;        // [max_batch][q_dim]
  std::vector<float> k;        // [max_batch][kv_dim]
  std::vector<float> v;        // [max_batch][kv_dim]
  std::vector<float> hb;       // [max_batch][hidden_dim] gate, then act(gate)*up
  std::vector<float> hb2;      // [max_batch][hidden_dim] up
  std::vector<float> rope_cs;  // [max_batch][head_dim] cos, sin of each token's RoPE angles
  std::vector<float> att;      // [threads][query_block * n_heads / n_kv_heads][max_seq] attention
                               // scores, then weights
  std::vector<float> att_q;    // [threads][query_block * n_heads / n_kv_heads][head_dim] a block's
                               // queries, then its attention outputs
  std::vector<float> att_w;    // [threads][query_block * n_heads / n_kv_heads][kValueTile] one
                               // value tile's share of the weights
  std::vector<float> att_o;    // [threads][query_block * n_heads / n_kv_heads][head_dim] one
                               // value tile's share of the outputs
  std::vector<float> xpad;     // [max_batch][widest K] input padded to whole blocks or
                               // through a linear's own norm; Fairy2i: [max_batch][2 *
                               // widest padded complex width]; empty when none is needed
  std::vector<int8_t> xq;      // [max_batch][digits][widest K] int8 input (up to
                               // Model::digits_ vectors per token), K = padded_cols(width);
                               // Fairy2i: [max_batch][digits][2 * widest complex width]
  std::vector<float> xq_scale; // [max_batch] 127 (int16: act_digits_max) / absmax per token
  std::vector<int> xq_digits;  // [max_batch] vectors token i's input took
  std::vector<int32_t> isum;   // [max_batch][digits][max(q_dim + 2 kv_dim, 2 hidden_dim, dim)]
                               // int8 sums
  std::vector<float> logits;   // [n][vocab] of the last forward() (grows on demand)
  // The KV cache in its element types (F32, F16 or BF16). Per KV head the
  // keys are rows [pos][head_dim] and the values are stored transposed in
  // tiles of kValueTile positions, [tile][head_dim][kValueTile], so both
  // products of attention are dense_gemm calls (scores = K q, out = V^T p
  // tile by tile): one kernel per ISA, in the fixed order of kernels.h,
  // for every cache type. Untiled, row d held dimension d of every
  // position, max_seq apart: a token's value stores touched head_dim pages
  // per KV head (a TLB miss each), and the first prompt faulted in a
  // quarter of the cache. Tiles are outermost, one tile of every layer and
  // head after another, on huge pages: a token's value stores then touch
  // a few 2 MiB pages instead of head_dim / 4 small ones per KV head and
  // layer, and each huge page is written only once positions reach it.
  gguf::TensorType k_type = gguf::TensorType::F32, v_type = gguf::TensorType::F32;
  ZeroedArray<uint8_t> key_cache;    // [n_layers][n_kv_heads][max_seq][head_dim] of k_type
  ZeroedArray<uint8_t> value_cache;  // [value_tiles(max_seq)][n_layers][n_kv_heads][head_dim]
                                     // [kValueTile] of v_type, on huge pages
};

// How the linears of a float-activation model (TriLM) take their input.
// Int16: each token's input is rounded to 16 bits (24 where 16 would leave
// a relative error above kWideRelError) and multiplied as int8 digits by
// the int8 kernels (quantize_act_digits): 2-3x the float kernels' speed,
// logits identical on every kernel set, a trained model's perplexity
// within 0.01% of exact (docs/PERFORMANCE.md). Int8: one int8 digit per
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
struct LoadOptions {
  // Kernel set by name; "": the best for this CPU. "auto": that set, and in
  // int8 mode (int16 activations included) each distinct linear shape runs
  // on whichever available set timed fastest on it at load (exact int sums,
  // so the logits do not depend on the choice; float kernels are not mixed,
  // as their roundings differ).
  std::string kernel;
  int threads = 0;  // threads of the forward pass; 0: one per available CPU
  // KV cache positions. 0: the trained context, at most kDefaultCtx (as
  // llama.cpp's default -c 4096): a small file declaring 2^24 positions
  // must not size the cache. kTrainedCtx: the trained context, whatever
  // its size (llama.cpp's -c 0).
  int ctx = 0;
  // false: the weights only, no KV cache or batch buffers (tern info).
  bool run_state = true;
  // false: read the file into memory (llama.cpp's --no-mmap) instead of
  // mapping it, so truncating or rewriting it cannot fault the run.
  bool use_mmap = true;
  // KV cache element types: F32 (exact), F16 or BF16 (half the memory and
  // the bytes a long-context token reads; llama.cpp's -ctk / -ctv).
  gguf::TensorType cache_type_k = gguf::TensorType::F32;
  gguf::TensorType cache_type_v = gguf::TensorType::F32;
  // Float-activation models only; int8 models quantize as they were trained.
  // None: the family's default (Int16, or Exact where Family::exact_float_acts).
  std::optional<FloatActs> float_acts;
};

class Model {
 public:
  // Maps and validates the file; throws tern::Error "path: problem".
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& opts = {});
  ~Model();

  const Config& config() const { return config_; }
  const Weights& weights() const { return weights_; }
  const gguf::File& file() const { return file_; }
  // The kernel set chosen when the model was loaded; weights are prepared
  // for it, so it stays the one this model uses.
  const KernelSet& kernels() const { return *kernels_; }
  // True when a float-activation model runs its linears on int16
  // activations (LoadOptions::float_acts), through the int8 kernels.
  bool int16_activations() const { return digits_ > 1; }
  // True when a float-activation model runs them on int8 activations.
  bool int8_float_activations() const { return digits_ == 1 && config_.act_mode == ActMode::Float; }
  // The per-shape choices of --kernel auto; empty when the model was not
  // tuned (another kernel option, or float kernels).
  std::span<const KernelChoice> kernel_choices() const { return choices_; }

  // Weights of the model as the checkpoint counts them (ternary linears at
  // their logical width, embeddings, an untied head, norms).
  int64_t n_params() const;
  // Bytes one decode step reads apart from the KV cache: every ternary
  // linear in the layout its kernel reads, the head in its stored type, the
  // norms. The numerator of a decode's fraction of the read roof.
  int64_t bytes_per_token() const;
  // KV cache bytes a token at position pos reads (keys and values of
  // positions 0..pos in every layer).
  int64_t kv_bytes_at(int64_t pos) const {
    return int64_t(config_.n_layers) * (pos + 1) * config_.kv_dim() *
           (dense_row_bytes(state_.k_type, 1) + dense_row_bytes(state_.v_type, 1));
  }

  // Sizes the run state: a KV cache of `max_seq` positions (0 and
  // kTrainedCtx as LoadOptions::ctx) and batches of up to `max_batch`
  // tokens. Throws tern::Error naming the cache size when memory is short.
  void reset(int max_seq = 0, int max_batch = 64);
  int max_seq() const { return state_.max_seq; }

  // Threads of the forward pass; set_threads replaces the team (bench runs
  // several thread counts on one loaded model).
  int threads() const { return pool_->size(); }
  void set_threads(int threads);

  // Runs tokens at positions pos .. pos+n-1 (the KV cache must hold the
  // earlier positions). Returns logits [n][vocab] when all_logits, else
  // only the last token's [vocab]. Throws if pos + n exceeds the cache.
  std::span<const float> forward(std::span<const int32_t> tokens, int pos, bool all_logits);

 private:
  explicit Model(gguf::File f);
  void resize_state(int max_seq, int max_batch);
  // Non-finite values in the float tensors read per token. An embedding
  // row is checked as a token looks it up; the head through the first
  // product over it (check_head), so no load pass reads it beforehand.
  void embed(int32_t token, float* out) const;
  void check_head(const float* logits);
  // Copies the head from the file's mapping onto huge pages (move_head).
  void move_head();
  // Loads (and prepares for the kernel set) layer l; the config, the kernel
  // set and weights_.layers are set. Called from several threads at once.
  void load_layer(int l);
  // --kernel auto: times the candidate sets on layer 0's linears, one
  // KernelChoice per distinct shape (src/model/kernel_choice.cpp).
  void choose_kernels();
  // logits: [n][vocab] (or [1][vocab] with last_only); null skips the head.
  void forward_batch(const int32_t* tokens, int n, int pos, float* logits, bool last_only);
  // One ternary product y[n][rows] = W x[n][cols].
  struct Product {
    const Linear* l;
    float* y;
  };
  // glu: ps is {gate, up} of equal rows, and the result is glu(gate, up) in
  // gate's y, applied to each chunk of rows inside the products' region.
  using Glu = void (*)(float* gate, const float* up, int n);
  // prepare(i), if set, first writes token i's row of x (its norm), in the
  // same region as the input's quantization.
  using Prepare = std::function<void(int i)>;
  void linears(std::initializer_list<Product> ps, const float* x, int n, int in_dim, Glu glu = nullptr,
               const Prepare& prepare = {});
  void phase_linears(std::initializer_list<Product> ps, const float* x, int n, int in_dim);
  // Token i's linear input in[len] as int8 vectors q + j * stride: its
  // int8 input, or its int16 input's digits, most significant first.
  // Sets state_.xq_scale[i] and xq_digits[i]; returns the digits.
  int quantize_input(size_t i, const float* in, int64_t len, int8_t* q, int64_t stride);

  gguf::File file_;
  const KernelSet* kernels_ = nullptr;
  // The most int8 vectors a token's linear input becomes: 1 in int8 mode,
  // kMaxActDigits with int16 activations, 0 with float activations.
  int digits_ = 0;
  std::vector<KernelChoice> choices_;
  bool head_checked_ = false;  // a product over every head row has come out finite or been explained
  bool head_in_file_ = false;   // the head is read from the file's mapping; move_head is to come
  AlignedBuffer head_copy_;     // [head bytes] the head on huge pages, once moved
  Config config_;
  Weights weights_;
  RunState state_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace tern
