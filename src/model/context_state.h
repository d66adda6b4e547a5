// What a Context owns (tern/context.h): its buffers for a batch of up to
// max_batch tokens, its KV cache and its threads. Internal to src/model.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kv_cache.h"
#include "tern/context.h"
#include "tern/model.h"
#include "tern/thread_pool.h"

namespace tern {

// Buffers of one forward step over up to max_batch tokens; n is a step's
// token count, m its tokens that return logits.
struct RunState {
  int max_batch = 0;
  int max_len = 0;             // positions the longest sequence can have (the context)
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
  std::vector<float> att;      // [threads][query_block * n_heads / n_kv_heads][max_len] attention
                               // scores, then weights
  std::vector<float> att_q;    // [threads][query_block * n_heads / n_kv_heads][head_dim] a block's
                               // queries, then its attention outputs
  std::vector<float> att_w;    // [threads][query_block * n_heads / n_kv_heads][kKvPage] one
                               // page's share of the weights
  std::vector<float> att_o;    // [threads][query_block * n_heads / n_kv_heads][head_dim] one
                               // page's share of the outputs
  std::vector<float> xpad;     // [max_batch][widest K] input padded to whole blocks or
                               // through a linear's own norm; Fairy2i: [max_batch][2 *
                               // widest padded complex width]; empty when none is needed
  std::vector<int8_t> xq;      // [max_batch][digits][widest K] int8 input (up to
                               // Model::act_digits() vectors per token), K = padded_cols(width);
                               // Fairy2i: [max_batch][digits][2 * widest complex width]
  std::vector<float> xq_scale; // [max_batch] 127 (int16: act_digits_max) / absmax per token
  std::vector<int> xq_digits;  // [max_batch] vectors token i's input took
  std::vector<int32_t> isum;   // [max_batch][digits][max(q_dim + 2 kv_dim, 2 hidden_dim, dim)]
                               // int8 sums
  std::vector<float> logits;   // [m][vocab] of the last decode() (grows on demand)
};

// A run of consecutive batch entries of one sequence: the unit attention
// works on.
struct SeqRun {
  int seq = 0;
  int first = 0;  // index of its first token in the step
  int pos = 0;    // position of its first token
  int n = 0;      // tokens
};

struct Context::State {
  const Model& model;
  int n_ctx = 0;
  RunState run;
  KvCache kv;
  std::unique_ptr<ThreadPool> pool;

  State(const Model& m, const ContextOptions& o);
  // One step of at most max_batch tokens, whose pages grow() has made
  // writable: logits [rows asking][vocab] into `logits` (may be null when
  // none asks).
  void forward_step(const BatchToken* batch, int n, std::span<const SeqRun> runs, float* logits);
};

}  // namespace tern
