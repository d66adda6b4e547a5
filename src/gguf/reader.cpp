// The GGUF parser. Every length and count read from the file is checked
// against the bytes that remain before it is used to allocate or index, so a
// hostile or truncated file yields a one-line tern::Error and nothing else.
#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "internal.h"
#include "tern/error.h"

namespace tern::gguf {
namespace {

using detail::value_type_name;

// Smallest possible encodings, used to reject counts a file cannot hold
// before reserving anything: a kv is key length + type + a 1-byte value; a
// tensor info is name length + n_dims + one dim + type + offset.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

class Cursor {
 public:
  Cursor(const uint8_t* base, uint64_t size, const std::string& name)
      : base_(base), size_(size), name_(name) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  // What is being read, for "truncated in <where>" messages.
  void at(std::string where) { where_ = std::move(where); }

  [[noreturn]] void fail(const std::string& problem) const { throw file_error(name_, problem); }

  void need(uint64_t n) const {
    if (n > left()) fail("truncated in " + where_);
  }

  template <class T>
  T read() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string() {
    const uint64_t len = read<uint64_t>();
    if (len > left())
      fail(where_ + ": string length " + std::to_string(len) + " runs past end of file (" +
           std::to_string(left()) + " bytes left)");
    std::string s(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return s;
  }

  void copy(std::vector<uint8_t>& out, uint64_t n) {
    need(n);
    out.assign(base_ + pos_, base_ + pos_ + n);
    pos_ += n;
  }

 private:
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& name_;
  std::string where_ = "header";
};

void read_scalar(Cursor& c, ValueType t, Value& v) {
  switch (t) {
    case ValueType::U8: v.u = c.read<uint8_t>(); break;
    // Any non-zero byte is true; storing 0/1 lets a Writer copy the value.
    case ValueType::BOOL: v.u = c.read<uint8_t>() != 0; break;
    case ValueType::U16: v.u = c.read<uint16_t>(); break;
    case ValueType::U32: v.u = c.read<uint32_t>(); break;
    case ValueType::U64: v.u = c.read<uint64_t>(); break;
    case ValueType::I8: v.i = c.read<int8_t>(); break;
    case ValueType::I16: v.i = c.read<int16_t>(); break;
    case ValueType::I32: v.i = c.read<int32_t>(); break;
    case ValueType::I64: v.i = c.read<int64_t>(); break;
    case ValueType::F32: v.f = c.read<float>(); break;
    case ValueType::F64: v.f = c.read<double>(); break;
    case ValueType::STRING: v.str = c.read_string(); break;
    case ValueType::ARRAY: break;  // handled by read_value
  }
}

void read_value(Cursor& c, const std::string& key, ValueType t, Value& v) {
  v.type = t;
  if (t != ValueType::ARRAY) {
    read_scalar(c, t, v);
    return;
  }
  const uint32_t elem = c.read<uint32_t>();
  if (!detail::known_value_type(elem))
    c.fail("metadata key " + detail::quoted(key) + " is an array of unknown value type " + std::to_string(elem));
  v.array_type = static_cast<ValueType>(elem);
  if (v.array_type == ValueType::ARRAY)
    c.fail("metadata key " + detail::quoted(key) + " is an array of arrays (not supported)");
  v.count = c.read<uint64_t>();
  // A string element takes at least its 8-byte length.
  const uint64_t min_elem =
      v.array_type == ValueType::STRING ? 8 : detail::scalar_size(v.array_type);
  if (v.count > c.left() / min_elem)
    c.fail("metadata key " + detail::quoted(key) + ": array of " + std::to_string(v.count) + " " +
           value_type_name(v.array_type) + " runs past end of file (" +
           std::to_string(c.left()) + " bytes left)");
  if (v.array_type == ValueType::STRING) {
    v.strings.reserve(v.count);
    for (uint64_t k = 0; k < v.count; ++k) v.strings.push_back(c.read_string());
  } else {
    c.copy(v.raw, v.count * min_elem);
  }
}

std::string shape_of(const std::vector<uint64_t>& dims) {
  TensorInfo t;
  t.dims = dims;
  return t.shape_string();
}

// The first problem with where the tensors' data lies (past the end of the
// file, or overlapping the next tensor), or "" when every extent fits.
std::string extent_problem(const std::vector<TensorInfo>& ts, uint64_t data_start, uint64_t size) {
  for (const auto& t : ts) {
    uint64_t begin, end;
    if (__builtin_add_overflow(data_start, t.offset, &begin) ||
        __builtin_add_overflow(begin, t.nbytes, &end) || end > size)
      return "tensor " + detail::quoted(t.name) + " data [offset " + std::to_string(t.offset) + ", " +
             std::to_string(t.nbytes) + " bytes] runs past end of file (size " + std::to_string(size) + ")";
  }
  std::vector<const TensorInfo*> order;
  order.reserve(ts.size());
  for (const auto& t : ts) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < order.size(); ++k)
    if (order[k]->offset < order[k - 1]->offset + order[k - 1]->nbytes)
      return "tensors " + detail::quoted(order[k - 1]->name) + " and " + detail::quoted(order[k]->name) +
             " overlap";
  return "";
}

// Type 42 is ggml's Q2_0 (64-weight blocks of 18 bytes), but PrismML's
// Ternary Bonsai files of April 2026 declare it for 128-weight blocks of 34
// bytes, PQ2_0's layout. When the declared layout does not fit the file
// (a tensor overlaps the next or runs past the end) and PQ2_0's fits every
// tensor, the Q2_0 tensors are read as PQ2_0; otherwise nothing changes and
// the checks below name the problem.
void resolve_q2_0_layout(std::vector<TensorInfo>& ts, uint64_t data_start, uint64_t size) {
  const auto is_q2 = [](const TensorInfo& t) { return t.type == TensorType::Q2_0; };
  if (std::none_of(ts.begin(), ts.end(), is_q2) || extent_problem(ts, data_start, size).empty()) return;
  std::vector<TensorInfo> alt = ts;
  const TypeTraits& pq = traits(TensorType::PQ2_0);
  for (auto& t : alt) {
    if (!is_q2(t)) continue;
    if (t.dims[0] % pq.block_size != 0) return;
    t.nbytes = row_bytes(TensorType::PQ2_0, t.dims[0]) * (t.n_elements() / t.dims[0]);  // <= the Q2_0 size
    t.type = TensorType::PQ2_0;
    t.declared_q2_0 = true;
  }
  if (extent_problem(alt, data_start, size).empty()) ts = std::move(alt);
}

}  // namespace

void File::parse_all() {
  Cursor c(base_, size_, path_);
  if (size_ == 0) c.fail("empty file (not a GGUF file)");
  const size_t magic_len = std::min<uint64_t>(size_, 4);
  if (std::memcmp(base_, "GGUF", magic_len) != 0) c.fail("not a GGUF file (bad magic)");
  c.need(4);
  c.read<uint32_t>();
  version_ = c.read<uint32_t>();
  if (version_ != detail::kVersion)
    c.fail("unsupported GGUF version " + std::to_string(version_) + " (tern reads v3)");
  const uint64_t n_tensors = c.read<uint64_t>();
  const uint64_t n_kv = c.read<uint64_t>();
  if (n_kv > c.left() / kMinKvBytes)
    c.fail("metadata count " + std::to_string(n_kv) + " is impossible for a file of " +
           std::to_string(size_) + " bytes");
  if (n_tensors > c.left() / kMinTensorInfoBytes ||
      n_tensors * kMinTensorInfoBytes > c.left() - n_kv * kMinKvBytes)
    c.fail("tensor count " + std::to_string(n_tensors) + " is impossible for a file of " +
           std::to_string(size_) + " bytes");

  kv_.reserve(n_kv);
  std::unordered_set<std::string> seen;
  for (uint64_t k = 0; k < n_kv; ++k) {
    c.at("metadata key " + std::to_string(k));
    std::string key = c.read_string();
    c.at("metadata key " + std::to_string(k) + " (" + detail::quoted(key) + ")");
    if (!seen.insert(key).second) c.fail("duplicate metadata key " + detail::quoted(key));
    const uint32_t type = c.read<uint32_t>();
    if (!detail::known_value_type(type))
      c.fail("metadata key " + detail::quoted(key) + " has unknown value type " + std::to_string(type));
    Value v;
    read_value(c, key, static_cast<ValueType>(type), v);
    if (key == detail::kAlignmentKey) {
      // llama.cpp insists on u32 here; anything else means a broken writer.
      if (v.type != ValueType::U32)
        c.fail(key + " has type " + detail::describe(v) + ", expected u32");
      if (!detail::is_pow2(v.u))
        c.fail(key + " " + std::to_string(v.u) + " is not a power of two");
      alignment_ = v.u;
    }
    kv_.emplace_back(std::move(key), std::move(v));
  }

  tensors_.reserve(n_tensors);
  seen.clear();
  for (uint64_t k = 0; k < n_tensors; ++k) {
    c.at("tensor info " + std::to_string(k));
    TensorInfo t;
    t.name = c.read_string();
    c.at("tensor info " + std::to_string(k) + " (" + detail::quoted(t.name) + ")");
    const std::string tname = "tensor " + detail::quoted(t.name);
    if (!seen.insert(t.name).second) c.fail("duplicate " + tname);
    const uint32_t n_dims = c.read<uint32_t>();
    if (n_dims < 1 || n_dims > detail::kMaxDims)
      c.fail(tname + " has " + std::to_string(n_dims) + " dimensions (expected 1 to 4)");
    t.dims.resize(n_dims);
    uint64_t n = 1;
    for (auto& d : t.dims) d = c.read<uint64_t>();
    for (uint64_t d : t.dims) {
      if (d == 0) c.fail(tname + " has a zero dimension " + shape_of(t.dims));
      // ggml counts elements in int64_t.
      if (__builtin_mul_overflow(n, d, &n) ||
          n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        c.fail(tname + " shape " + shape_of(t.dims) + " has too many elements");
    }
    const uint32_t type = c.read<uint32_t>();
    if (!known_type(type)) c.fail(tname + " has unknown ggml type " + std::to_string(type));
    t.type = static_cast<TensorType>(type);
    const TypeTraits& tr = traits(t.type);
    if (t.dims[0] % tr.block_size != 0)
      c.fail(tname + " row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
             tr.name + " block size " + std::to_string(tr.block_size));
    const uint64_t rows = n / t.dims[0];
    if (__builtin_mul_overflow(row_bytes(t.type, t.dims[0]), rows, &t.nbytes) ||
        __builtin_add_overflow(t.nbytes, uint64_t{tr.tensor_tail}, &t.nbytes))
      c.fail(tname + " shape " + shape_of(t.dims) + " is too large");
    t.offset = c.read<uint64_t>();
    if (t.offset % alignment_ != 0)
      c.fail(tname + " offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
             std::to_string(alignment_));
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the first aligned position after the infos.
  const uint64_t data_start = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  resolve_q2_0_layout(tensors_, data_start, size_);
  if (const std::string problem = extent_problem(tensors_, data_start, size_); !problem.empty())
    c.fail(problem);
  for (auto& t : tensors_) t.data = base_ + data_start + t.offset;
}

}  // namespace tern::gguf
