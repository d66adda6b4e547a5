// A run of a Model: the KV cache of one or more sequences, the buffers of a
// forward pass and the threads that run it (llama.cpp's llama_context;
// llama2.c's RunState). The Model is shared and never written; any number
// of contexts can run it at once, each from its own thread.
//
// A forward step is a batch of (token, sequence, position) entries: the
// prompt chunks of some sequences beside one decode token of others, every
// ternary linear one GEMM over all of them, attention per sequence over its
// own positions. A token's logits are the same bits whether it runs alone
// or in any batch (docs/ARCHITECTURE.md, "Sequences and batches").
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "tern/gguf.h"
#include "tern/model.h"

namespace tern {

struct ContextOptions {
  // KV cache positions over all sequences together (llama.cpp's -c, which
  // llama-server shares among its slots). 0: the trained context, at most
  // kDefaultCtx (a small file declaring 2^24 positions must not size the
  // cache); kTrainedCtx: the trained context, whatever its size.
  int ctx = 0;
  int max_seqs = 1;    // sequences 0 .. max_seqs - 1 can hold positions at once
  int max_batch = 64;  // tokens per forward step; a longer batch runs in steps of this many
  int threads = 0;     // threads of the forward pass; 0: one per available CPU
  // KV cache element types: F32 (exact), F16 or BF16 (half the memory and
  // the bytes a long-context token reads; llama.cpp's -ctk / -ctv).
  gguf::TensorType cache_type_k = gguf::TensorType::F32;
  gguf::TensorType cache_type_v = gguf::TensorType::F32;
};

// The positions ContextOptions::ctx stands for with this model.
int context_positions(const Config& c, int ctx);

// One entry of a batch (llama_batch's token, pos, seq_id and logits).
struct BatchToken {
  int32_t token = 0;
  int seq = 0;
  int pos = 0;
  bool logits = false;  // decode() returns this token's logits
};

// Positions per page of the KV cache: sequences hold whole pages, and share
// them (Context::seq_share) until one of them writes into a shared page,
// which it then copies. One page is one tile of the value cache (the
// values of kKvPage positions stored transposed, so that attention's
// second product is a dense_gemm over them).
inline constexpr int kKvPage = 256;

class Context {
 public:
  // Sizes the KV cache and the buffers; throws tern::Error naming the cache
  // size when memory is short, or a bad option. The model must outlive the
  // context.
  explicit Context(const Model& model, const ContextOptions& o = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Model& model() const;
  int threads() const;
  int n_ctx() const;      // positions over all sequences; the longest a sequence can be
  int max_seqs() const;
  int max_batch() const;
  gguf::TensorType cache_type_k() const;
  gguf::TensorType cache_type_v() const;

  // Positions sequence `seq` holds: 0 .. seq_length(seq) - 1.
  int seq_length(int seq) const;
  // Keeps positions [0, n) of seq and lets the rest go (speculative
  // decoding's rejected drafts; a chat turn that diverges from the cache).
  void seq_truncate(int seq, int n);
  void seq_remove(int seq) { seq_truncate(seq, 0); }
  // dst (emptied first) holds the positions src holds, sharing its pages:
  // a prompt evaluated once for several continuations.
  void seq_share(int src, int dst);
  // Whether sequences can grow by `more` positions in all, given how their
  // pages fill (each sequence's last page may have room; a new page holds
  // kKvPage positions). The caller's check before a batch it must not fail.
  bool fits(std::span<const std::pair<int, int>> seq_growth) const;

  // Runs a batch. Each sequence's entries are consecutive in the batch and
  // continue it: positions seq_length(seq), seq_length(seq) + 1, ... Returns
  // the logits [rows][vocab] of the entries that ask for them, in batch
  // order, valid until the next call. Throws tern::Error, with no state
  // changed, for a bad entry (token, sequence, position) or when the cache
  // cannot hold the batch.
  std::span<const float> decode(std::span<const BatchToken> batch);

  // One sequence's tokens at positions pos .. pos + n - 1, after keeping
  // only its positions [0, pos) (pos <= seq_length(seq)). Returns logits
  // [n][vocab] when all_logits, else the last token's [vocab].
  std::span<const float> forward(std::span<const int32_t> tokens, int pos, bool all_logits, int seq = 0);

  // KV cache bytes a token at position pos reads (keys and values of
  // positions 0..pos in every layer).
  int64_t kv_bytes_at(int64_t pos) const;

  struct State;  // src/model/context_state.h

 private:
  std::unique_ptr<State> s_;
};

}  // namespace tern
