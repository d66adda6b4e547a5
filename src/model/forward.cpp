// The forward pass over a batch of consecutive tokens. Ternary linears go
// through the active kernel set as GEMV (one token) or GEMM (a batch); rows
// are handed to the model's threads (ThreadPool) here in chunks, so kernels
// stay single-threaded.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tern/error.h"
#include "tern/input_file.h"
#include "tern/model.h"
#include "tern/ops.h"
#include "tern/phase.h"
#include "tern/quant.h"

namespace tern {
namespace {

// n values src[i * src_step] into the KV cache's element type (F32, F16 or
// BF16) at dst + i * dst_step bytes, the type tested once per run.
void store(gguf::TensorType type, uint8_t* dst, size_t dst_step, const float* src, size_t src_step, int n) {
  const auto each = [&](auto convert) {
    for (size_t i = 0; i < size_t(n); ++i) {
      const auto v = convert(src[i * src_step]);
      std::memcpy(dst + i * dst_step, &v, sizeof v);
    }
  };
  if (type == gguf::TensorType::F32) each([](float v) { return v; });
  else if (type == gguf::TensorType::F16) each([](float v) { return f32_to_fp16(v); });
  else each([](float v) { return f32_to_bf16_rne(v); });
}

// Rows per claimed chunk: about 4 chunks per thread, so a thread slowed by
// another process leaves a few chunks for the others to take, in multiples
// of 16 rows (kernels work on 2 or 4 rows at a time, and a chunk should
// cover whole cache lines of scales and outputs); one chunk when alone.
// Every chunk costs a claim and a cold start of its prefetch stream: on
// Zen 5, two-thread decode made 1.03-1.18x (median 1.07) with 4 per thread
// than with 16 in alternated rounds, prompts the same within the noise,
// and beside a busy loop the two were alike (docs/PERFORMANCE.md).
constexpr int64_t kChunksPerThread = 4;
int64_t row_chunk(int64_t rows, int threads) {
  if (threads <= 1) return std::max(rows, int64_t(1));
  const int64_t want = (rows + kChunksPerThread * threads - 1) / (kChunksPerThread * threads);
  return std::max(int64_t(16), (want + 15) / 16 * 16);
}

// The products' rows one after another, in chunks claimed by the pool's
// threads (a thread whose core is shared with another process takes
// fewer): fn(product, first, r0, r1) for each product's rows [r0, r1) in a
// chunk, `first` the product's first row in the concatenation.
template <class Products, class Rows, class Fn>
void for_product_rows(ThreadPool& pool, const Products& ps, Rows rows, Fn fn) {
  int64_t total = 0;
  for (const auto& p : ps) total += rows(p);
  const int64_t chunk = row_chunk(total, pool.size());
  pool.run([&](int) {
    pool.for_chunks(total, chunk, [&](int64_t b, int64_t e) {
      int64_t first = 0;
      for (const auto& p : ps) {
        const int64_t M = rows(p), r0 = std::max(b - first, int64_t(0)), r1 = std::min(e - first, M);
        if (r0 < r1) fn(p, first, r0, r1);
        first += M;
      }
    });
  }, ThreadPool::Split::Claimed);
}

// fn(i) for each item i < items (by default the n tokens of a batch): over
// the pool for a prompt's batch, whose per-token norms, quantization and
// RoPE cost a tenth of a prompt on one thread while the other waits; on
// the caller for a few tokens, where a region would cost more than the work.
constexpr int kTokensForRegion = 16;
template <class F>
void per_token(ThreadPool& pool, int n, F fn, int items = -1) {
  if (items < 0) items = n;
  if (n < kTokensForRegion || pool.size() == 1) {
    for (int i = 0; i < items; ++i) fn(i);
    return;
  }
  pool.run([&](int) {
    pool.for_chunks(items, 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) fn(int(i));
    });
  }, ThreadPool::Split::Claimed);
}

// Tokens whose attention runs as one batch per KV head: enough for the dense
// kernels' tiles of several vectors, few enough that a thread's scores stay
// within 16 MiB at long contexts.
int query_block(int G, int max_seq, int max_batch) {
  constexpr int64_t kMaxScores = int64_t(4) << 20;
  const int64_t fit = kMaxScores / (int64_t(G) * max_seq);
  return int(std::clamp<int64_t>(std::min<int64_t>(fit, 16), 1, max_batch));
}

}  // namespace

void Model::reset(int max_seq, int max_batch) {
  const Config& c = config_;
  if (max_seq == kTrainedCtx) max_seq = c.context_length;
  else if (max_seq <= 0) max_seq = std::min(c.context_length, kDefaultCtx);
  max_batch = std::max(1, std::min(max_batch, max_seq));
  RunState& s = state_;
  const uint64_t cache_bytes = uint64_t(c.n_layers) * uint64_t(c.kv_dim()) *
      (uint64_t(max_seq) * uint64_t(dense_row_bytes(s.k_type, 1)) +
       uint64_t(value_tiles(max_seq)) * kValueTile * uint64_t(dense_row_bytes(s.v_type, 1)));
  // calloc would hand out more than the machine has and the kernel would
  // kill the process mid-reply; say so up front instead.
  const uint64_t ram = uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGESIZE));
  const std::string what = "a KV cache of " + std::to_string(max_seq) + " positions (" + byte_size(cache_bytes) + ")";
  if (cache_bytes > ram)
    throw Error(what + " is more than this machine's " + byte_size(ram) + " of memory; use a smaller context (-c)");
  try {
    resize_state(max_seq, max_batch);
  } catch (const std::bad_alloc&) {
    const gguf::TensorType kt = s.k_type, vt = s.v_type;
    s = RunState{};
    s.k_type = kt;
    s.v_type = vt;
    throw Error("out of memory for " + what + " and the batch buffers; use a smaller context (-c)");
  }
}

void Model::resize_state(int max_seq, int max_batch) {
  const Config& c = config_;
  RunState& s = state_;
  // Positions are written before they are read, so buffers of the right
  // sizes need no clearing: load, the command and generate or perplexity
  // may each ask for the same sizes, and the cache is allocated once.
  const int G = c.n_heads / c.n_kv_heads, qb = query_block(G, max_seq, max_batch);
  const size_t att = size_t(pool_->size()) * size_t(qb * G) * max_seq;
  if (s.max_seq == max_seq && s.max_batch == max_batch && s.att.size() == att) return;
  s.max_seq = max_seq;
  s.max_batch = max_batch;
  s.query_block = qb;
  const size_t B = size_t(max_batch);
  // Linear inputs as the kernels read them: whole blocks (padded_cols).
  const size_t widest = size_t(std::max({padded_cols(c.dim), padded_cols(c.q_dim()),
                                         padded_cols(c.hidden_dim)}));
  const bool padded = padded_cols(c.dim) != c.dim || padded_cols(c.q_dim()) != c.q_dim() ||
                      padded_cols(c.hidden_dim) != c.hidden_dim;
  s.x.assign(B * c.dim, 0.0f);
  s.xb.assign(B * c.dim, 0.0f);
  s.xb2.assign(B * std::max(c.dim, c.q_dim()), 0.0f);
  s.q.assign(B * c.q_dim(), 0.0f);
  s.k.assign(B * c.kv_dim(), 0.0f);
  s.v.assign(B * c.kv_dim(), 0.0f);
  s.hb.assign(B * c.hidden_dim, 0.0f);
  s.hb2.assign(B * c.hidden_dim, 0.0f);
  s.rope_cs.assign(B * c.head_dim, 0.0f);
  s.att.assign(att, 0.0f);
  s.att_q.assign(size_t(pool_->size()) * size_t(qb * G) * size_t(c.head_dim), 0.0f);
  s.att_w.assign(size_t(pool_->size()) * size_t(qb * G) * size_t(kValueTile), 0.0f);
  s.att_o.assign(size_t(pool_->size()) * size_t(qb * G) * size_t(c.head_dim), 0.0f);
  // Fairy2i: each half of the input padded to whole blocks of complex columns.
  const size_t phase_widest =
      2 * size_t(std::max({phase_cols(c.dim / 2), phase_cols(c.q_dim() / 2), phase_cols(c.hidden_dim / 2)}));
  s.xpad.assign(c.phase ? B * phase_widest : padded || c.linear_norm_eps > 0 ? B * widest : 0, 0.0f);
  const size_t digits = size_t(digits_);
  s.xq.assign(B * digits * (c.phase ? phase_widest : widest), 0);
  s.xq_scale.assign(digits ? B : 0, 0.0f);
  s.xq_digits.assign(digits ? B : 0, 0);
  // Sums of the widest group of products sharing an input (linears).
  const size_t group_rows = size_t(std::max({c.q_dim() + 2 * c.kv_dim(), 2 * c.hidden_dim, c.dim}));
  s.isum.assign(B * digits * group_rows, 0);
  s.logits.assign(size_t(c.vocab_size), 0.0f);
  const size_t cache = size_t(c.n_layers) * c.kv_dim();
  s.key_cache.assign(cache * size_t(max_seq) * size_t(dense_row_bytes(s.k_type, 1)));
  s.value_cache.assign(cache * size_t(value_tiles(max_seq)) * kValueTile *
                       size_t(dense_row_bytes(s.v_type, 1)), true);
}

int Model::quantize_input(size_t i, const float* in, int64_t len, int8_t* q, int64_t stride) {
  RunState& s = state_;
  int d = 1;
  s.xq_scale[i] = digits_ == 1 ? kernels_->quantize_i8(in, len, q)
                               : quantize_act_wide(in, len, kWideRelError, q, stride, &d);
  s.xq_digits[i] = d;
  return d;
}

// Fairy2i's products: each input row split into its real half a = x[:m]
// and imaginary half b = x[m:], each padded with zeros to the matrix's
// complex columns, then the complex rows handed out as linears() does.
void Model::phase_linears(std::initializer_list<Product> ps, const float* x, int n, int in_dim) {
  RunState& s = state_;
  const size_t m = size_t(in_dim / 2), K = size_t(ps.begin()->l->phase.cols);
  for (size_t i = 0; i < size_t(n); ++i) {
    const float* in = x + i * size_t(in_dim);
    float* row = s.xpad.data() + i * 2 * K;
    std::copy(in, in + m, row);
    std::fill(row + m, row + K, 0.0f);
    std::copy(in + m, in + 2 * m, row + K);
    std::fill(row + K + m, row + 2 * K, 0.0f);
  }
  // Int8 digits of each padded row, scaled as one vector: a and b are the
  // halves of one real input.
  int64_t nq = 0;
  for (size_t i = 0; i < size_t(n) && digits_; ++i)
    nq += quantize_input(i, s.xpad.data() + i * 2 * K, int64_t(2 * K), s.xq.data() + size_t(nq) * 2 * K,
                         int64_t(2 * K));
  for_product_rows(
      *pool_, ps, [](const Product& p) { return p.l->phase.rows; },
      [&](const Product& p, int64_t, int64_t r0, int64_t r1) {
        const int64_t ldy = 2 * p.l->phase.rows;
        if (digits_)
          kernels_->phase_gemm_i8(p.l->phase, s.xq.data(), n, s.xq_digits.data(), s.xq_scale.data(), p.y, ldy,
                                  r0, r1);
        else kernels_->phase_gemm(p.l->phase, s.xpad.data(), n, p.y, ldy, r0, r1);
      });
}

// Products that share the input x[n][in_dim] (q, k and v; gate and up), in
// one parallel region: each thread takes the same share of every matrix, so
// a decode step waits at one barrier per group instead of one per matrix.
// The input is quantized once per group in int8 mode; either way the kernels
// read rows of K = padded_cols(in_dim), the padding zero.
void Model::linears(std::initializer_list<Product> ps, const float* x, int n, int in_dim, Glu glu,
                    const Prepare& prepare) {
  const Linear& l0 = *ps.begin()->l;
  const float* norm = l0.in_norm;
  // Fairy2i's products, and linears that each normalize the input with
  // their own weights (nothing to share), run one after another, the GLU
  // after them.
  if (l0.phase.data || (norm && ps.size() > 1)) {
    if (prepare) per_token(*pool_, n, prepare);
    if (l0.phase.data) phase_linears(ps, x, n, in_dim);
    else for (const Product& p : ps) linears({p}, x, n, in_dim);
    if (glu) {
      const Product &g = ps.begin()[0], &u = ps.begin()[1];
      const size_t H = l0.phase.data ? 2 * size_t(l0.phase.rows) : size_t(l0.w.rows);
      for (size_t i = 0; i < size_t(n); ++i) glu(g.y + i * H, u.y + i * H, int(H));
    }
    return;
  }
  RunState& s = state_;
  const int digits = digits_;
  const size_t K = size_t(l0.w.cols), D = size_t(in_dim);
  // The input as the kernels read it: in state_.xpad when normalized or
  // padded to whole blocks.
  const bool pad = norm || K != D;
  const float* in = x;
  const auto pad_row = [&](size_t i) {
    float* row = s.xpad.data() + i * K;
    if (norm) ops::rmsnorm(row, in + i * D, norm, in_dim, config_.linear_norm_eps);
    else std::copy(in + i * D, in + (i + 1) * D, row);
    std::fill(row + D, row + K, 0.0f);
  };
  const size_t stride = pad ? K : D;  // of x
  if (pad) x = s.xpad.data();
  // Token i's int8 vectors, one after another in xq: its int8 input, or
  // its int16 input's digits, most significant first (24 bits, 3 digits,
  // when 16 would be off by more than kWideRelError).
  const auto quantize_row = [&](size_t i, int64_t at) {  // at: token i's first vector
    int8_t* q = s.xq.data() + size_t(at) * K;
    const int d = quantize_input(i, x + i * stride, in_dim, q, int64_t(K));
    for (int j = 0; j < d; ++j) std::fill(q + j * K + D, q + (j + 1) * K, int8_t(0));
    return d;
  };
  int64_t nq = 0;  // int8 vectors in the product
  if (digits <= 1) {  // one vector or none per token: tokens independent
    per_token(*pool_, n, [&](int i) {
      if (prepare) prepare(i);
      if (pad) pad_row(size_t(i));
      if (digits) quantize_row(size_t(i), i);
    });
    nq = digits ? n : 0;
  } else {  // a token's vectors start after the previous token's
    if (prepare) per_token(*pool_, n, prepare);
    for (size_t i = 0; i < size_t(n); ++i) {
      if (pad) pad_row(i);
      nq += quantize_row(i, nq);
    }
  }
  const auto product = [&](const Product& p, int64_t first, int64_t r0, int64_t r1) {
    const TernaryMatrix& w = p.l->w;
    const KernelSet& ks = *p.l->kernels;  // --kernel auto: the set timed fastest on w's shape
    const int64_t M = w.rows;
    if (!digits) {
      ks.gemm_f32(w, x, n, p.y, r0, r1);
      return;
    }
    int32_t* sums = s.isum.data() + size_t(nq * first);  // [nq][M] per product, one after another
    ks.gemm_i8(w, s.xq.data(), nq, sums, r0, r1);
    const int32_t* t = sums;  // token i's first vector's sums
    for (int i = 0; i < n; ++i) {
      const float inv = 1.0f / s.xq_scale[size_t(i)];
      float* y = p.y + size_t(i) * size_t(M);
      const int d = s.xq_digits[size_t(i)];
      if (d == 1) {
        for (int64_t r = r0; r < r1; ++r) y[r] = float(t[r]) * (w.row_scale[r] * inv);
      } else {
        // The digits' sums recombine exactly in int64 (up to 8290687 * K).
        for (int64_t r = r0; r < r1; ++r) {
          int64_t v = 0;
          for (int j = 0; j < d; ++j) v = 255 * v + t[j * M + r];
          y[r] = float(v) * (w.row_scale[r] * inv);
        }
      }
      t += d * M;
    }
  };
  if (!glu) {
    for_product_rows(*pool_, ps, [](const Product& p) { return p.l->w.rows; }, product);
    return;
  }
  // The same rows of gate and up, then the GLU on them for every token: its
  // expf per hidden value runs on every thread, with no region of its own.
  const Product &g = ps.begin()[0], &u = ps.begin()[1];
  const int64_t H = g.l->w.rows;
  pool_->run([&](int) {
    pool_->for_chunks(H, row_chunk(2 * H, pool_->size()), [&](int64_t r0, int64_t r1) {
      product(g, 0, r0, r1);
      product(u, H, r0, r1);
      for (size_t i = 0; i < size_t(n); ++i)
        glu(g.y + i * size_t(H) + size_t(r0), u.y + i * size_t(H) + size_t(r0), int(r1 - r0));
    });
  }, ThreadPool::Split::Claimed);
}

std::span<const float> Model::forward(std::span<const int32_t> tokens, int pos, bool all_logits) {
  const Config& c = config_;
  if (tokens.empty()) throw Error("forward: no tokens");
  if (pos < 0 || size_t(pos) + tokens.size() > size_t(state_.max_seq))
    throw Error("context of " + std::to_string(state_.max_seq) + " tokens exceeded (" +
                std::to_string(size_t(pos) + tokens.size()) + " needed)");
  for (int32_t t : tokens)
    if (t < 0 || t >= c.vocab_size)
      throw Error("token id " + std::to_string(t) + " outside the vocabulary of " +
                  std::to_string(c.vocab_size));
  if (head_in_file_ && head_checked_) move_head();
  const size_t V = size_t(c.vocab_size), n = tokens.size(), B = size_t(state_.max_batch);
  const size_t rows = all_logits ? n : 1;
  if (state_.logits.size() < rows * V) state_.logits.resize(rows * V);
  for (size_t done = 0; done < n; done += B) {
    const size_t m = std::min(n - done, B);
    const bool last = done + m == n;
    // Without all_logits only the final token's row is computed, into row 0.
    float* out = all_logits ? state_.logits.data() + done * V : last ? state_.logits.data() : nullptr;
    forward_batch(tokens.data() + done, int(m), pos + int(done), out, !all_logits);
  }
  return {state_.logits.data(), rows * V};
}

void Model::forward_batch(const int32_t* tokens, int n, int pos, float* logits, bool last_only) {
  const Config& c = config_;
  const Weights& w = weights_;
  RunState& s = state_;
  const int D = c.dim, QD = c.q_dim(), KV = c.kv_dim(), H = c.hidden_dim;

  for (int i = 0; i < n; ++i) embed(tokens[i], s.x.data() + size_t(i) * D);

  const int HD = c.head_dim;
  for (int i = 0; i < n; ++i)
    ops::rope_angles(s.rope_cs.data() + size_t(i) * HD, HD, pos + i, c.rope_theta);
  const auto rope = c.rope == RopeStyle::Pairs ? ops::rope : ops::rope_halves;
  const int NKV = c.n_kv_heads, G = c.n_heads / c.n_kv_heads;
  const size_t S = size_t(s.max_seq), ek = size_t(dense_row_bytes(s.k_type, 1)),
               ev = size_t(dense_row_bytes(s.v_type, 1));
  const size_t value_tile_bytes = size_t(c.n_layers) * NKV * HD * kValueTile * ev;  // one tile of every layer
  const float scale = 1.0f / std::sqrt(float(HD));
  // Token i's sublayer output (o or down, in xb) into the residual stream x.
  const auto add_residual = [&](int i) {
    float* r = s.x.data() + size_t(i) * D;
    const float* o = s.xb.data() + size_t(i) * D;
    for (int j = 0; j < D; ++j) r[j] += o[j];
  };
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = w.layers[size_t(l)];
    uint8_t* kc = s.key_cache.data() + size_t(l) * NKV * S * HD * ek;    // [NKV][S][HD]
    uint8_t* vc = s.value_cache.data() + size_t(l) * NKV * HD * kValueTile * ev;  // tile 0: [NKV][HD][kValueTile]
    // Where position p of value dimension j = g * HD + d is.
    const auto value_at = [&](int j, int p) {
      const size_t g = size_t(j / HD), d = size_t(j % HD), tile = size_t(p / kValueTile);
      return vc + tile * value_tile_bytes + ((g * HD + d) * kValueTile + size_t(p % kValueTile)) * ev;
    };

    linears({{&L.wq, s.q.data()}, {&L.wk, s.k.data()}, {&L.wv, s.v.data()}}, s.xb.data(), n, D, nullptr,
            [&](int i) {
              ops::rmsnorm(s.xb.data() + size_t(i) * D, s.x.data() + size_t(i) * D, L.attn_norm, D,
                           c.norm_eps);
            });
    const int QB = s.query_block, blocks = (n + QB - 1) / QB;
    // Token i's RoPE of the query heads of KV head g, and of g's key, which
    // it stores with g's value.
    const auto rope_store_head = [&](int i, int g) {
      const float* cs = s.rope_cs.data() + size_t(i) * HD;
      rope(s.q.data() + size_t(i) * QD + size_t(g) * G * HD, G, HD, cs);
      float* k = s.k.data() + size_t(i) * KV + size_t(g) * HD;
      rope(k, 1, HD, cs);
      store(s.k_type, kc + (size_t(g) * S + size_t(pos + i)) * HD * ek, ek, k, 1, HD);
    };
    // Rows [j0, j1) of the transposed value cache (j = g * HD + d): the
    // batch's n new positions of each, a run per tile they fall in.
    const auto store_values = [&](int j0, int j1) {
      for (int j = j0; j < j1; ++j)
        for (int i = 0; i < n;) {
          const int run = std::min(n - i, kValueTile - (pos + i) % kValueTile);
          store(s.v_type, value_at(j, pos + i), ev, s.v.data() + size_t(i) * KV + j, size_t(KV), run);
          i += run;
        }
    };
    // With one block (decode, short batches) each attention item below
    // RoPEs and stores its own KV head first: the value cache's transposed
    // stores, one cache miss per value, then run on every thread instead of
    // on the caller while the others wait. Longer batches do it in a pass
    // of its own: items [0, n) are token i's RoPE and keys, items past n 16
    // rows (j = g * HD + d) of the value cache, so each row's new positions
    // are written by one thread, together, and the 16 columns of the
    // batch's values they read share cache lines.
    const bool store_in_items = blocks == 1;
    constexpr int kVRows = 16;
    if (!store_in_items)
      per_token(*pool_, n, [&](int i) {
        if (i < n) {
          for (int g = 0; g < NKV; ++g) rope_store_head(i, g);
          return;
        }
        store_values((i - n) * kVRows, std::min(KV, (i - n + 1) * kVRows));
      }, n + (KV + kVRows - 1) / kVRows);
    // One item per (block of up to query_block tokens, KV head): the
    // block's G query heads per token read the keys and values once, as one
    // batch of vectors, over the positions its last token sees. Each token's
    // scores are cut to its own positions before the softmax and its
    // weights past them are zero, so it gets the products it would alone.
    pool_->run([&](int t) {
      float* sc = s.att.data() + size_t(t) * QB * G * S;       // [QB * G][n_max] scores, then weights
      float* qo = s.att_q.data() + size_t(t) * QB * G * HD;    // [QB * G][HD] queries, then outputs
      pool_->for_chunks(int64_t(blocks) * NKV, 1, [&](int64_t item, int64_t) {
        const int i0 = int(item / NKV) * QB, g = int(item % NKV), b = std::min(QB, n - i0),
                  n_max = pos + i0 + b;
        if (store_in_items) {
          for (int i = 0; i < n; ++i) rope_store_head(i, g);
          store_values(g * HD, (g + 1) * HD);
        }
        for (int i = 0; i < b; ++i)
          std::copy_n(s.q.data() + size_t(i0 + i) * QD + size_t(g) * G * HD, size_t(G) * HD,
                      qo + size_t(i) * G * HD);
        DenseMatrix keys;
        keys.type = s.k_type;
        keys.rows = n_max;
        keys.cols = HD;
        keys.data = kc + size_t(g) * S * HD * ek;
        kernels_->dense_gemm(keys, qo, int64_t(b) * G, sc, n_max, 0, n_max);
        for (int i = 0; i < b; ++i)
          for (int j = 0; j < G; ++j) {
            float* row = sc + size_t(i * G + j) * n_max;
            const int n_pos = pos + i0 + i + 1;
            for (int u = 0; u < n_pos; ++u) row[u] *= scale;
            ops::softmax(row, n_pos);
            std::fill(row + n_pos, row + n_max, 0.0f);
          }
        // out = V^T p one tile at a time: the tile's share of each weight
        // row into wt (the rows themselves when one tile holds them all),
        // its products into qo (the first) or ot, added.
        float* wt = s.att_w.data() + size_t(t) * QB * G * kValueTile;  // [b * G][width]
        float* ot = s.att_o.data() + size_t(t) * QB * G * HD;          // [b * G][HD]
        const int rows_bg = b * G;
        for (int tile = 0; tile * kValueTile < n_max; ++tile) {
          const int p0 = tile * kValueTile, width = std::min(kValueTile, n_max - p0);
          const float* x = sc;
          if (width < n_max) {
            for (int r = 0; r < rows_bg; ++r)
              std::copy_n(sc + size_t(r) * n_max + p0, width, wt + size_t(r) * width);
            x = wt;
          }
          DenseMatrix values;  // row d: dimension d of the tile's positions
          values.type = s.v_type;
          values.rows = HD;
          values.cols = width;
          values.data = value_at(g * HD, p0);
          values.row_stride = int64_t(kValueTile * ev);
          float* dst = tile == 0 ? qo : ot;
          kernels_->dense_gemm(values, x, rows_bg, dst, HD, 0, HD);
          if (tile > 0)
            for (size_t e = 0; e < size_t(rows_bg) * HD; ++e) qo[e] += ot[e];
        }
        for (int i = 0; i < b; ++i)
          std::copy_n(qo + size_t(i) * G * HD, size_t(G) * HD,
                      s.xb2.data() + size_t(i0 + i) * QD + size_t(g) * G * HD);
      });
    }, ThreadPool::Split::Claimed);
    linears({{&L.wo, s.xb.data()}}, s.xb2.data(), n, QD, nullptr, [&](int i) {
      float* a = s.xb2.data() + size_t(i) * QD;
      if (L.attn_sub_norm) ops::rmsnorm(a, a, L.attn_sub_norm, QD, c.norm_eps);
    });
    linears({{&L.w_gate, s.hb.data()}, {&L.w_up, s.hb2.data()}}, s.xb.data(), n, D,
            c.ffn_act == FfnAct::SiLU ? kernels_->glu_silu : kernels_->glu_relu2, [&](int i) {
              add_residual(i);  // the attention's, then the FFN's input
              ops::rmsnorm(s.xb.data() + size_t(i) * D, s.x.data() + size_t(i) * D, L.ffn_norm, D,
                           c.norm_eps);
            });
    linears({{&L.w_down, s.xb.data()}}, s.hb.data(), n, H, nullptr, [&](int i) {
      float* h = s.hb.data() + size_t(i) * H;
      if (L.ffn_sub_norm) ops::rmsnorm(h, h, L.ffn_sub_norm, H, c.norm_eps);
    });
    per_token(*pool_, n, add_residual);
  }

  if (!logits) return;
  const int first = last_only ? n - 1 : 0;
  for (int i = first; i < n; ++i)
    ops::rmsnorm(s.xb.data() + size_t(i) * D, s.x.data() + size_t(i) * D, w.output_norm, D,
                 c.norm_eps);
  const int64_t V = c.vocab_size;
  if (c.phase) return linears({{&w.output_phase, logits}}, s.xb.data() + size_t(first) * D, n - first, D);
  // The head is read once per call, each chunk of rows streamed once
  // against every token of the batch.
  pool_->run([&](int) {
    pool_->for_chunks(V, row_chunk(V, pool_->size()), [&](int64_t r0, int64_t r1) {
      kernels_->dense_gemm(w.output, s.xb.data() + size_t(first) * D, n - first, logits, V, r0, r1);
    });
  }, ThreadPool::Split::Claimed);
  if (!head_checked_) check_head(logits);  // one token's logits cover every row
}

}  // namespace tern
