// The KV cache of a context, in pages of kKvPage positions (tern/context.h).
// A page holds those positions of every layer and KV head: keys as rows
// [layer][kv_head][kKvPage][head_dim], values transposed
// [layer][kv_head][head_dim][kKvPage], so that both products of attention
// are dense_gemm calls (scores = K q, out = V^T p page by page) with the
// fixed order of kernels.h in every cache type. A sequence is a list of
// pages; pages are shared by reference count and copied when a sequence
// writes into one it shares. Both arrays are on huge pages, pages
// outermost: a token's stores touch a few 2 MiB pages, each written only
// once positions reach it.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "tern/aligned_buffer.h"
#include "tern/context.h"
#include "tern/model.h"

namespace tern {

// A zero-filled array whose pages take no memory until written, so a KV
// cache sized for the trained context costs only the positions a run
// reaches.
class ZeroedArray {
 public:
  void assign(size_t bytes, bool huge);
  uint8_t* data() { return p_.get(); }
  const uint8_t* data() const { return p_.get(); }

 private:
  ZeroedBuffer p_;
};

class KvCache {
 public:
  // `pages` pages for up to `max_seqs` sequences. Throws std::bad_alloc.
  void init(const Config& c, int pages, int max_seqs, gguf::TensorType k_type, gguf::TensorType v_type);

  gguf::TensorType k_type() const { return k_type_; }
  gguf::TensorType v_type() const { return v_type_; }
  int max_seqs() const { return int(seqs_.size()); }
  int length(int seq) const { return seqs_[size_t(seq)].length; }
  void truncate(int seq, int n);
  void share(int src, int dst);
  // Pages that growing each (seq, n) of `growth` by n positions takes: new
  // pages, and a copy of a shared page written into. Each seq at most once.
  int pages_needed(std::span<const std::pair<int, int>> growth) const;
  int free_pages() const { return int(free_.size()); }
  // Makes positions [length, length + n) of seq writable (pages added, a
  // shared one copied), then counts them as held; the caller has checked
  // pages_needed. Their contents are written by the forward pass.
  void grow(int seq, int n);

  // Keys [kKvPage][head_dim] and values [head_dim][kKvPage] of sequence
  // seq's page `page` (positions page * kKvPage ...), layer l, KV head g.
  uint8_t* keys(int seq, int page, int l, int g) { return key_base(page_of(seq, page), l, g); }
  uint8_t* values(int seq, int page, int l, int g) { return value_base(page_of(seq, page), l, g); }
  size_t key_bytes() const { return ek_; }    // of one element
  size_t value_bytes() const { return ev_; }

 private:
  struct Seq {
    std::vector<int> pages;  // [ceil(length / kKvPage)] page ids
    int length = 0;
  };
  int page_of(int seq, int page) const { return seqs_[size_t(seq)].pages[size_t(page)]; }
  uint8_t* key_base(int page, int l, int g) {
    return keys_.data() + (size_t(page) * page_heads_ + size_t(l) * n_kv_ + size_t(g)) * head_bytes_k_;
  }
  uint8_t* value_base(int page, int l, int g) {
    return values_.data() + (size_t(page) * page_heads_ + size_t(l) * n_kv_ + size_t(g)) * head_bytes_v_;
  }
  void release(int page);
  int copy_of(int page, int used);  // a fresh page holding page's first `used` positions

  gguf::TensorType k_type_ = gguf::TensorType::F32, v_type_ = gguf::TensorType::F32;
  size_t ek_ = 4, ev_ = 4;
  size_t n_kv_ = 0, head_dim_ = 0;
  size_t page_heads_ = 0;                      // n_layers * n_kv_heads
  size_t head_bytes_k_ = 0, head_bytes_v_ = 0;  // one (layer, head) of a page
  ZeroedArray keys_;    // [pages][n_layers][n_kv_heads][kKvPage][head_dim] of k_type
  ZeroedArray values_;  // [pages][n_layers][n_kv_heads][head_dim][kKvPage] of v_type
  std::vector<int> refs_;  // [pages] sequences holding each page
  std::vector<int> free_;  // page ids, the next to hand out last
  std::vector<Seq> seqs_;  // [max_seqs]
};

}  // namespace tern
