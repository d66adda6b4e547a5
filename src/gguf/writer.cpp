// Streaming GGUF writer. Output goes to a temporary next to the target and is
// renamed into place only by finish(), so an interrupted pack never leaves a
// truncated model where a loader would find it.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "internal.h"
#include "tern/error.h"
#include "tern/output_file.h"

namespace tern::gguf {
namespace {

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// The on-disk width of integer types is fixed; a Value built by hand with an
// out-of-range payload must not be silently truncated.
void check_range(const std::string& path, const std::string& key, const Value& v) {
  auto bad = [&](const std::string& what) {
    throw file_error(path, "metadata key '" + key + "': " + what + " does not fit in " +
                               detail::value_type_name(v.type));
  };
  switch (v.type) {
    case ValueType::U8: if (v.u > 0xff) bad(std::to_string(v.u)); break;
    case ValueType::U16: if (v.u > 0xffff) bad(std::to_string(v.u)); break;
    case ValueType::U32: if (v.u > 0xffffffffu) bad(std::to_string(v.u)); break;
    case ValueType::BOOL: if (v.u > 1) bad(std::to_string(v.u)); break;
    case ValueType::I8: if (v.i < INT8_MIN || v.i > INT8_MAX) bad(std::to_string(v.i)); break;
    case ValueType::I16: if (v.i < INT16_MIN || v.i > INT16_MAX) bad(std::to_string(v.i)); break;
    case ValueType::I32: if (v.i < INT32_MIN || v.i > INT32_MAX) bad(std::to_string(v.i)); break;
    default: break;
  }
}

}  // namespace

Writer::Writer(std::string path, uint64_t alignment)
    : path_(std::move(path)), alignment_(alignment) {
  if (!detail::is_pow2(alignment_) || alignment_ > std::numeric_limits<uint32_t>::max())
    throw file_error(path_, "alignment " + std::to_string(alignment_) +
                                " is not a power of two that fits in u32");
  out_ = std::make_unique<OutputFile>(path_);
}

Writer::~Writer() = default;

void Writer::write_bytes(const void* p, size_t n) { out_->write(p, n); }

void Writer::set(std::string key, Value v) {
  if (header_written_) throw file_error(path_, "set('" + key + "') after write_header()");
  if (key == detail::kAlignmentKey) {
    // The constructor owns the alignment; write_header() emits the key.
    if (v.type != ValueType::U32 || v.u != alignment_)
      throw file_error(path_, key + " must be set through the Writer constructor (it is " +
                                  std::to_string(alignment_) + ")");
    return;
  }
  if (v.type == ValueType::ARRAY) {
    if (v.array_type == ValueType::ARRAY)
      throw file_error(path_, "metadata key '" + key + "': arrays of arrays are not supported");
    const bool ok = v.array_type == ValueType::STRING
                        ? v.strings.size() == v.count
                        : v.raw.size() == v.count * detail::scalar_size(v.array_type);
    if (!ok) throw file_error(path_, "metadata key '" + key + "': array count does not match its payload");
  } else {
    check_range(path_, key, v);
  }
  for (auto& [k, old] : kv_)
    if (k == key) {
      old = std::move(v);
      return;
    }
  kv_.emplace_back(std::move(key), std::move(v));
}

void Writer::add_tensor(std::string name, TensorType type, std::vector<uint64_t> dims) {
  if (header_written_) throw file_error(path_, "add_tensor('" + name + "') after write_header()");
  for (const auto& t : tensors_)
    if (t.name == name) throw file_error(path_, "duplicate tensor '" + name + "'");
  if (!known_type(static_cast<uint32_t>(type)))
    throw file_error(path_, "tensor '" + name + "' has unknown ggml type " +
                                std::to_string(static_cast<uint32_t>(type)));
  TensorInfo shape;
  shape.dims = dims;
  if (dims.empty() || dims.size() > detail::kMaxDims)
    throw file_error(path_, "tensor '" + name + "' has " + std::to_string(dims.size()) +
                                " dimensions (expected 1 to 4)");
  uint64_t n = 1;
  for (uint64_t d : dims)
    if (d == 0 || __builtin_mul_overflow(n, d, &n) ||
        n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw file_error(path_, "tensor '" + name + "' has invalid shape " + shape.shape_string());
  const TypeTraits& tr = traits(type);
  if (dims[0] % tr.block_size != 0)
    throw file_error(path_, "tensor '" + name + "' row length " + std::to_string(dims[0]) +
                                " is not a multiple of the " + tr.name + " block size " +
                                std::to_string(tr.block_size));
  uint64_t nbytes;
  if (__builtin_mul_overflow(row_bytes(type, dims[0]), n / dims[0], &nbytes) ||
      __builtin_add_overflow(nbytes, uint64_t{tr.tensor_tail}, &nbytes))
    throw file_error(path_, "tensor '" + name + "' is too large");
  const uint64_t offset =
      tensors_.empty() ? 0 : align_up(tensors_.back().offset + tensors_.back().nbytes, alignment_);
  tensors_.push_back({std::move(name), type, std::move(dims), nbytes, offset});
}

void Writer::write_header() {
  if (header_written_) throw file_error(path_, "write_header() called twice");
  auto u32 = [&](uint32_t x) { write_bytes(&x, 4); };
  auto u64 = [&](uint64_t x) { write_bytes(&x, 8); };
  auto str = [&](const std::string& s) {
    u64(s.size());
    write_bytes(s.data(), s.size());
  };
  auto scalar = [&](ValueType t, const Value& v) {
    const uint64_t sz = detail::scalar_size(t);
    if (t == ValueType::F32) {
      const float f = static_cast<float>(v.f);
      write_bytes(&f, 4);
    } else if (t == ValueType::F64) {
      write_bytes(&v.f, 8);
    } else if (t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 ||
               t == ValueType::I64) {
      write_bytes(&v.i, sz);  // little-endian: the low bytes come first
    } else {
      write_bytes(&v.u, sz);
    }
  };

  const bool emit_alignment = alignment_ != detail::kDefaultAlignment;
  write_bytes("GGUF", 4);
  u32(detail::kVersion);
  u64(tensors_.size());
  u64(kv_.size() + (emit_alignment ? 1 : 0));
  for (const auto& [key, v] : kv_) {
    str(key);
    u32(static_cast<uint32_t>(v.type));
    if (v.type == ValueType::STRING) {
      str(v.str);
    } else if (v.type == ValueType::ARRAY) {
      u32(static_cast<uint32_t>(v.array_type));
      u64(v.count);
      if (v.array_type == ValueType::STRING)
        for (const auto& s : v.strings) str(s);
      else
        write_bytes(v.raw.data(), v.raw.size());
    } else {
      scalar(v.type, v);
    }
  }
  if (emit_alignment) {
    str(detail::kAlignmentKey);
    u32(static_cast<uint32_t>(ValueType::U32));
    u32(static_cast<uint32_t>(alignment_));
  }
  for (const auto& t : tensors_) {
    str(t.name);
    u32(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) u64(d);
    u32(static_cast<uint32_t>(t.type));
    u64(t.offset);
  }
  const uint64_t pos = out_->tell();
  static const uint8_t zeros[256] = {};
  for (uint64_t pad = align_up(pos, alignment_) - pos; pad > 0;) {
    const size_t n = pad < sizeof zeros ? pad : sizeof zeros;
    write_bytes(zeros, n);
    pad -= n;
  }
  header_written_ = true;
}

const Writer::Pending& Writer::next_tensor(std::string_view name) const {
  if (!header_written_) throw file_error(path_, "write_tensor('" + std::string(name) + "') before write_header()");
  if (next_tensor_ >= tensors_.size())
    throw file_error(path_, "write_tensor('" + std::string(name) + "'): all declared tensors are written");
  const Pending& t = tensors_[next_tensor_];
  if (t.name != name)
    throw file_error(path_, "write_tensor('" + std::string(name) + "'): expected tensor '" +
                                t.name + "' next");
  return t;
}

void Writer::write_tensor(std::string_view name, std::span<const uint8_t> bytes) {
  const Pending& t = next_tensor(name);
  if (tensor_written_ != 0 || bytes.size() != t.nbytes)
    throw file_error(path_, "tensor '" + t.name + "': got " +
                                std::to_string(tensor_written_ + bytes.size()) + " bytes, expected " +
                                std::to_string(t.nbytes));
  append_tensor(name, bytes);
}

void Writer::append_tensor(std::string_view name, std::span<const uint8_t> bytes) {
  const Pending& t = next_tensor(name);
  if (bytes.size() > t.nbytes - tensor_written_)
    throw file_error(path_, "tensor '" + t.name + "': got " +
                                std::to_string(tensor_written_ + bytes.size()) + " bytes, expected " +
                                std::to_string(t.nbytes));
  write_bytes(bytes.data(), bytes.size());
  data_written_ += bytes.size();
  tensor_written_ += bytes.size();
  if (tensor_written_ < t.nbytes) return;
  // llama.cpp pads after every tensor, the last one included.
  static const uint8_t zeros[256] = {};
  for (uint64_t pad = align_up(t.nbytes, alignment_) - t.nbytes; pad > 0;) {
    const size_t n = pad < sizeof zeros ? pad : sizeof zeros;
    write_bytes(zeros, n);
    data_written_ += n;
    pad -= n;
  }
  tensor_written_ = 0;
  ++next_tensor_;
}

void Writer::finish() {
  if (finished_) throw file_error(path_, "finish() called twice");
  if (!header_written_) write_header();
  if (next_tensor_ != tensors_.size())
    throw file_error(path_, "finish() with " + std::to_string(tensors_.size() - next_tensor_) +
                                " of " + std::to_string(tensors_.size()) + " tensors unwritten");
  out_->commit();
  finished_ = true;
}

}  // namespace tern::gguf
