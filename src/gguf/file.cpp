// File lifetime (mmap ownership, moves) and lookups with loader-friendly
// messages; the parsing itself is in reader.cpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "internal.h"
#include "tern/error.h"

namespace tern::gguf {
namespace {

std::string type_list(std::span<const TensorType> types) {
  std::string s;
  for (size_t k = 0; k < types.size(); ++k) {
    if (k) s += k + 1 == types.size() ? " or " : ", ";
    s += traits(types[k]).name;
  }
  return s;
}

std::string shape_of(std::span<const uint64_t> dims) {
  TensorInfo t;
  t.dims.assign(dims.begin(), dims.end());
  return t.shape_string();
}

}  // namespace

File File::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw file_error(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw file_error(path, std::string("cannot stat: ") + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw file_error(path, "is a directory, not a GGUF file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw file_error(path, "not a regular file");
  }
  File f;
  f.path_ = path;
  f.size_ = static_cast<uint64_t>(st.st_size);
  // mmap rejects a zero length; parse_all() reports the empty file instead.
  if (f.size_ > 0) {
    void* m = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw file_error(path, std::string("cannot map: ") + std::strerror(err));
    }
    f.map_ = m;
    f.base_ = static_cast<const uint8_t*>(m);
  }
  ::close(fd);  // the mapping keeps the file contents reachable
  f.parse_all();
  return f;
}

void File::release(const uint8_t* data, uint64_t nbytes) const {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(base_), at = reinterpret_cast<uintptr_t>(data);
  if (!map_ || nbytes == 0 || at < begin || at - begin > size_ || nbytes > size_ - (at - begin)) return;
  // Only whole pages inside the range: its neighbours stay mapped in.
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(data) + nbytes) / page * page;
  // A read-only private mapping: MADV_DONTNEED only forgets clean pages.
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

File File::parse(std::span<const uint8_t> bytes, const std::string& name) {
  File f;
  f.path_ = name;
  f.base_ = bytes.data();
  f.size_ = bytes.size();
  f.parse_all();
  return f;
}

File::File(File&& o) noexcept
    : path_(std::move(o.path_)),
      base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      map_(std::exchange(o.map_, nullptr)),
      version_(o.version_),
      alignment_(o.alignment_),
      kv_(std::move(o.kv_)),
      tensors_(std::move(o.tensors_)) {}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, size_);
    path_ = std::move(o.path_);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    map_ = std::exchange(o.map_, nullptr);
    version_ = o.version_;
    alignment_ = o.alignment_;
    kv_ = std::move(o.kv_);
    tensors_ = std::move(o.tensors_);
  }
  return *this;
}

File::~File() {
  if (map_) ::munmap(map_, size_);
}

const Value* File::find(std::string_view key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return &v;
  return nullptr;
}

const Value& File::get(std::string_view key) const {
  if (const Value* v = find(key)) return *v;
  throw file_error(path_, "missing key " + detail::quoted(key));
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

const TensorInfo& File::tensor(std::string_view name, std::span<const TensorType> types,
                               std::span<const uint64_t> dims) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) throw file_error(path_, "missing tensor " + detail::quoted(name));
  if (!types.empty() && std::find(types.begin(), types.end(), t->type) == types.end())
    throw file_error(path_, "tensor " + detail::quoted(t->name) + " has type " + traits(t->type).name +
                                ", expected " + type_list(types));
  if (!dims.empty() && !std::equal(dims.begin(), dims.end(), t->dims.begin(), t->dims.end()))
    throw file_error(path_, "tensor " + detail::quoted(t->name) + " has shape " + t->shape_string() +
                                ", expected " + shape_of(dims));
  return *t;
}

}  // namespace tern::gguf
