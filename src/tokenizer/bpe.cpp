#include "tokenizer/bpe.h"

#include <cstdio>
#include <queue>

#include "tern/error.h"
#include "tokenizer/utf8.h"

namespace tern::tok {

Bpe::Bpe(const Spec& s, const BpeOptions& o) : spec_(s), opt_(o) {
  ids_.reserve(s.tokens.size() * 2);
  // The first id wins when two tokens share a text, as in llama.cpp.
  for (size_t i = 0; i < s.tokens.size(); ++i) ids_.emplace(s.tokens[i], int32_t(i));
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[b] = find(name);
  }
  merges_.reserve(s.merges.size() * 2);
  std::string joined;
  for (size_t r = 0; r < s.merges.size(); ++r) {
    const std::string& m = s.merges[r];
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos) throw Error("merge " + std::to_string(r) + " '" + m + "' is not 'left right'");
    const std::string_view a(m.data(), sp), b(m.data() + sp + 1, m.size() - sp - 1);
    joined.assign(a).append(b);
    const int32_t ia = find(a), ib = find(b), ic = find(joined);
    if (ia < 0 || ib < 0 || ic < 0)
      throw Error("merge " + std::to_string(r) + " '" + m + "' names a token that is not in the vocabulary");
    // An earlier merge of the same pair keeps its rank.
    merges_.emplace(uint64_t(uint32_t(ia)) << 32 | uint32_t(ib), Merge{double(r), ic});
  }
}

int32_t Bpe::find(std::string_view text) const {
  auto it = ids_.find(text);
  return it == ids_.end() ? -1 : it->second;
}

bool Bpe::merge_of(int32_t a, int32_t b, Merge& m) const {
  if (!spec_.merges.empty()) {
    auto it = merges_.find(uint64_t(uint32_t(a)) << 32 | uint32_t(b));
    if (it == merges_.end()) return false;
    m = it->second;
    return true;
  }
  // Score-ranked (SentencePiece-style GGUF from llama.cpp): any adjacent
  // pair whose concatenation is a token may merge, best score first.
  if (spec_.scores.empty()) return false;
  const int32_t c = find(spec_.tokens[a] + spec_.tokens[b]);
  if (c < 0) return false;
  m = Merge{-double(spec_.scores[c]), c};
  return true;
}

void Bpe::encode(std::string_view word, std::vector<int32_t>& out) const {
  if (opt_.ignore_merges) {
    const int32_t whole = find(word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  // Symbols: one per character, or per byte where a character is not a
  // token and byte fallback is on.
  struct Sym {
    int32_t id;
    int prev, next;
  };
  std::vector<Sym> sym;
  sym.reserve(word.size());
  for (size_t i = 0; i < word.size();) {
    size_t len = utf8_valid_len(word, i);
    if (len == 0) len = 1;
    const int32_t id = find(word.substr(i, len));
    if (id >= 0) {
      sym.push_back({id, 0, 0});
    } else if (opt_.byte_fallback && [&] {
                 for (size_t k = 0; k < len; ++k)
                   if (byte_ids_[static_cast<unsigned char>(word[i + k])] < 0) return false;
                 return true;
               }()) {
      for (size_t k = 0; k < len; ++k) sym.push_back({byte_ids_[static_cast<unsigned char>(word[i + k])], 0, 0});
    } else {
      if (opt_.unk < 0)
        throw Error("character '" + std::string(word.substr(i, len)) + "' has no token and the tokenizer has no unknown token");
      if (!(opt_.fuse_unk && !sym.empty() && sym.back().id == opt_.unk)) sym.push_back({opt_.unk, 0, 0});
    }
    i += len;
  }
  const int n = int(sym.size());
  for (int k = 0; k < n; ++k) sym[k].prev = k - 1, sym[k].next = k + 1 < n ? k + 1 : -1;

  struct Cand {
    double priority;
    int pos;
    int32_t left, right, result;
    bool operator<(const Cand& o) const {  // std::priority_queue pops the largest
      return priority != o.priority ? priority > o.priority : pos > o.pos;
    }
  };
  std::priority_queue<Cand> q;
  auto consider = [&](int a) {
    if (a < 0 || sym[a].next < 0) return;
    Merge m;
    if (merge_of(sym[a].id, sym[sym[a].next].id, m)) q.push({m.priority, a, sym[a].id, sym[sym[a].next].id, m.result});
  };
  for (int k = 0; k + 1 < n; ++k) consider(k);
  while (!q.empty()) {
    const Cand c = q.top();
    q.pop();
    Sym& l = sym[c.pos];
    // Stale: the left symbol was merged away or changed, or its neighbour did.
    if (l.id != c.left || l.next < 0 || sym[l.next].id != c.right) continue;
    const int r = l.next;
    l.id = c.result;
    l.next = sym[r].next;
    if (l.next >= 0) sym[l.next].prev = c.pos;
    sym[r].id = -1;
    consider(l.prev);
    consider(c.pos);
  }
  for (int k = 0; k >= 0 && k < n; k = sym[k].next) out.push_back(sym[k].id);
}

}  // namespace tern::tok
