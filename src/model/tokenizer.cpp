#include "tern/tokenizer.h"

#include <sentencepiece_processor.h>

#include "tern/error.h"

namespace tern {

Tokenizer::Tokenizer(const gguf::File& f) : sp_(new sentencepiece::SentencePieceProcessor) {
  const char* key = "tern.tokenizer.spm_model";
  const gguf::Value* model = f.find(key);
  if (!model)
    throw file_error(f.path(), std::string("no ") + key +
                                   " (files not packed by tern need their tokenizer.model; "
                                   "re-pack the checkpoint with 'tern pack')");
  const auto bytes = model->as_u8_array(key);
  const auto status = sp_->LoadFromSerializedProto(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  if (!status.ok()) throw file_error(f.path(), std::string(key) + ": " + status.ToString());
  auto id = [&](const char* k, int fallback) {
    const gguf::Value* v = f.find(k);
    return v ? int32_t(v->as_uint(k)) : int32_t(fallback);
  };
  bos_ = id("tokenizer.ggml.bos_token_id", sp_->bos_id());
  eos_ = id("tokenizer.ggml.eos_token_id", sp_->eos_id());
}

Tokenizer::~Tokenizer() = default;

int Tokenizer::vocab_size() const { return sp_->GetPieceSize(); }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  if (!status.ok()) throw Error("tokenizer: " + status.ToString());
  std::vector<int32_t> out;
  out.reserve(ids.size() + 1);
  if (add_bos && bos_ >= 0) out.push_back(bos_);
  out.insert(out.end(), ids.begin(), ids.end());
  return out;
}

std::string Tokenizer::piece_bytes(int32_t id) const {
  if (id < 0 || id >= sp_->GetPieceSize()) return {};
  if (sp_->IsControl(id) || sp_->IsUnused(id)) return {};
  const std::string& piece = sp_->IdToPiece(id);
  if (sp_->IsByte(id)) {
    // Byte pieces are spelled "<0xAB>".
    return std::string(1, char(std::stoi(piece.substr(3, 2), nullptr, 16)));
  }
  if (sp_->IsUnknown(id)) return "\xE2\x81\x87";  // U+2047, what sentencepiece prints
  std::string out;
  static const std::string kSpace = "\xE2\x96\x81";  // U+2581 "▁"
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

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::vector<int> v(ids.begin(), ids.end());
  std::string text;
  const auto status = sp_->Decode(v, &text);
  if (!status.ok()) throw Error("tokenizer: " + status.ToString());
  return text;
}

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

}  // namespace tern
