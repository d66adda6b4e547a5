// Rewriting a GGUF file the way another tool would have written it (tests
// of foreign files and of file variants).
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tern/gguf.h"
#include "tern/quant.h"

namespace tern::test {

using Rewrite = std::function<void(const tern::gguf::TensorInfo& t, const tern::gguf::File& src,
                                   tern::gguf::TensorType& type, std::vector<uint8_t>& bytes)>;
// The same, free to change the tensor's dims too (a type that stores the
// logical width where tern's pads to whole blocks, as I2_S does).
using RewriteDims = std::function<void(const tern::gguf::TensorInfo& t, const tern::gguf::File& src,
                                       tern::gguf::TensorType& type, std::vector<uint64_t>& dims,
                                       std::vector<uint8_t>& bytes)>;

// What happens to tern's own keys: dropped (a file another engine wrote),
// kept with tern.scale.* rounded to fp16 (what a reader of the blocks alone
// can know), or kept exactly.
enum class TernKeys { Drop, Fp16Scales, Keep };

// Copies `src` to `dst` without any key in `drop`, then sets the keys in
// `set`, passing every tensor through `rewrite`.
inline void rewrite_file_dims(const std::string& src_path, const std::string& dst,
                         const std::vector<std::string>& drop, const RewriteDims& rewrite,
                         TernKeys tern_keys = TernKeys::Drop,
                         const std::vector<std::pair<std::string, tern::gguf::Value>>& set = {}) {
  const tern::gguf::File src = tern::gguf::File::open(src_path);
  tern::gguf::Writer w(dst);
  for (const auto& [key, value] : src.metadata()) {
    if (key.rfind("tern.", 0) == 0 && tern_keys == TernKeys::Drop) continue;
    if (std::find(drop.begin(), drop.end(), key) != drop.end()) continue;
    if (key.rfind("tern.scale.", 0) == 0 && tern_keys == TernKeys::Fp16Scales) {
      std::vector<float> v = value.as_f32_array(key);
      for (float& x : v) x = tern::fp16_to_f32(tern::f32_to_fp16(x));
      w.set(key, tern::gguf::Value::f32_array(v));
      continue;
    }
    w.set(key, value);
  }
  for (const auto& [key, value] : set) w.set(key, value);
  std::vector<std::pair<tern::gguf::TensorType, std::vector<uint8_t>>> data;
  for (const auto& t : src.tensors()) {
    tern::gguf::TensorType type = t.type;
    std::vector<uint64_t> dims = t.dims;
    std::vector<uint8_t> bytes(t.data, t.data + t.nbytes);
    rewrite(t, src, type, dims, bytes);
    w.add_tensor(t.name, type, dims);
    data.emplace_back(type, std::move(bytes));
  }
  w.write_header();
  for (size_t i = 0; i < data.size(); ++i) w.write_tensor(src.tensors()[i].name, data[i].second);
  w.finish();
}

inline void rewrite_file(const std::string& src_path, const std::string& dst,
                         const std::vector<std::string>& drop, const Rewrite& rewrite,
                         TernKeys tern_keys = TernKeys::Drop,
                         const std::vector<std::pair<std::string, tern::gguf::Value>>& set = {}) {
  rewrite_file_dims(
      src_path, dst, drop,
      [&](const tern::gguf::TensorInfo& t, const tern::gguf::File& src, tern::gguf::TensorType& type,
          std::vector<uint64_t>&, std::vector<uint8_t>& bytes) { rewrite(t, src, type, bytes); },
      tern_keys, set);
}

}  // namespace tern::test
