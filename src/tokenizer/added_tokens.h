// Added tokens (special and not) are cut out of the text before the model
// sees it, as Hugging Face's AddedVocabulary does: leftmost-longest matches,
// with lstrip / rstrip absorbing whitespace beside a match and single_word
// refusing matches inside a word.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::tok {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// A piece of the input: either text for the model (id < 0) or one token.
struct Segment {
  std::string_view text;
  int32_t id = -1;
  size_t offset = 0;  // where the text starts in the input
};

class AddedTokens {
 public:
  // `normalized` picks the tokens matched after normalization (true) or on
  // the raw text (false).
  AddedTokens(const std::vector<AddedToken>& all, bool normalized);
  bool empty() const { return tokens_.empty(); }
  // Splits `text` (offset `base` in the input); special tokens are matched
  // only when parse_special.
  void split(std::string_view text, size_t base, bool parse_special, std::vector<Segment>& out) const;

 private:
  struct Node {
    int32_t child[256];  // index into nodes_, 0 for none (0 is the root)
    int32_t token = -1;  // index into tokens_ of the token ending here
  };
  std::vector<AddedToken> tokens_;
  std::vector<Node> nodes_;
};

}  // namespace tern::tok
