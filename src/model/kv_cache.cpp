#include "kv_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace tern {

void ZeroedArray::assign(size_t bytes, bool huge) {
  p_.reset();  // the old array's pages go back before the new one's are asked for
  p_ = alloc_zeroed(bytes, huge);
}

void KvCache::init(const Config& c, int pages, int max_seqs, gguf::TensorType k_type, gguf::TensorType v_type) {
  k_type_ = k_type;
  v_type_ = v_type;
  ek_ = size_t(dense_row_bytes(k_type, 1));
  ev_ = size_t(dense_row_bytes(v_type, 1));
  n_kv_ = size_t(c.n_kv_heads);
  head_dim_ = size_t(c.head_dim);
  page_heads_ = size_t(c.n_layers) * n_kv_;
  head_bytes_k_ = size_t(kKvPage) * head_dim_ * ek_;
  head_bytes_v_ = head_dim_ * size_t(kKvPage) * ev_;
  const size_t n = size_t(pages);
  if (n > SIZE_MAX / (page_heads_ * std::max(head_bytes_k_, head_bytes_v_) + 1)) throw std::bad_alloc();
  keys_.assign(n * page_heads_ * head_bytes_k_, true);
  values_.assign(n * page_heads_ * head_bytes_v_, true);
  refs_.assign(n, 0);
  free_.resize(n);
  for (size_t i = 0; i < n; ++i) free_[i] = int(n - 1 - i);  // page 0 first
  seqs_.assign(size_t(max_seqs), Seq{});
}

void KvCache::release(int page) {
  if (--refs_[size_t(page)] == 0) free_.push_back(page);
}

void KvCache::truncate(int seq, int n) {
  Seq& s = seqs_[size_t(seq)];
  n = std::clamp(n, 0, s.length);
  const size_t keep = size_t((n + kKvPage - 1) / kKvPage);
  for (size_t i = keep; i < s.pages.size(); ++i) release(s.pages[i]);
  s.pages.resize(keep);
  s.length = n;
}

void KvCache::share(int src, int dst) {
  if (src == dst) return;
  truncate(dst, 0);
  seqs_[size_t(dst)] = seqs_[size_t(src)];
  for (int p : seqs_[size_t(dst)].pages) ++refs_[size_t(p)];
}

int KvCache::pages_needed(std::span<const std::pair<int, int>> growth) const {
  int need = 0;
  std::vector<std::pair<int, int>> written;  // (shared page, holders writing into it)
  for (auto [seq, n] : growth) {
    if (n <= 0) continue;
    const Seq& s = seqs_[size_t(seq)];
    need += (s.length + n + kKvPage - 1) / kKvPage - int(s.pages.size());
    if (s.length % kKvPage == 0 || refs_[size_t(s.pages.back())] == 1) continue;
    auto at = std::find_if(written.begin(), written.end(), [&](const auto& w) { return w.first == s.pages.back(); });
    if (at == written.end()) written.push_back({s.pages.back(), 1});
    else ++at->second;
  }
  // A shared page is copied by each holder that writes into it, but the
  // last holder left writes in place.
  for (auto [page, k] : written) need += std::min(k, refs_[size_t(page)] - 1);
  return need;
}

int KvCache::copy_of(int page, int used) {
  const int fresh = free_.back();
  free_.pop_back();
  refs_[size_t(fresh)] = 1;
  for (size_t h = 0; h < page_heads_; ++h) {
    const size_t l = h / n_kv_, g = h % n_kv_;
    std::memcpy(key_base(fresh, int(l), int(g)), key_base(page, int(l), int(g)), size_t(used) * head_dim_ * ek_);
    uint8_t* dst = value_base(fresh, int(l), int(g));
    const uint8_t* src = value_base(page, int(l), int(g));
    for (size_t d = 0; d < head_dim_; ++d)
      std::memcpy(dst + d * kKvPage * ev_, src + d * kKvPage * ev_, size_t(used) * ev_);
  }
  return fresh;
}

void KvCache::grow(int seq, int n) {
  Seq& s = seqs_[size_t(seq)];
  if (const int used = s.length % kKvPage; used != 0 && refs_[size_t(s.pages.back())] > 1) {
    const int shared = s.pages.back();
    s.pages.back() = copy_of(shared, used);
    release(shared);
  }
  while (int(s.pages.size()) * kKvPage < s.length + n) {
    const int p = free_.back();
    free_.pop_back();
    refs_[size_t(p)] = 1;
    s.pages.push_back(p);
  }
  s.length += n;
}

}  // namespace tern
