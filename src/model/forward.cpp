// One forward step of a context over a batch of tokens of one or more
// sequences. Ternary linears go through the kernel set as GEMV (one token)
// or GEMM (a batch), every token of the batch in one product; attention runs
// per sequence over its own pages of the KV cache. Rows are handed to the
// context's threads (ThreadPool) here in chunks, so kernels stay
// single-threaded.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>

#include "context_state.h"
#include "model_access.h"
#include "tern/error.h"
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

// Rows per claimed chunk of a product over n tokens. A decode step's chunk
// is a few tens of microseconds, and each one costs a claim and a cold
// prefetch stream: row_chunk's 4 per thread. A prompt's chunk is
// milliseconds of compute, and the region ends when the last one does: at
// 4 per thread (2 for gate and up, claimed as pairs) a thread the host
// slowed left the other idle for up to a quarter of the region, so prompts
// take 16 per thread, in whole blocks of 32 rows: the widest row tile of
// the prompt kernels (the AVX-512 group tile; AMX takes 16).
constexpr int kTokensForRegion = 16;
int64_t product_chunk(int64_t rows, int threads, int n) {
  if (n < kTokensForRegion) return row_chunk(rows, threads);
  return (row_chunk(rows, threads, 16) + 31) / 32 * 32;
}

// The products' rows one after another, in chunks claimed by the pool's
// threads (a thread whose core is shared with another process takes
// fewer): fn(product, first, r0, r1) for each product's rows [r0, r1) in a
// chunk, `first` the product's first row in the concatenation.
template <class Products, class Rows, class Fn>
void for_product_rows(ThreadPool& pool, int n, const Products& ps, Rows rows, Fn fn) {
  int64_t total = 0;
  for (const auto& p : ps) total += rows(p);
  const int64_t chunk = product_chunk(total, pool.size(), n);
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

// One ternary product y[n][rows] = W x[n][cols].
struct Product {
  const Linear* l;
  float* y;
};
// glu: ps is {gate, up} of equal rows, and the result is glu(gate, up) in
// gate's y, applied to each chunk of rows inside the products' region.
using GluFn = void (*)(float* gate, const float* up, int n);
// prepare(i), if set, first writes token i's row of x (its norm), in the
// same region as the input's quantization.
using Prepare = std::function<void(int i)>;

// A step's work, on the context's buffers: the batch's n tokens, the runs
// of its sequences.
class Step {
 public:
  Step(Context::State& cs, const BatchToken* batch, int n, std::span<const SeqRun> runs)
      : m_(cs.model), c_(cs.model.config()), w_(cs.model.weights()), s_(cs.run), kv_(cs.kv), pool_(*cs.pool),
        ks_(cs.model.kernels()), digits_(cs.model.act_digits()), batch_(batch), n_(n), runs_(runs) {}

  void run(float* logits);

 private:
  void attention(int l);
  void ffn(int l);
  void head(float* logits);
  void linears(std::initializer_list<Product> ps, const float* x, int n, int in_dim, GluFn glu = nullptr,
               const Prepare& prepare = {});
  void phase_linears(std::initializer_list<Product> ps, const float* x, int n, int in_dim);
  int quantize_input(size_t i, const float* in, int64_t len, int8_t* q, int64_t stride);
  // Token i's RoPE of the query heads of KV head g, and of g's key, which
  // it stores in layer l's cache.
  void rope_store_head(int l, int i, int g);
  // Rows [j0, j1) of layer l's transposed value cache (j = g * HD + d): the
  // run's new positions of each, a stretch per page they fall in.
  void store_values(int l, const SeqRun& r, int j0, int j1);
  // Tokens [i0, i0 + b) of run r against KV head g of layer l, on thread
  // t's scratch: their G query heads read the keys and values once, as one
  // batch of vectors, over the positions the last of them sees.
  void attend(int l, const SeqRun& r, int i0, int b, int g, int t);

  const Model& m_;
  const Config& c_;
  const Weights& w_;
  RunState& s_;
  KvCache& kv_;
  ThreadPool& pool_;
  const KernelSet& ks_;
  const int digits_;
  const BatchToken* batch_;
  const int n_;
  std::span<const SeqRun> runs_;
};

int Step::quantize_input(size_t i, const float* in, int64_t len, int8_t* q, int64_t stride) {
  int d = 1;
  s_.xq_scale[i] = digits_ == 1 ? ks_.quantize_i8(in, len, q) : quantize_act_wide(in, len, kWideRelError, q, stride, &d);
  s_.xq_digits[i] = d;
  return d;
}

// Fairy2i's products: each input row split into its real half a = x[:m]
// and imaginary half b = x[m:], each padded with zeros to the matrix's
// complex columns, then the complex rows handed out as linears() does.
void Step::phase_linears(std::initializer_list<Product> ps, const float* x, int n, int in_dim) {
  const size_t m = size_t(in_dim / 2), K = size_t(ps.begin()->l->phase.cols);
  for (size_t i = 0; i < size_t(n); ++i) {
    const float* in = x + i * size_t(in_dim);
    float* row = s_.xpad.data() + i * 2 * K;
    std::copy(in, in + m, row);
    std::fill(row + m, row + K, 0.0f);
    std::copy(in + m, in + 2 * m, row + K);
    std::fill(row + K + m, row + 2 * K, 0.0f);
  }
  // Int8 digits of each padded row, scaled as one vector: a and b are the
  // halves of one real input.
  int64_t nq = 0;
  for (size_t i = 0; i < size_t(n) && digits_; ++i)
    nq += quantize_input(i, s_.xpad.data() + i * 2 * K, int64_t(2 * K), s_.xq.data() + size_t(nq) * 2 * K,
                         int64_t(2 * K));
  for_product_rows(
      pool_, n, ps, [](const Product& p) { return p.l->phase.rows; },
      [&](const Product& p, int64_t, int64_t r0, int64_t r1) {
        const int64_t ldy = 2 * p.l->phase.rows;
        if (digits_)
          ks_.phase_gemm_i8(p.l->phase, s_.xq.data(), n, s_.xq_digits.data(), s_.xq_scale.data(), p.y, ldy, r0, r1);
        else ks_.phase_gemm(p.l->phase, s_.xpad.data(), n, p.y, ldy, r0, r1);
      });
}

// Products that share the input x[n][in_dim] (q, k and v; gate and up), in
// one parallel region: each thread takes the same share of every matrix, so
// a decode step waits at one barrier per group instead of one per matrix.
// The input is quantized once per group in int8 mode; either way the kernels
// read rows of K = padded_cols(in_dim), the padding zero.
void Step::linears(std::initializer_list<Product> ps, const float* x, int n, int in_dim, GluFn glu,
                   const Prepare& prepare) {
  const Linear& l0 = *ps.begin()->l;
  const float* norm = l0.in_norm;
  // Fairy2i's products, and linears that each normalize the input with
  // their own weights (nothing to share), run one after another, the GLU
  // after them.
  if (l0.phase.data || (norm && ps.size() > 1)) {
    if (prepare) per_token(pool_, n, prepare);
    if (l0.phase.data) phase_linears(ps, x, n, in_dim);
    else for (const Product& p : ps) linears({p}, x, n, in_dim);
    if (glu) {
      const Product &g = ps.begin()[0], &u = ps.begin()[1];
      const size_t H = l0.phase.data ? 2 * size_t(l0.phase.rows) : size_t(l0.rows());
      for (size_t i = 0; i < size_t(n); ++i) glu(g.y + i * H, u.y + i * H, int(H));
    }
    return;
  }
  RunState& s = s_;
  const int digits = digits_;
  const size_t K = size_t(l0.cols()), D = size_t(in_dim);
  // The input as the kernels read it: in xpad when normalized or padded to
  // whole blocks.
  const bool pad = norm || K != D;
  const float* in = x;
  const auto pad_row = [&](size_t i) {
    float* row = s.xpad.data() + i * K;
    if (norm) ops::rmsnorm(row, in + i * D, norm, in_dim, c_.linear_norm_eps);
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
    per_token(pool_, n, [&](int i) {
      if (prepare) prepare(i);
      if (pad) pad_row(size_t(i));
      if (digits) quantize_row(size_t(i), i);
    });
    nq = digits ? n : 0;
  } else {  // a token's vectors start after the previous token's
    if (prepare) per_token(pool_, n, prepare);
    for (size_t i = 0; i < size_t(n); ++i) {
      if (pad) pad_row(i);
      nq += quantize_row(i, nq);
    }
  }
  const auto product = [&](const Product& p, int64_t first, int64_t r0, int64_t r1) {
    const TernaryMatrix& w = p.l->w;
    const KernelSet& ks = *p.l->kernels;  // --kernel auto: the set timed fastest on w's shape
    const int64_t M = p.l->rows();
    if (const GroupMatrix& g = p.l->group; g.data) {  // group scales: the kernel applies them
      if (digits) group_gemm_i8_of(ks)(g, s.xq.data(), n, s.xq_digits.data(), s.xq_scale.data(), p.y, M, r0, r1);
      else group_gemm_f32_of(ks)(g, x, n, p.y, M, r0, r1);
      return;
    }
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
    for_product_rows(pool_, n, ps, [](const Product& p) { return p.l->rows(); }, product);
    return;
  }
  // The same rows of gate and up, then the GLU on them for every token: its
  // expf per hidden value runs on every thread, with no region of its own.
  const Product &g = ps.begin()[0], &u = ps.begin()[1];
  const int64_t H = g.l->rows();
  pool_.run([&](int) {
    pool_.for_chunks(H, product_chunk(2 * H, pool_.size(), n), [&](int64_t r0, int64_t r1) {
      product(g, 0, r0, r1);
      product(u, H, r0, r1);
      for (size_t i = 0; i < size_t(n); ++i)
        glu(g.y + i * size_t(H) + size_t(r0), u.y + i * size_t(H) + size_t(r0), int(r1 - r0));
    });
  }, ThreadPool::Split::Claimed);
}

void Step::rope_store_head(int l, int i, int g) {
  const int HD = c_.head_dim, G = c_.n_heads / c_.n_kv_heads;
  const auto rope = c_.rope == RopeStyle::Pairs ? ops::rope : ops::rope_halves;
  const float* cs = s_.rope_cs.data() + size_t(i) * HD;
  float* q = s_.q.data() + size_t(i) * c_.q_dim() + size_t(g) * G * HD;  // [G][HD]
  float* k = s_.k.data() + size_t(i) * c_.kv_dim() + size_t(g) * HD;     // [HD]
  const LayerWeights& L = w_.layers[size_t(l)];
  if (L.attn_q_norm) {  // Qwen3: each head normalized on its own, before RoPE
    for (int h = 0; h < G; ++h) ops::rmsnorm(q + size_t(h) * HD, q + size_t(h) * HD, L.attn_q_norm, HD, c_.norm_eps);
    ops::rmsnorm(k, k, L.attn_k_norm, HD, c_.norm_eps);
  }
  rope(q, G, HD, cs);
  rope(k, 1, HD, cs);
  const BatchToken& b = batch_[i];
  const size_t ek = kv_.key_bytes();
  store(kv_.k_type(), kv_.keys(b.seq, b.pos / kKvPage, l, g) + size_t(b.pos % kKvPage) * HD * ek, ek, k, 1, HD);
}

void Step::store_values(int l, const SeqRun& r, int j0, int j1) {
  const int HD = c_.head_dim, KV = c_.kv_dim();
  const size_t ev = kv_.value_bytes();
  for (int j = j0; j < j1; ++j)
    for (int i = 0; i < r.n;) {
      const int p = r.pos + i, stretch = std::min(r.n - i, kKvPage - p % kKvPage);
      uint8_t* dst = kv_.values(r.seq, p / kKvPage, l, j / HD) + (size_t(j % HD) * kKvPage + size_t(p % kKvPage)) * ev;
      store(kv_.v_type(), dst, ev, s_.v.data() + size_t(r.first + i) * KV + j, size_t(KV), stretch);
      i += stretch;
    }
}

// Each token's scores are cut to its own positions before the softmax and
// its weights past them are zero, so it gets the products it would alone.
void Step::attend(int l, const SeqRun& r, int i0, int b, int g, int t) {
  const int HD = c_.head_dim, G = c_.n_heads / c_.n_kv_heads, QD = c_.q_dim(), QB = s_.query_block;
  const int n_max = r.pos + i0 + b;
  const float scale = 1.0f / std::sqrt(float(HD));
  float* sc = s_.att.data() + size_t(t) * QB * G * s_.max_len;  // [b * G][n_max] scores, then weights
  float* qo = s_.att_q.data() + size_t(t) * QB * G * HD;        // [b * G][HD] queries, then outputs
  for (int i = 0; i < b; ++i)
    std::copy_n(s_.q.data() + size_t(r.first + i0 + i) * QD + size_t(g) * G * HD, size_t(G) * HD,
                qo + size_t(i) * G * HD);
  const int rows_bg = b * G;
  for (int page = 0; page * kKvPage < n_max; ++page) {  // scores = K q, a page of keys at a time
    DenseMatrix keys;
    keys.type = kv_.k_type();
    keys.rows = std::min(kKvPage, n_max - page * kKvPage);
    keys.cols = HD;
    keys.data = kv_.keys(r.seq, page, l, g);
    ks_.dense_gemm(keys, qo, rows_bg, sc + size_t(page) * kKvPage, n_max, 0, keys.rows);
  }
  for (int i = 0; i < b; ++i)
    for (int j = 0; j < G; ++j) {
      float* row = sc + size_t(i * G + j) * n_max;
      const int n_pos = r.pos + i0 + i + 1;
      for (int u = 0; u < n_pos; ++u) row[u] *= scale;
      ops::softmax(row, n_pos);
      std::fill(row + n_pos, row + n_max, 0.0f);
    }
  // out = V^T p one page at a time: the page's share of each weight row
  // into wt (the rows themselves when one page holds them all), its
  // products into qo (the first) or ot, added.
  float* wt = s_.att_w.data() + size_t(t) * QB * G * kKvPage;  // [b * G][width]
  float* ot = s_.att_o.data() + size_t(t) * QB * G * HD;       // [b * G][HD]
  for (int page = 0; page * kKvPage < n_max; ++page) {
    const int p0 = page * kKvPage, width = std::min(kKvPage, n_max - p0);
    const float* x = sc;
    if (width < n_max) {
      for (int q = 0; q < rows_bg; ++q) std::copy_n(sc + size_t(q) * n_max + p0, width, wt + size_t(q) * width);
      x = wt;
    }
    DenseMatrix values;  // row d: dimension d of the page's positions
    values.type = kv_.v_type();
    values.rows = HD;
    values.cols = width;
    values.data = kv_.values(r.seq, page, l, g);
    values.row_stride = int64_t(kKvPage * kv_.value_bytes());
    float* dst = page == 0 ? qo : ot;
    ks_.dense_gemm(values, x, rows_bg, dst, HD, 0, HD);
    if (page > 0)
      for (size_t e = 0; e < size_t(rows_bg) * HD; ++e) qo[e] += ot[e];
  }
  for (int i = 0; i < b; ++i)
    std::copy_n(qo + size_t(i) * G * HD, size_t(G) * HD, s_.xb2.data() + size_t(r.first + i0 + i) * QD + size_t(g) * G * HD);
}

// q, k and v of every token, their RoPE and stores, then attention per
// (block of up to query_block tokens of one sequence, KV head) into xb2.
void Step::attention(int l) {
  const LayerWeights& L = w_.layers[size_t(l)];
  const int D = c_.dim, NKV = c_.n_kv_heads, HD = c_.head_dim, KV = c_.kv_dim(), QB = s_.query_block;
  linears({{&L.wq, s_.q.data()}, {&L.wk, s_.k.data()}, {&L.wv, s_.v.data()}}, s_.xb.data(), n_, D, nullptr,
          [&](int i) {
            ops::rmsnorm(s_.xb.data() + size_t(i) * D, s_.x.data() + size_t(i) * D, L.attn_norm, D, c_.norm_eps);
          });
  std::vector<std::pair<int, int>> blocks;  // (run, first token in the run)
  for (size_t r = 0; r < runs_.size(); ++r)
    for (int i0 = 0; i0 < runs_[r].n; i0 += QB) blocks.push_back({int(r), i0});
  // When every run is one block (decode, short batches) each attention item
  // below RoPEs and stores its own KV head first: the value cache's
  // transposed stores, one cache miss per value, then run on every thread
  // instead of on the caller while the others wait. Otherwise they come in
  // a pass of their own: items [0, n) are token i's RoPE and keys, items
  // past n 16 rows (j = g * HD + d) of the value cache, so each row's new
  // positions are written by one thread, together, and the 16 columns of
  // the batch's values they read share cache lines.
  const bool store_in_items = blocks.size() == runs_.size();
  constexpr int kVRows = 16;
  if (!store_in_items)
    per_token(pool_, n_, [&](int i) {
      if (i < n_) {
        for (int g = 0; g < NKV; ++g) rope_store_head(l, i, g);
        return;
      }
      const int j0 = (i - n_) * kVRows, j1 = std::min(KV, j0 + kVRows);
      for (const SeqRun& r : runs_) store_values(l, r, j0, j1);
    }, n_ + (KV + kVRows - 1) / kVRows);
  pool_.run([&](int t) {
    pool_.for_chunks(int64_t(blocks.size()) * NKV, 1, [&](int64_t item, int64_t) {
      const auto [ri, i0] = blocks[size_t(item / NKV)];
      const int g = int(item % NKV);
      const SeqRun& r = runs_[size_t(ri)];
      if (store_in_items) {
        for (int i = 0; i < r.n; ++i) rope_store_head(l, r.first + i, g);
        store_values(l, r, g * HD, (g + 1) * HD);
      }
      attend(l, r, i0, std::min(QB, r.n - i0), g, t);
    });
  }, ThreadPool::Split::Claimed);
}

void Step::ffn(int l) {
  const LayerWeights& L = w_.layers[size_t(l)];
  const int D = c_.dim, QD = c_.q_dim(), H = c_.hidden_dim;
  // Token i's sublayer output (o or down, in xb) into the residual stream x.
  const auto add_residual = [&](int i) {
    float* r = s_.x.data() + size_t(i) * D;
    const float* o = s_.xb.data() + size_t(i) * D;
    for (int j = 0; j < D; ++j) r[j] += o[j];
  };
  linears({{&L.wo, s_.xb.data()}}, s_.xb2.data(), n_, QD, nullptr, [&](int i) {
    float* a = s_.xb2.data() + size_t(i) * QD;
    if (L.attn_sub_norm) ops::rmsnorm(a, a, L.attn_sub_norm, QD, c_.norm_eps);
  });
  linears({{&L.w_gate, s_.hb.data()}, {&L.w_up, s_.hb2.data()}}, s_.xb.data(), n_, D,
          c_.ffn_act == FfnAct::SiLU ? ks_.glu_silu : ks_.glu_relu2, [&](int i) {
            add_residual(i);  // the attention's, then the FFN's input
            ops::rmsnorm(s_.xb.data() + size_t(i) * D, s_.x.data() + size_t(i) * D, L.ffn_norm, D, c_.norm_eps);
          });
  linears({{&L.w_down, s_.xb.data()}}, s_.hb.data(), n_, H, nullptr, [&](int i) {
    float* h = s_.hb.data() + size_t(i) * H;
    if (L.ffn_sub_norm) ops::rmsnorm(h, h, L.ffn_sub_norm, H, c_.norm_eps);
  });
  per_token(pool_, n_, add_residual);
}

// The tokens that ask for logits, normed into xb one after another, and the
// head over them: read once per step, each chunk of rows streamed once
// against every one of them.
void Step::head(float* logits) {
  const int D = c_.dim;
  int m = 0;
  for (int i = 0; i < n_; ++i)
    if (batch_[i].logits)
      ops::rmsnorm(s_.xb.data() + size_t(m++) * D, s_.x.data() + size_t(i) * D, w_.output_norm, D, c_.norm_eps);
  if (m == 0) return;
  if (c_.phase) return linears({{&w_.output_phase, logits}}, s_.xb.data(), m, D);
  if (w_.output_group.group.data) return linears({{&w_.output_group, logits}}, s_.xb.data(), m, D);
  const FloatMatrix h = m_.head();
  const int64_t V = c_.vocab_size;
  pool_.run([&](int) {
    pool_.for_chunks(V, product_chunk(V, pool_.size(), m), [&](int64_t r0, int64_t r1) {
      ks_.dense_gemm(h, s_.xb.data(), m, logits, V, r0, r1);
    });
  }, ThreadPool::Split::Claimed);
  ModelAccess::after_head_product(m_, logits);  // one token's logits cover every row
}

void Step::run(float* logits) {
  const int D = c_.dim, HD = c_.head_dim;
  for (int i = 0; i < n_; ++i) {
    ModelAccess::embed(m_, batch_[i].token, s_.x.data() + size_t(i) * D);
    ops::rope_angles(s_.rope_cs.data() + size_t(i) * HD, batch_[i].pos, c_.rope_table);
  }
  for (int l = 0; l < c_.n_layers; ++l) {
    attention(l);
    ffn(l);
  }
  if (logits) head(logits);
}

}  // namespace

void Context::State::forward_step(const BatchToken* batch, int n, std::span<const SeqRun> runs, float* logits) {
  Step(*this, batch, n, runs).run(logits);
}

}  // namespace tern
