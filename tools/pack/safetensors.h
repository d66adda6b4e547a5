// Validating reader for Hugging Face safetensors checkpoints, single-file or
// sharded (model.safetensors.index.json). Only headers are held in memory;
// tensor data is read on demand with pread, one tensor at a time, so peak
// memory is about the largest tensor rather than the whole model.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tern::pack {

class SafetensorsFile;

struct StTensor {
  std::string name;
  std::string dtype;            // as spelled in the header: "BF16", "F32", "I64", ...
  std::vector<uint64_t> shape;  // outermost first, as in PyTorch
  uint64_t offset = 0;          // absolute file offset of the first byte
  uint64_t nbytes = 0;
  const SafetensorsFile* file = nullptr;

  uint64_t n_elements() const;
  std::string shape_string() const;  // "[512, 256]"
};

// One .safetensors file: header parsed and checked against the file size.
class SafetensorsFile {
 public:
  // Throws tern::Error "path: problem" for anything malformed.
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<StTensor>& tensors() const { return tensors_; }
  uint64_t file_size() const { return size_; }

  // Reads the tensor converted to f32 (exact for F32, F16 and BF16); `out`
  // must hold n_elements(). Throws for any other dtype.
  void read_f32(const StTensor& t, float* out) const;
  // Elements [first, first + n) of it, flattened row-major, into out[n].
  void read_f32(const StTensor& t, uint64_t first, uint64_t n, float* out) const;
  // The tensor's stored bytes, any dtype; `out` must hold t.nbytes.
  void read_bytes(const StTensor& t, uint8_t* out) const;

 private:
  SafetensorsFile() = default;
  void parse_header();
  void pread_all(void* dst, uint64_t n, uint64_t offset) const;

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::vector<StTensor> tensors_;
};

// Bytes per element of a safetensors dtype name, 0 if unknown.
uint32_t safetensors_dtype_size(const std::string& dtype);
bool is_float_dtype(const std::string& dtype);  // F32, F16 or BF16

// All tensors of a checkpoint directory, across shards.
class Checkpoint {
 public:
  // Opens <dir>/model.safetensors, or the shards listed in
  // <dir>/model.safetensors.index.json.
  static Checkpoint open(const std::string& dir);

  const StTensor* find(const std::string& name) const;
  const std::map<std::string, const StTensor*>& tensors() const { return by_name_; }
  // The file named in "missing tensor" errors: model.safetensors or the index.
  const std::string& label() const { return label_; }
  std::vector<float> read_f32(const StTensor& t) const;
  std::vector<float> read_f32(const StTensor& t, uint64_t first, uint64_t n) const;
  std::vector<uint8_t> read_bytes(const StTensor& t) const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const StTensor*> by_name_;
  std::string label_;
};

}  // namespace tern::pack
