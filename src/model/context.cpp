// A Context: sizing its buffers and KV cache, its sequences, and a batch's
// checks before the forward pass (forward.cpp) runs it in steps.
#include "tern/context.h"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "context_state.h"
#include "model_access.h"
#include "tern/error.h"
#include "tern/input_file.h"
#include "tern/phase.h"
#include "tern/quant.h"

namespace tern {
namespace {

// Tokens whose attention runs as one batch per KV head: enough for the dense
// kernels' tiles of several vectors, few enough that a thread's scores stay
// within 16 MiB at long contexts.
int query_block(int G, int max_len, int max_batch) {
  constexpr int64_t kMaxScores = int64_t(4) << 20;
  const int64_t fit = kMaxScores / (int64_t(G) * max_len);
  return int(std::clamp<int64_t>(std::min<int64_t>(fit, 16), 1, max_batch));
}

void size_run_state(RunState& s, const Model& m, int threads, int max_len, int max_batch) {
  const Config& c = m.config();
  const int G = c.n_heads / c.n_kv_heads;
  s.max_len = max_len;
  s.max_batch = max_batch;
  s.query_block = query_block(G, max_len, max_batch);
  const size_t B = size_t(max_batch), T = size_t(threads), QG = size_t(s.query_block * G);
  // Linear inputs as the kernels read them: whole blocks (padded_cols).
  const size_t widest = size_t(std::max({padded_cols(c.dim), padded_cols(c.q_dim()), padded_cols(c.hidden_dim)}));
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
  s.att.assign(T * QG * size_t(max_len), 0.0f);
  s.att_q.assign(T * QG * size_t(c.head_dim), 0.0f);
  s.att_w.assign(T * QG * size_t(kKvPage), 0.0f);
  s.att_o.assign(T * QG * size_t(c.head_dim), 0.0f);
  // Fairy2i: each half of the input padded to whole blocks of complex columns.
  const size_t phase_widest =
      2 * size_t(std::max({phase_cols(c.dim / 2), phase_cols(c.q_dim() / 2), phase_cols(c.hidden_dim / 2)}));
  s.xpad.assign(c.phase ? B * phase_widest : padded || c.linear_norm_eps > 0 ? B * widest : 0, 0.0f);
  const size_t digits = size_t(m.act_digits());
  s.xq.assign(B * digits * (c.phase ? phase_widest : widest), 0);
  s.xq_scale.assign(digits ? B : 0, 0.0f);
  s.xq_digits.assign(digits ? B : 0, 0);
  // Sums of the widest group of products sharing an input (linears).
  const size_t group_rows = size_t(std::max({c.q_dim() + 2 * c.kv_dim(), 2 * c.hidden_dim, c.dim}));
  s.isum.assign(B * digits * group_rows, 0);
  s.logits.assign(size_t(c.vocab_size), 0.0f);
}

}  // namespace

int context_positions(const Config& c, int ctx) {
  return ctx == kTrainedCtx ? c.context_length : ctx <= 0 ? std::min(c.context_length, kDefaultCtx) : ctx;
}

Context::State::State(const Model& m, const ContextOptions& o) : model(m) {
  const Config& c = m.config();
  for (gguf::TensorType t : {o.cache_type_k, o.cache_type_v})
    if (t != gguf::TensorType::F32 && t != gguf::TensorType::F16 && t != gguf::TensorType::BF16)
      throw Error("KV cache type " + std::string(gguf::traits(t).name) + " is not f32, f16 or bf16");
  if (o.max_seqs < 1 || o.max_seqs > 4096)
    throw Error("sequences per context: " + std::to_string(o.max_seqs) + " is not from 1 to 4096");
  n_ctx = context_positions(c, o.ctx);
  // Whatever way n_ctx positions are split among the sequences, each one's
  // last page may be partly empty: one page more per further sequence.
  const int pages = (n_ctx + kKvPage - 1) / kKvPage + o.max_seqs - 1;
  const int max_batch = std::max(1, std::min(o.max_batch, n_ctx));
  const uint64_t cache_bytes = uint64_t(pages) * kKvPage * uint64_t(c.n_layers) * uint64_t(c.kv_dim()) *
                               uint64_t(dense_row_bytes(o.cache_type_k, 1) + dense_row_bytes(o.cache_type_v, 1));
  // calloc would hand out more than the machine has and the kernel would
  // kill the process mid-reply; say so up front instead.
  const uint64_t ram = uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGESIZE));
  const std::string what = "a KV cache of " + std::to_string(n_ctx) + " positions (" + byte_size(cache_bytes) + ")";
  if (cache_bytes > ram)
    throw Error(what + " is more than this machine's " + byte_size(ram) + " of memory; use a smaller context (-c)");
  pool = std::make_unique<ThreadPool>(o.threads);
  try {
    size_run_state(run, m, pool->size(), n_ctx, max_batch);
    kv.init(c, pages, o.max_seqs, o.cache_type_k, o.cache_type_v);
  } catch (const std::bad_alloc&) {
    throw Error("out of memory for " + what + " and the batch buffers; use a smaller context (-c)");
  }
}

Context::Context(const Model& model, const ContextOptions& o) : s_(std::make_unique<State>(model, o)) {}
Context::~Context() = default;

const Model& Context::model() const { return s_->model; }
int Context::threads() const { return s_->pool->size(); }
int Context::n_ctx() const { return s_->n_ctx; }
int Context::max_seqs() const { return s_->kv.max_seqs(); }
int Context::max_batch() const { return s_->run.max_batch; }
gguf::TensorType Context::cache_type_k() const { return s_->kv.k_type(); }
gguf::TensorType Context::cache_type_v() const { return s_->kv.v_type(); }

namespace {
void check_seq(const Context& ctx, int seq, const char* what) {
  if (seq < 0 || seq >= ctx.max_seqs())
    throw Error(std::string(what) + ": sequence " + std::to_string(seq) + " is not from 0 to " +
                std::to_string(ctx.max_seqs() - 1));
}
}  // namespace

int Context::seq_length(int seq) const {
  check_seq(*this, seq, "seq_length");
  return s_->kv.length(seq);
}

void Context::seq_truncate(int seq, int n) {
  check_seq(*this, seq, "seq_truncate");
  s_->kv.truncate(seq, n);
}

void Context::seq_share(int src, int dst) {
  check_seq(*this, src, "seq_share");
  check_seq(*this, dst, "seq_share");
  s_->kv.share(src, dst);
}

bool Context::fits(std::span<const std::pair<int, int>> seq_growth) const {
  for (auto [seq, n] : seq_growth) {
    check_seq(*this, seq, "fits");
    if (int64_t(s_->kv.length(seq)) + n > s_->n_ctx) return false;
  }
  return s_->kv.pages_needed(seq_growth) <= s_->kv.free_pages();
}

int64_t Context::kv_bytes_at(int64_t pos) const {
  const Config& c = s_->model.config();
  return int64_t(c.n_layers) * (pos + 1) * c.kv_dim() *
         int64_t(s_->kv.key_bytes() + s_->kv.value_bytes());
}

namespace {

// The batch's runs of one sequence each, checked: tokens in the
// vocabulary, each sequence in one run continuing where it stands, the
// context long enough.
std::vector<SeqRun> batch_runs(const Context& ctx, std::span<const BatchToken> batch) {
  const int V = ctx.model().config().vocab_size;
  std::vector<SeqRun> runs;
  for (size_t i = 0; i < batch.size(); ++i) {
    const BatchToken& b = batch[i];
    const std::string at = "batch entry " + std::to_string(i) + ": ";
    if (b.token < 0 || b.token >= V)
      throw Error(at + "token id " + std::to_string(b.token) + " outside the vocabulary of " + std::to_string(V));
    if (b.seq < 0 || b.seq >= ctx.max_seqs())
      throw Error(at + "sequence " + std::to_string(b.seq) + " is not from 0 to " +
                  std::to_string(ctx.max_seqs() - 1));
    if (!runs.empty() && runs.back().seq == b.seq) {
      SeqRun& r = runs.back();
      if (b.pos != r.pos + r.n)
        throw Error(at + "position " + std::to_string(b.pos) + " of sequence " + std::to_string(b.seq) +
                    " does not follow " + std::to_string(r.pos + r.n - 1));
      ++r.n;
      continue;
    }
    for (const SeqRun& r : runs)
      if (r.seq == b.seq)
        throw Error(at + "sequence " + std::to_string(b.seq) + " has entries apart in the batch; keep them together");
    const int len = ctx.seq_length(b.seq);
    if (b.pos != len)
      throw Error(at + "sequence " + std::to_string(b.seq) + " holds " + std::to_string(len) +
                  " positions, so its next is " + std::to_string(len) + ", not " + std::to_string(b.pos));
    runs.push_back({b.seq, int(i), b.pos, 1});
  }
  for (const SeqRun& r : runs)
    if (int64_t(r.pos) + r.n > ctx.n_ctx())
      throw Error("context of " + std::to_string(ctx.n_ctx()) + " tokens exceeded (" +
                  std::to_string(int64_t(r.pos) + r.n) + " needed)");
  return runs;
}

}  // namespace

std::span<const float> Context::decode(std::span<const BatchToken> batch) {
  if (batch.empty()) throw Error("decode: an empty batch");
  State& s = *s_;
  const std::vector<SeqRun> runs = batch_runs(*this, batch);
  std::vector<std::pair<int, int>> growth;
  for (const SeqRun& r : runs) growth.push_back({r.seq, r.n});
  if (s.kv.pages_needed(growth) > s.kv.free_pages())
    throw Error("the KV cache is full: this batch needs " + std::to_string(s.kv.pages_needed(growth)) +
                " more pages of " + std::to_string(kKvPage) + " positions and " +
                std::to_string(s.kv.free_pages()) + " are free (raise -c or run fewer sequences)");
  const size_t V = size_t(s.model.config().vocab_size);
  const size_t rows = size_t(std::count_if(batch.begin(), batch.end(), [](const BatchToken& b) { return b.logits; }));
  if (s.run.logits.size() < rows * V) s.run.logits.resize(rows * V);
  std::vector<int> start(runs.size());  // each sequence's length before the batch
  for (size_t r = 0; r < runs.size(); ++r) start[r] = runs[r].pos;
  try {
    // Steps of max_batch tokens; a run cut by a step's end continues in the next.
    size_t out = 0;
    const size_t B = size_t(s.run.max_batch);
    for (size_t done = 0; done < batch.size(); done += B) {
      const size_t n = std::min(batch.size() - done, B);
      std::vector<SeqRun> step;
      for (const SeqRun& r : runs) {
        const int b = std::max(r.first, int(done)), e = std::min(r.first + r.n, int(done + n));
        if (b < e) step.push_back({r.seq, b - int(done), r.pos + (b - r.first), e - b});
      }
      for (const SeqRun& r : step) s.kv.grow(r.seq, r.n);
      ModelAccess::before_step(s.model, *s.pool);
      s.forward_step(batch.data() + done, int(n), step, rows ? s.run.logits.data() + out * V : nullptr);
      for (size_t i = done; i < done + n; ++i) out += batch[i].logits;
    }
  } catch (...) {
    // A step that threw (a bad head row found by its product) leaves its
    // positions unwritten: the sequences stand where they stood.
    for (size_t r = 0; r < runs.size(); ++r) s.kv.truncate(runs[r].seq, start[r]);
    throw;
  }
  return {s.run.logits.data(), rows * V};
}

std::span<const float> Context::forward(std::span<const int32_t> tokens, int pos, bool all_logits, int seq) {
  if (tokens.empty()) throw Error("forward: no tokens");
  check_seq(*this, seq, "forward");
  const int64_t end = int64_t(pos) + int64_t(tokens.size());
  if (pos < 0 || end > n_ctx())
    throw Error("context of " + std::to_string(n_ctx()) + " tokens exceeded (" + std::to_string(end) + " needed)");
  if (pos > seq_length(seq))
    throw Error("forward: position " + std::to_string(pos) + " is past the " + std::to_string(seq_length(seq)) +
                " positions sequence " + std::to_string(seq) + " holds");
  const int V = model().config().vocab_size;
  for (int32_t t : tokens)  // before the sequence is cut back
    if (t < 0 || t >= V)
      throw Error("token id " + std::to_string(t) + " outside the vocabulary of " + std::to_string(V));
  seq_truncate(seq, pos);
  std::vector<BatchToken> batch(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    batch[i] = {tokens[i], seq, pos + int(i), all_logits || i + 1 == tokens.size()};
  return decode(batch);
}

}  // namespace tern
