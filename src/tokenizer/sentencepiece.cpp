// SentencePiece tokenizer.model -> Spec: the vocabulary llama.cpp reads,
// plus the raw model bytes, which tern runs with libsentencepiece itself so
// its ids are SentencePiece's exactly (normalization rules included).
#include <sentencepiece_processor.h>

#include <cstring>
#include <iterator>

#include "tern/error.h"
#include "tern/input_file.h"
#include "tern/tokenizer_spec.h"
#include "tokenizer/engines.h"
#include "tokenizer/utf8.h"

namespace tern::tok {

namespace {

// Minimal protobuf wire-format walker: just enough to find each piece's type.
struct Wire {
  const uint8_t* p;
  const uint8_t* end;

  bool varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
      uint8_t b = *p++;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  // Skips a field of wire type `wt`; returns the payload span for LEN fields.
  bool skip(uint32_t wt, const uint8_t** lp = nullptr, uint64_t* ln = nullptr) {
    uint64_t v;
    switch (wt) {
      case 0: return varint(&v);
      case 1: if (end - p < 8) return false; p += 8; return true;
      case 5: if (end - p < 4) return false; p += 4; return true;
      case 2:
        if (!varint(&v) || v > static_cast<uint64_t>(end - p)) return false;
        if (lp) *lp = p;
        if (ln) *ln = v;
        p += v;
        return true;
      default: return false;
    }
  }
};

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_processor(const std::vector<uint8_t>& bytes,
                                                                      const std::string& what) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  // libsentencepiece throws from inside (e.g. on a zero-length piece), so
  // both its status and its exceptions become one error naming the file.
  try {
    const auto status = sp->LoadFromSerializedProto(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    if (!status.ok()) throw Error(what + ": not a SentencePiece model: " + std::string(status.message()));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(what + ": not a SentencePiece model: " + e.what());
  }
  if (sp->GetPieceSize() <= 0) throw Error(what + ": SentencePiece model has no pieces");
  return sp;
}

}  // namespace

std::vector<int32_t> spm_piece_types(const std::vector<uint8_t>& proto) {
  std::vector<int32_t> types;
  Wire w{proto.data(), proto.data() + proto.size()};
  while (w.p < w.end) {
    uint64_t key;
    if (!w.varint(&key)) throw Error("malformed ModelProto");
    const uint8_t* body = nullptr;
    uint64_t len = 0;
    if (!w.skip(key & 7, &body, &len)) throw Error("malformed ModelProto");
    if (key >> 3 != 1 || (key & 7) != 2) continue;
    int32_t type = kNormal;  // proto default
    Wire pw{body, body + len};
    while (pw.p < pw.end) {
      uint64_t k;
      if (!pw.varint(&k)) throw Error("malformed SentencePiece entry");
      if (k >> 3 == 3 && (k & 7) == 0) {
        uint64_t v;
        if (!pw.varint(&v)) throw Error("malformed SentencePiece entry");
        type = static_cast<int32_t>(v);
      } else if (!pw.skip(k & 7)) {
        throw Error("malformed SentencePiece entry");
      }
    }
    types.push_back(type);
  }
  return types;
}

Spec load_sentencepiece(const std::string& path) {
  Spec t;
  const std::string bytes = read_input_file(path, uint64_t(256) << 20, "a SentencePiece model");
  t.spm_model.assign(bytes.begin(), bytes.end());
  auto sp = load_processor(t.spm_model, path);
  const int n = sp->GetPieceSize();

  std::vector<int32_t> proto_types;
  try {
    proto_types = spm_piece_types(t.spm_model);
  } catch (const Error& e) {
    throw file_error(path, e.what());
  }
  if (proto_types.size() != static_cast<size_t>(n))
    throw file_error(path, "ModelProto lists " + std::to_string(proto_types.size()) +
                               " pieces but SentencePiece loaded " + std::to_string(n));

  t.model = "llama";
  for (int id = 0; id < n; ++id) {
    t.tokens.push_back(sp->IdToPiece(id));
    t.scores.push_back(sp->GetScore(id));
    int32_t type = kNormal;
    if (sp->IsUnknown(id)) type = kUnknown;
    else if (sp->IsControl(id)) type = kControl;
    else if (sp->IsUnused(id)) type = kUnused;
    else if (sp->IsByte(id)) type = kByte;
    else if (proto_types[id] == kUserDefined) type = kUserDefined;
    t.types.push_back(type);
  }
  t.bos = sp->bos_id();
  t.eos = sp->eos_id();
  t.unk = sp->unk_id();
  t.pad = sp->pad_id();
  t.add_bos = true;
  return t;
}

// Runs the stored tokenizer.model with libsentencepiece.
class SentencePieceEngine : public Engine {
 public:
  SentencePieceEngine(const Spec& s, const std::string& what) : sp_(load_processor(s.spm_model, what)) {
    if (size_t(sp_->GetPieceSize()) > s.tokens.size())
      throw Error(what + ": tern.tokenizer.spm_model has " + std::to_string(sp_->GetPieceSize()) +
                  " pieces, more than the " + std::to_string(s.tokens.size()) + " tokens of the vocabulary");
  }
  void encode(std::string_view text, bool, std::vector<int32_t>& out, Cache&) const override {
    std::vector<int> ids;
    const auto status = sp_->Encode(text, &ids);
    if (!status.ok()) throw Error("tokenizer: " + status.ToString());
    out.insert(out.end(), ids.begin(), ids.end());
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::vector<int> v;
    for (int32_t id : ids)
      if (id < sp_->GetPieceSize()) v.push_back(id);  // padding rows decode to nothing
    std::string text;
    const auto status = sp_->Decode(v, &text);
    if (!status.ok()) throw Error("tokenizer: " + status.ToString());
    return text;
  }
  std::string piece_bytes(int32_t id, const std::string& token) const override {
    if (id >= sp_->GetPieceSize() || sp_->IsControl(id) || sp_->IsUnused(id)) return {};
    if (sp_->IsByte(id)) {
      // The model's own piece, not the file's token text, which need not agree.
      const int byte = byte_token_value(sp_->IdToPiece(id));
      return byte >= 0 ? std::string(1, char(byte)) : std::string();
    }
    if (sp_->IsUnknown(id)) return "\xE2\x81\x87";  // U+2047, what SentencePiece prints
    return spm_unescape(token);
  }
  const char* kind() const override { return "SentencePiece (libsentencepiece)"; }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

std::unique_ptr<Engine> make_sentencepiece_engine(const Spec& s, const std::string& what) {
  return std::make_unique<SentencePieceEngine>(s, what);
}

}  // namespace tern::tok
