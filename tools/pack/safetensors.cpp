#include "pack/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "tern/error.h"
#include "tern/input_file.h"
#include "tern/quant.h"

namespace tern::pack {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; tern reads it in place");

namespace {

using json = nlohmann::json;

// The safetensors reference implementation refuses headers above 100 MB; so
// do we, which also bounds the allocation a hostile length could cause.
constexpr uint64_t kMaxHeader = 100u << 20;

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

uint32_t safetensors_dtype_size(const std::string& d) {
  if (d == "BOOL" || d == "U8" || d == "I8" || d == "F8_E5M2" || d == "F8_E4M3") return 1;
  if (d == "I16" || d == "U16" || d == "F16" || d == "BF16") return 2;
  if (d == "I32" || d == "U32" || d == "F32") return 4;
  if (d == "I64" || d == "U64" || d == "F64") return 8;
  return 0;
}

bool is_float_dtype(const std::string& d) { return d == "F32" || d == "F16" || d == "BF16"; }

uint64_t StTensor::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;  // checked against nbytes when parsed
  return n;
}

std::string StTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  const InputFile in = open_input_file(path);
  f->fd_ = in.fd;
  f->size_ = in.size;
  f->parse_header();
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (fd_ >= 0) ::close(fd_);
}

void SafetensorsFile::pread_all(void* dst, uint64_t n, uint64_t offset) const {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, 1u << 30));
    ssize_t got = ::pread(fd_, p, chunk, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw file_error(path_, "read failed: " + errno_text());
    }
    if (got == 0) throw file_error(path_, "unexpected end of file (was it truncated?)");
    p += got;
    n -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

namespace {

// The header's JSON. The format forbids duplicate keys; a JSON reader
// keeps only one of them, so two readers could see different tensors in
// one file: refused.
json parse_header_json(const std::string& path, const std::string& text) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string duplicate;
  auto on_event = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) keys.emplace_back();
    else if (ev == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (ev == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
             duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json hdr;
  try {
    hdr = json::parse(text, on_event);
  } catch (const json::exception& e) {
    throw file_error(path, std::string("invalid JSON header: ") + e.what());
  }
  if (!duplicate.empty()) throw file_error(path, "JSON header has the key '" + duplicate + "' twice");
  if (!hdr.is_object()) throw file_error(path, "JSON header is not an object");
  return hdr;
}

// One tensor's header entry, its bytes inside the data section [data_start,
// data_start + data_size) and as many as its dtype and shape need.
StTensor parse_entry(const std::string& path, const std::string& name, const json& v, uint64_t data_start,
                     uint64_t data_size) {
  auto bad = [&](const std::string& what) { return file_error(path, "tensor '" + name + "' " + what); };
  if (!v.is_object()) throw bad("header entry is not an object");
  if (!v.contains("dtype") || !v["dtype"].is_string()) throw bad("has no dtype string");
  if (!v.contains("shape") || !v["shape"].is_array()) throw bad("has no shape array");
  if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
    throw bad("has no data_offsets [begin, end]");
  StTensor t;
  t.name = name;
  t.dtype = v["dtype"].get<std::string>();
  uint32_t esize = safetensors_dtype_size(t.dtype);
  if (esize == 0) throw bad("has unknown dtype '" + t.dtype + "'");
  uint64_t count = 1;
  for (const auto& d : v["shape"]) {
    if (!d.is_number_unsigned()) throw bad("has a shape entry that is not a non-negative integer");
    uint64_t dim = d.get<uint64_t>();
    if (mul_overflows(count, dim, &count)) throw bad("shape " + d.dump() + " overflows");
    t.shape.push_back(dim);
  }
  const auto& off = v["data_offsets"];
  if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw bad("data_offsets are not non-negative integers");
  uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  // Built piecewise: GCC 12 warns (-Wrestrict, falsely) on "[" + std::string.
  std::string range = "[";
  range += std::to_string(begin);
  range += ", ";
  range += std::to_string(end);
  range += "]";
  if (begin > end) throw bad("has data_offsets " + range + " with begin after end");
  if (end > data_size)
    throw bad("data_offsets " + range + " past end of data (size " + std::to_string(data_size) + ")");
  uint64_t expect = 0;
  if (mul_overflows(count, esize, &expect) || expect != end - begin)
    throw bad("has " + std::to_string(end - begin) + " bytes of data, shape " + t.shape_string() + " " + t.dtype +
              " needs " + std::to_string(count * esize));
  t.offset = data_start + begin;
  t.nbytes = end - begin;
  return t;
}

// As the format requires (and the safetensors library checks): the
// tensors index the data section [data_start, size) entirely, with no
// overlaps and no bytes between them.
void check_coverage(const std::string& path, const std::vector<StTensor>& tensors, uint64_t data_start,
                    uint64_t size) {
  std::vector<const StTensor*> order;
  for (const auto& t : tensors)
    if (t.nbytes) order.push_back(&t);  // empty tensors occupy no bytes
  std::sort(order.begin(), order.end(), [](const StTensor* a, const StTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i]->offset < order[i - 1]->offset + order[i - 1]->nbytes)
      throw file_error(path, "tensors '" + order[i - 1]->name + "' and '" + order[i]->name + "' overlap");
    if (order[i]->offset > order[i - 1]->offset + order[i - 1]->nbytes)
      throw file_error(path, "bytes between tensors '" + order[i - 1]->name + "' and '" + order[i]->name +
                                 "' belong to no tensor");
  }
  const uint64_t first = order.empty() ? size : order.front()->offset;
  const uint64_t last = order.empty() ? data_start : order.back()->offset + order.back()->nbytes;
  if (first != data_start || last != size)
    throw file_error(path, "the data section holds bytes that belong to no tensor");
}

}  // namespace

void SafetensorsFile::parse_header() {
  if (size_ < 8)
    throw file_error(path_, "file too small for a safetensors header (" + std::to_string(size_) + " bytes)");
  uint8_t lenbuf[8];
  pread_all(lenbuf, 8, 0);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | lenbuf[i];
  if (n > size_ - 8)
    throw file_error(path_, "header length " + std::to_string(n) + " past end of file (size " +
                                std::to_string(size_) + ")");
  if (n > kMaxHeader) throw file_error(path_, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
  std::string text(n, '\0');
  pread_all(text.data(), n, 8);
  const json hdr = parse_header_json(path_, text);
  const uint64_t data_start = 8 + n;
  for (const auto& item : hdr.items()) {
    if (item.key() == "__metadata__") continue;
    tensors_.push_back(parse_entry(path_, item.key(), item.value(), data_start, size_ - data_start));
    tensors_.back().file = this;
  }
  check_coverage(path_, tensors_, data_start, size_);
}

void SafetensorsFile::read_f32(const StTensor& t, float* out) const {
  read_f32(t, 0, t.n_elements(), out);
}

void SafetensorsFile::read_f32(const StTensor& t, uint64_t first, uint64_t n, float* out) const {
  if (first > t.n_elements() || n > t.n_elements() - first)
    throw file_error(path_, "tensor '" + t.name + "': elements [" + std::to_string(first) + ", " +
                                std::to_string(first + n) + ") are outside its " +
                                std::to_string(t.n_elements()));
  if (t.dtype == "F32") {
    pread_all(out, n * 4, t.offset + first * 4);
    return;
  }
  bool bf16 = t.dtype == "BF16";
  if (!bf16 && t.dtype != "F16")
    throw file_error(path_, "tensor '" + t.name + "' has unsupported dtype " + t.dtype);
  // Convert through a bounded staging buffer so reading never doubles memory.
  std::vector<uint16_t> buf(std::min<uint64_t>(n, 1u << 16));
  for (uint64_t done = 0; done < n;) {
    uint64_t k = std::min<uint64_t>(buf.size(), n - done);
    pread_all(buf.data(), k * 2, t.offset + (first + done) * 2);
    for (uint64_t i = 0; i < k; ++i)
      out[done + i] = bf16 ? bf16_to_f32(buf[i]) : fp16_to_f32(buf[i]);
    done += k;
  }
}

Checkpoint Checkpoint::open(const std::string& dir) {
  Checkpoint c;
  const std::string single = dir + "/model.safetensors";
  const std::string index = dir + "/model.safetensors.index.json";
  struct stat st {};
  if (::stat(single.c_str(), &st) == 0) {
    c.label_ = single;
    c.files_.push_back(SafetensorsFile::open(single));
  } else if (::stat(index.c_str(), &st) == 0) {
    c.label_ = index;
    const std::string text = read_input_file(index, uint64_t(64) << 20, "a safetensors index");
    json j;
    try {
      j = json::parse(text);
    } catch (const json::exception& e) {
      throw file_error(index, std::string("invalid JSON: ") + e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw file_error(index, "has no \"weight_map\" object");
    std::map<std::string, std::string> wanted;  // tensor -> shard
    std::vector<std::string> shards;
    for (auto& [name, v] : j["weight_map"].items()) {
      if (!v.is_string()) throw file_error(index, "weight_map entry '" + name + "' is not a string");
      std::string shard = v.get<std::string>();
      // Shards live next to the index; a path could point anywhere.
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
        throw file_error(index, "weight_map names shard '" + shard + "', not a file name");
      wanted[name] = shard;
      if (std::find(shards.begin(), shards.end(), shard) == shards.end()) shards.push_back(shard);
    }
    for (const auto& s : shards) c.files_.push_back(SafetensorsFile::open(dir + "/" + s));
    for (const auto& [name, shard] : wanted) {
      bool found = false;
      for (const auto& f : c.files_)
        if (f->path() == dir + "/" + shard)
          for (const auto& t : f->tensors()) found |= t.name == name;
      if (!found)
        throw file_error(dir + "/" + shard,
                         "missing tensor '" + name + "' (listed in model.safetensors.index.json)");
    }
  } else {
    throw file_error(single, "not found (nor model.safetensors.index.json)");
  }
  for (const auto& f : c.files_) {
    for (const auto& t : f->tensors()) {
      auto [it, fresh] = c.by_name_.emplace(t.name, &t);
      if (!fresh)
        throw file_error(f->path(), "tensor '" + t.name + "' also appears in " +
                                        it->second->file->path());
    }
  }
  return c;
}

const StTensor* Checkpoint::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

void SafetensorsFile::read_bytes(const StTensor& t, uint8_t* out) const {
  pread_all(out, t.nbytes, t.offset);
}

std::vector<uint8_t> Checkpoint::read_bytes(const StTensor& t) const {
  std::vector<uint8_t> v(t.nbytes);
  t.file->read_bytes(t, v.data());
  return v;
}

std::vector<float> Checkpoint::read_f32(const StTensor& t) const {
  std::vector<float> v(t.n_elements());
  t.file->read_f32(t, v.data());
  return v;
}

std::vector<float> Checkpoint::read_f32(const StTensor& t, uint64_t first, uint64_t n) const {
  std::vector<float> v(n);
  t.file->read_f32(t, first, n, v.data());
  return v;
}

}  // namespace tern::pack
