// GGUF v3 container: a validating mmap reader and a streaming, atomic writer.
// Layout (all little-endian): magic "GGUF", u32 version, u64 n_tensors,
// u64 n_kv, then n_kv key/value pairs, n_tensors tensor infos, padding to
// general.alignment (default 32), then the tensor data section.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern {
class OutputFile;
}

namespace tern::gguf {

enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};

// ggml tensor type ids. The reader knows the block geometry of these so it can
// validate any file; the model loader decides which ones it accepts.
enum class TensorType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
  Q8_1 = 9, Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35,
  I2_S = 36,                 // bitnet.cpp (its fork's id; upstream ggml retired 36)
  Q1_0 = 41, Q2_0 = 42,      // ggml's group-scaled binary and 2-bit types (docs/FORMAT.md)
  IQ1_BN = 134, IQ2_BN = 135,  // ik_llama.cpp
  PQ2_0 = 142, PTQ1_0 = 143,   // PrismML's fork: 128-weight groups (Ternary Bonsai)
  // tern's own: Fairy2i phase codes (include/tern/phase.h). An id far from
  // ggml's and its forks', so no other engine mistakes the bytes for its own.
  FAIRY2I = 29797,
};

struct TypeTraits {
  const char* name;
  uint32_t block_size;  // elements per block
  uint32_t type_size;   // bytes per block
  uint32_t tensor_tail = 0;  // bytes after the blocks, once per tensor (I2_S: its scale)
};
// Throws tern::Error for an id it does not know.
const TypeTraits& traits(TensorType t);
bool known_type(uint32_t id);
// Bytes of a row of `n` elements; throws if n is not a multiple of the block.
uint64_t row_bytes(TensorType t, uint64_t n);

class Value {
 public:
  ValueType type = ValueType::U8;
  ValueType array_type = ValueType::U8;  // element type when type == ARRAY

  static Value u32(uint32_t v);
  static Value i32(int32_t v);
  static Value u64(uint64_t v);
  static Value f32(float v);
  static Value boolean(bool v);
  static Value string(std::string v);
  static Value string_array(std::vector<std::string> v);
  static Value f32_array(std::span<const float> v);
  static Value i32_array(std::span<const int32_t> v);
  static Value u8_array(std::span<const uint8_t> v);

  // Typed accessors; they throw tern::Error naming `key` on a type mismatch.
  uint64_t as_uint(std::string_view key) const;  // any non-negative integer
  int64_t as_int(std::string_view key) const;    // any integer
  double as_float(std::string_view key) const;   // F32 or F64
  bool as_bool(std::string_view key) const;
  const std::string& as_string(std::string_view key) const;
  const std::vector<std::string>& as_string_array(std::string_view key) const;
  std::vector<float> as_f32_array(std::string_view key) const;
  std::vector<int32_t> as_i32_array(std::string_view key) const;
  std::span<const uint8_t> as_u8_array(std::string_view key) const;
  uint64_t array_size() const;  // elements, for ARRAY values

  // Scalar payloads (the one matching `type` is meaningful).
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string str;
  // Array payloads: strings, or the packed little-endian numeric elements.
  std::vector<std::string> strings;
  std::vector<uint8_t> raw;
  uint64_t count = 0;
};

struct TensorInfo {
  std::string name;
  TensorType type;
  std::vector<uint64_t> dims;  // dims[0] is the fastest-varying (row length)
  uint64_t offset = 0;         // relative to the data section
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;  // points into the mapping (reader only)
  // Declared Q2_0 (42) but holding PQ2_0's 128-weight blocks, as PrismML's
  // Ternary Bonsai files of April 2026 do (PrismML-Eng/llama.cpp #167): the
  // reader tells them apart by size and sets type to PQ2_0.
  bool declared_q2_0 = false;

  uint64_t n_elements() const;
  std::string shape_string() const;  // "[2560, 6912]"
};

// A read-only GGUF file. open() maps the file (or, with use_mmap false,
// reads it whole into memory, as llama.cpp's --no-mmap: slower to start,
// but immune to the file changing underneath) and validates magic, version,
// every count, string length, type, shape, offset and alignment against the
// file size before any tensor data is touched.
class File {
 public:
  static File open(const std::string& path, bool use_mmap = true);
  // Parses a buffer the caller keeps alive (tests, fuzzing). `name` is used
  // in error messages in place of a path.
  static File parse(std::span<const uint8_t> bytes, const std::string& name);

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const { return size_; }
  // Whether tensor data lies in a mapping of the file (on the page cache's
  // pages, 4 KiB ones unless the cache holds huge folios), not in memory of
  // its own (--no-mmap, on huge pages) or a caller's buffer.
  bool mapped() const { return map_ != nullptr; }

  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;
  const Value& get(std::string_view key) const;  // throws "missing key"

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Looks a tensor up and checks type and shape, saying expected vs actual:
  // "FILE: tensor 'blk.0.attn_q.weight' has shape [256, 128], expected [256, 256]".
  // An empty `types` or `dims` span means "any".
  const TensorInfo& tensor(std::string_view name, std::span<const TensorType> types,
                           std::span<const uint64_t> dims) const;

  // Drops this process's pages of a tensor it has copied elsewhere (a
  // repack at load), so they stop counting as resident; reading the tensor
  // again still works (the pages fault back in from the file). A no-op for
  // parsed buffers.
  void release(const TensorInfo& t) const { release(t.data, t.nbytes); }
  void release(const uint8_t* data, uint64_t nbytes) const;  // a range of a tensor

 private:
  File() = default;
  void parse_all();
  static void read_whole(int fd, File& f);
  void release_storage();

  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  void* map_ = nullptr;  // non-null when we own an mmap
  void* owned_ = nullptr;  // non-null when we own a copy read with --no-mmap (free())
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorInfo> tensors_;
};

// Writes a GGUF v3 file atomically: everything goes to a temporary
// "<path>.tmp-XXXXXX" (tern/output_file.h), which finish() renames to
// `path`; a Writer destroyed before finish() removes the temporary, so no
// half-written output is ever left behind. A `path` that exists and is not
// a regular file is refused before anything is written.
// Tensors are declared up front (the header precedes the data) and their
// bytes streamed afterwards, one at a time, in declaration order.
class Writer {
 public:
  explicit Writer(std::string path, uint64_t alignment = 32);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Replaces an existing key in place. general.alignment belongs to the
  // constructor (written only when it is not 32); set() accepts it only with
  // that same value, so copying a file's metadata works.
  void set(std::string key, Value v);
  void add_tensor(std::string name, TensorType type, std::vector<uint64_t> dims);
  void write_header();                              // after all set()/add_tensor()
  void write_tensor(std::string_view name, std::span<const uint8_t> bytes);
  // The next tensor's bytes in pieces; it is complete once its size is reached.
  void append_tensor(std::string_view name, std::span<const uint8_t> bytes);
  void finish();

 private:
  struct Pending {
    std::string name;
    TensorType type;
    std::vector<uint64_t> dims;
    uint64_t nbytes;
    uint64_t offset;
  };
  void write_bytes(const void* p, size_t n);
  const Pending& next_tensor(std::string_view name) const;  // checks the order

  std::string path_;
  uint64_t alignment_;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<Pending> tensors_;
  size_t next_tensor_ = 0;
  uint64_t data_written_ = 0;
  uint64_t tensor_written_ = 0;  // bytes of tensors_[next_tensor_] appended so far
  bool header_written_ = false, finished_ = false;
  std::unique_ptr<OutputFile> out_;  // the temporary, renamed into place by finish()
};

}  // namespace tern::gguf
