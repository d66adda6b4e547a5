// A compiled Unicode regex (PCRE2 with UTF, UCP and its JIT): the engine for
// the Split pre-tokenizers and Replace normalizers that tokenizer.json files
// spell as regexes (\p{L}, \p{N}, look-ahead, (?i:...)).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::tok {

class Regex {
 public:
  // Throws tern::Error "regex /.../: problem at offset N" if it does not compile.
  explicit Regex(const std::string& pattern);
  // A pattern that matches `literal` exactly.
  static Regex literal(std::string_view literal);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Non-empty, non-overlapping matches [begin, end) in `text` (valid UTF-8),
  // left to right; an empty match moves on by one character.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

// The pattern with the code points newer Unicode versions added to \p{L},
// \p{N} and \p{P} spliced into those classes (see regex.cpp).
std::string widen_unicode_classes(const std::string& pattern);

}  // namespace tern::tok
