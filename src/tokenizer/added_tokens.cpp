#include "tokenizer/added_tokens.h"

#include <cstring>

#include "tokenizer/utf8.h"

namespace tern::tok {

namespace {

// Rust's char::is_alphanumeric || '_', for single_word.
bool word_char(uint32_t cp) {
  if (cp < 0x80) return std::isalnum(int(cp)) || cp == '_';
  return !is_unicode_space(cp);  // letters and digits dominate non-ASCII text
}

uint32_t cp_before(std::string_view s, size_t i) {
  size_t k = i - 1;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  return utf8_next(s, k);
}

}  // namespace

AddedTokens::AddedTokens(const std::vector<AddedToken>& all, bool normalized) {
  nodes_.emplace_back();
  std::memset(nodes_[0].child, 0, sizeof nodes_[0].child);
  for (const AddedToken& t : all) {
    // Input is valid UTF-8; a token that is not could only match inside a
    // character and cut the text where no regex may look.
    if (t.normalized != normalized || t.content.empty() || utf8_lossy(t.content) != t.content) continue;
    int32_t n = 0;
    for (unsigned char c : t.content) {
      if (!nodes_[n].child[c]) {
        nodes_[n].child[c] = int32_t(nodes_.size());
        nodes_.emplace_back();
        std::memset(nodes_.back().child, 0, sizeof nodes_.back().child);
      }
      n = nodes_[n].child[c];
    }
    if (nodes_[n].token < 0) {  // the first of two identical contents wins
      nodes_[n].token = int32_t(tokens_.size());
      tokens_.push_back(t);
    }
  }
}

void AddedTokens::split(std::string_view text, size_t base, bool parse_special, std::vector<Segment>& out) const {
  size_t done = 0;  // text before this is emitted
  size_t i = 0;
  while (i < text.size()) {
    // Longest token starting at i.
    int32_t best = -1;
    size_t best_len = 0;
    int32_t n = 0;
    for (size_t k = i; k < text.size(); ++k) {
      n = nodes_[n].child[static_cast<unsigned char>(text[k])];
      if (!n) break;
      if (nodes_[n].token >= 0) best = nodes_[n].token, best_len = k + 1 - i;
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const AddedToken& t = tokens_[best];
    size_t start = i, stop = i + best_len;
    if (t.special && !parse_special) {
      // Kept as text; like HF, the matched span is not searched again.
      i = stop;
      continue;
    }
    if (t.single_word) {
      const bool left_ok = start == 0 || !word_char(cp_before(text, start));
      size_t j = stop;
      const bool right_ok = stop == text.size() || !word_char(utf8_next(text, j));
      if (!left_ok || !right_ok) {
        ++i;
        continue;
      }
    }
    if (t.lstrip)
      while (start > done) {
        const uint32_t cp = cp_before(text, start);
        if (!is_unicode_space(cp)) break;
        size_t k = start - 1;
        while (k > 0 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
        start = k;
      }
    if (t.rstrip)
      while (stop < text.size()) {
        size_t j = stop;
        if (!is_unicode_space(utf8_next(text, j))) break;
        stop = j;
      }
    if (start > done) out.push_back({text.substr(done, start - done), -1, base + done});
    out.push_back({text.substr(start, stop - start), t.id, base + start});
    done = i = stop;
  }
  if (done < text.size()) out.push_back({text.substr(done), -1, base + done});
}

}  // namespace tern::tok
