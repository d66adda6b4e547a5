#include "tern/tokenizer.h"

#include <algorithm>

#include "tern/error.h"
#include "tokenizer/engines.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/utf8.h"

namespace tern {

using tok::Json;

Tokenizer::Tokenizer(const gguf::File& f) : spec_(tok::read_spec(f)) { init(f.path()); }

Tokenizer::Tokenizer(tok::Spec spec, const std::string& source) : spec_(std::move(spec)) { init(source); }

Tokenizer::~Tokenizer() = default;

void Tokenizer::init(const std::string& source) {
  const size_t n = spec_.tokens.size();
  if (n == 0) throw file_error(source, "the tokenizer has no tokens");
  if (!spec_.types.empty() && spec_.types.size() != n) throw file_error(source, "token types and tokens differ in count");
  // llama.cpp asserts on this; encode would otherwise emit id -1 (found by
  // fuzz_sentencepiece: a tokenizer.model whose <s> is not a control piece).
  if (spec_.add_bos && (spec_.bos < 0 || size_t(spec_.bos) >= n))
    throw file_error(source, "the tokenizer adds a BOS token at the start but defines none");
  if (spec_.add_eos && (spec_.eos < 0 || size_t(spec_.eos) >= n))
    throw file_error(source, "the tokenizer adds an EOS token at the end but defines none");
  try {
    Json pipeline;
    std::vector<tok::AddedToken> added;
    if (!spec_.spm_model.empty()) {
      engine_ = tok::make_sentencepiece_engine(spec_, source);
      // SentencePiece matches its user-defined pieces itself; only control
      // and unknown tokens are cut out first (as llama.cpp does).
      for (tok::AddedToken& t : tok::added_tokens_of(spec_, nullptr))
        if (t.special) added.push_back(std::move(t));
    } else {
      if (!spec_.hf_pipeline.empty()) {
        pipeline = Json::parse(spec_.hf_pipeline, nullptr, false);
        if (pipeline.is_discarded() || !pipeline.is_object()) throw Error("tern.tokenizer.hf_pipeline is not JSON");
      } else {
        std::string note;
        pipeline = tok::llamacpp_pipeline(spec_, note);
        if (!note.empty()) notes_.push_back(note);
      }
      engine_ = tok::make_hf_engine(spec_, pipeline);
      added = tok::added_tokens_of(spec_, spec_.hf_pipeline.empty() ? nullptr : &pipeline);
    }
    special_.assign(n, 0);
    for (const tok::AddedToken& t : added)
      if (t.special) special_[size_t(t.id)] = 1;
    // Control tokens never print, whichever list named them.
    for (size_t i = 0; i < spec_.types.size(); ++i)
      if (spec_.types[i] == tok::kControl) special_[i] = 1;
    raw_added_ = std::make_unique<tok::AddedTokens>(added, false);
    normalized_added_ = std::make_unique<tok::AddedTokens>(added, true);
  } catch (const Error& e) {
    const std::string msg = e.what();
    // Messages from the file layer already start with the path.
    throw msg.rfind(source, 0) == 0 ? Error(msg) : file_error(source, msg);
  } catch (const nlohmann::json::exception& e) {
    throw file_error(source, std::string("malformed tokenizer rules: ") + e.what());
  }

  auto add_eog = [&](int32_t id) {
    if (id >= 0 && size_t(id) < n && std::find(eog_.begin(), eog_.end(), id) == eog_.end()) eog_.push_back(id);
  };
  for (int32_t id : {spec_.eos, spec_.eot, spec_.eom}) add_eog(id);
  for (int32_t id : spec_.eog) add_eog(id);
  // llama.cpp also ends generation at these tokens, found by their text.
  static const char* const kEndTexts[] = {"<|eot_id|>",  "<|im_end|>", "<|end|>",         "<end_of_turn>",
                                          "<|endoftext|>", "<|eom_id|>", "<|end_of_text|>", "<EOT>"};
  for (size_t i = 0; i < n; ++i)
    if (special_[i])
      for (const char* t : kEndTexts)
        if (spec_.tokens[i] == t) add_eog(int32_t(i));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& o) const {
  const std::string clean = tok::utf8_lossy(text);
  std::vector<int32_t> out;
  if (o.add_special && spec_.add_bos) out.push_back(spec_.bos);
  std::vector<tok::Segment> raw, norm;
  raw_added_->split(clean, 0, o.parse_special, raw);
  tok::Cache cache;
  for (const tok::Segment& seg : raw) {
    if (seg.id >= 0) {
      out.push_back(seg.id);
      continue;
    }
    if (!engine_->has_normalizer()) {
      engine_->encode(seg.text, seg.offset == 0, out, cache);
      continue;
    }
    const std::string normalized = engine_->normalize(seg.text);
    norm.clear();
    normalized_added_->split(normalized, seg.offset, o.parse_special, norm);
    for (const tok::Segment& s : norm) {
      if (s.id >= 0) out.push_back(s.id);
      else engine_->encode(s.text, seg.offset == 0 && s.offset == seg.offset, out, cache);
    }
  }
  if (o.add_special && spec_.add_eos) out.push_back(spec_.eos);
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<int32_t> keep;
  keep.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size())
      throw Error("token id " + std::to_string(id) + " is out of range (vocabulary of " +
                  std::to_string(vocab_size()) + ")");
    if (!(skip_special && special_[size_t(id)])) keep.push_back(id);
  }
  return engine_->decode(keep);
}

bool Tokenizer::is_special(int32_t id) const { return id >= 0 && id < vocab_size() && special_[size_t(id)]; }

bool Tokenizer::is_eog(int32_t id) const { return std::find(eog_.begin(), eog_.end(), id) != eog_.end(); }

std::string Tokenizer::piece_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size() || special_[size_t(id)]) return {};
  if (!spec_.types.empty() && spec_.types[size_t(id)] == tok::kUnused) return {};
  return engine_->piece_bytes(id, spec_.tokens[size_t(id)]);
}

std::string Tokenizer::token_piece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  if (special_[size_t(id)] || (!spec_.types.empty() && spec_.types[size_t(id)] == tok::kUserDefined))
    return spec_.tokens[size_t(id)];
  return piece_bytes(id);
}

std::string Tokenizer::kind() const { return engine_->kind(); }

std::string Utf8Stream::push(const std::string& bytes) {
  pending_ += bytes;
  // Find the end of the last complete UTF-8 sequence.
  size_t i = 0, complete = 0;
  while (i < pending_.size()) {
    const unsigned char c = static_cast<unsigned char>(pending_[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (i + len > pending_.size()) break;
    i += len;
    complete = i;
  }
  std::string out = pending_.substr(0, complete);
  pending_.erase(0, complete);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

namespace tok {
void check_pipeline(const Spec& s) { Tokenizer probe(s, "tokenizer"); }
}  // namespace tok

}  // namespace tern
