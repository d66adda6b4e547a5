// The tokenizer.json pipeline: normalizer -> pre-tokenizer -> BPE per word,
// and the decoder chain back.
#include "tern/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/engines.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/utf8.h"

namespace tern::tok {

namespace {

class HfEngine : public Engine {
 public:
  HfEngine(const Spec& s, const Json& p) : spec_(s), pipeline_(p), bpe_(s, options(s, p)) {}

  void encode(std::string_view segment, bool at_start, std::vector<int32_t>& out, Cache& cache) const override {
    Words words;
    pipeline_.pre_tokenize(segment, at_start, words);
    std::string mapped;
    for (const Words::Span& sp : words.spans) {
      const std::string_view w = words.word(sp);
      // Repeated words (most of any text) cost one lookup by their raw text.
      auto hit = cache.find(w);
      if (hit != cache.end()) {
        out.insert(out.end(), hit->second.begin(), hit->second.end());
        continue;
      }
      std::vector<int32_t> ids;
      if (words.raw_bytes) {
        mapped.clear();
        for (unsigned char c : w) mapped += byte_to_unicode(c);
        bpe_.encode(mapped, ids);
      } else {
        bpe_.encode(w, ids);
      }
      out.insert(out.end(), ids.begin(), ids.end());
      if (cache.size() > 200000) cache.clear();  // bound memory on endless novel text
      cache.emplace(std::string(w), std::move(ids));
    }
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::vector<std::string> toks;
    toks.reserve(ids.size());
    for (int32_t id : ids) toks.push_back(spec_.tokens[id]);
    return pipeline_.decode(std::move(toks));
  }
  std::string piece_bytes(int32_t id, const std::string& token) const override {
    if (pipeline_.byte_level()) {
      std::string out;
      for (size_t i = 0; i < token.size();) {
        if (!utf8_valid_len(token, i)) return token;
        const int b = unicode_to_byte(utf8_next(token, i));
        if (b < 0) return token;  // an added token spelled in plain text
        out += char(b);
      }
      return out;
    }
    const int byte = byte_token_value(token);
    if (byte >= 0 && (spec_.types.empty() || spec_.types[id] == kByte || spec_.types[id] == kNormal))
      return std::string(1, char(byte));
    return spm_unescape(token);
  }
  const char* kind() const override {
    return pipeline_.byte_level() ? "BPE (byte-level)" : "BPE (SentencePiece-style)";
  }
  bool has_normalizer() const override { return pipeline_.has_normalizer(); }
  std::string normalize(std::string_view s) const override { return pipeline_.normalize(s); }

 private:
  static BpeOptions options(const Spec& s, const Json& p) {
    BpeOptions o;
    const Json* m = field(p, "model");
    const Json empty = Json::object();
    const Json& mj = m ? *m : empty;
    o.byte_fallback = get_bool(mj, "byte_fallback", "model", false);
    o.ignore_merges = get_bool(mj, "ignore_merges", "model", false);
    o.fuse_unk = get_bool(mj, "fuse_unk", "model", false);
    o.unk = s.unk;
    for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (!get_string(mj, k, "model").empty()) throw Error(std::string("BPE model option '") + k + "' is not supported");
    return o;
  }

  const Spec& spec_;
  Pipeline pipeline_;
  Bpe bpe_;
};

}  // namespace

std::unique_ptr<Engine> make_hf_engine(const Spec& s, const Json& pipeline) {
  return std::make_unique<HfEngine>(s, pipeline);
}

std::string spm_unescape(std::string_view piece) {
  static const std::string_view kSpace = "\xE2\x96\x81";  // U+2581 "▁"
  std::string out;
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpace.size(), kSpace) == 0) {
      out += ' ';
      i += kSpace.size();
    } else {
      out += piece[i++];
    }
  }
  return out;
}

}  // namespace tern::tok
