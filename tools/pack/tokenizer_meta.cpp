#include "pack/tokenizer_meta.h"

#include <sentencepiece_processor.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "tern/error.h"

namespace tern::pack {

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
    int32_t type = kTokNormal;  // proto default
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

TokenizerMeta load_tokenizer(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw file_error(path, errno == ENOENT ? "not found" : std::strerror(errno));
  TokenizerMeta t;
  t.model_bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());

  sentencepiece::SentencePieceProcessor sp;
  std::string_view bytes(reinterpret_cast<const char*>(t.model_bytes.data()), t.model_bytes.size());
  auto status = sp.LoadFromSerializedProto(bytes);
  if (!status.ok())
    throw file_error(path, "not a SentencePiece model: " + std::string(status.message()));
  const int n = sp.GetPieceSize();
  if (n <= 0) throw file_error(path, "SentencePiece model has no pieces");

  std::vector<int32_t> proto_types;
  try {
    proto_types = spm_piece_types(t.model_bytes);
  } catch (const Error& e) {
    throw file_error(path, e.what());
  }
  if (proto_types.size() != static_cast<size_t>(n))
    throw file_error(path, "ModelProto lists " + std::to_string(proto_types.size()) +
                               " pieces but SentencePiece loaded " + std::to_string(n));

  for (int id = 0; id < n; ++id) {
    t.pieces.push_back(sp.IdToPiece(id));
    t.scores.push_back(sp.GetScore(id));
    int32_t type = kTokNormal;
    if (sp.IsUnknown(id)) type = kTokUnknown;
    else if (sp.IsControl(id)) type = kTokControl;
    else if (sp.IsUnused(id)) type = kTokUnused;
    else if (sp.IsByte(id)) type = kTokByte;
    else if (proto_types[id] == kTokUserDefined) type = kTokUserDefined;
    t.types.push_back(type);
  }
  t.bos_id = sp.bos_id();
  t.eos_id = sp.eos_id();
  t.unk_id = sp.unk_id();
  t.pad_id = sp.pad_id();
  t.n_spm_pieces = static_cast<size_t>(n);
  return t;
}

void pad_vocab(TokenizerMeta& t, size_t n) {
  std::set<std::string> taken(t.pieces.begin(), t.pieces.end());
  for (size_t i = 0; t.pieces.size() < n; ++i) {
    std::string piece = "<unused_" + std::to_string(i) + ">";
    if (taken.count(piece)) continue;  // never shadow a real piece
    t.pieces.push_back(piece);
    t.scores.push_back(0.0f);
    t.types.push_back(kTokUnused);
  }
}

}  // namespace tern::pack
