// Block geometry of the ggml tensor types (ggml.c type_traits), which lets the
// reader check any tensor's byte size without knowing how to decode it.
#include <array>
#include <limits>

#include "internal.h"
#include "tern/error.h"

namespace tern::gguf {
namespace {

struct Entry {
  uint32_t id;
  TypeTraits traits;
};

// block_size / type_size follow the ggml block structs, e.g. block_q4_0 is a
// fp16 scale plus 16 bytes of nibbles = 18 bytes per 32 weights, block_tq1_0
// is 48 base-3 packed bytes + 4 bytes + fp16 scale = 54 per 256.
// I2_S is bitnet.cpp's: 128 weights in 32 bytes (element j of a block in
// byte j % 32, bits 6 - 2 * (j / 32)), blocks laid row after row, then 32
// bytes whose first four hold the tensor's f32 scale. ggml's own traits for
// it (1 x 1 byte) describe no real layout, so tern states the true one.
// FAIRY2I is tern's (include/tern/phase.h): a 32-byte block covers 64
// complex columns of one complex row, i.e. 128 real columns of two real
// rows, so per real row it is 16 bytes per 128 elements.
// Q1_0 and Q2_0 are ggml's (ggml-common.h: 128 signs with an fp16 d in 18
// bytes; 64 2-bit codes with an fp16 d in 18 bytes); PQ2_0 and PTQ1_0 are
// PrismML's fork's, 128 weights per fp16 d (34 and 28 bytes).
constexpr std::array<Entry, 30> kTypes{{
    {0, {"F32", 1, 4}},        {1, {"F16", 1, 2}},        {2, {"Q4_0", 32, 18}},
    {3, {"Q4_1", 32, 20}},     {6, {"Q5_0", 32, 22}},     {7, {"Q5_1", 32, 24}},
    {8, {"Q8_0", 32, 34}},     {9, {"Q8_1", 32, 36}},     {10, {"Q2_K", 256, 84}},
    {11, {"Q3_K", 256, 110}},  {12, {"Q4_K", 256, 144}},  {13, {"Q5_K", 256, 176}},
    {14, {"Q6_K", 256, 210}},  {15, {"Q8_K", 256, 292}},  {24, {"I8", 1, 1}},
    {25, {"I16", 1, 2}},       {26, {"I32", 1, 4}},       {27, {"I64", 1, 8}},
    {28, {"F64", 1, 8}},       {30, {"BF16", 1, 2}},      {34, {"TQ1_0", 256, 54}},
    {35, {"TQ2_0", 256, 66}},  {36, {"I2_S", 128, 32, 32}}, {134, {"IQ1_BN", 64, 13}},
    {135, {"IQ2_BN", 64, 16}}, {29797, {"FAIRY2I", 128, 16}}, {41, {"Q1_0", 128, 18}},
    {42, {"Q2_0", 64, 18}},    {142, {"PQ2_0", 128, 34}}, {143, {"PTQ1_0", 128, 28}},
}};

const TypeTraits* lookup(uint32_t id) {
  for (const auto& e : kTypes)
    if (e.id == id) return &e.traits;
  return nullptr;
}

}  // namespace

const TypeTraits& traits(TensorType t) {
  const TypeTraits* tr = lookup(static_cast<uint32_t>(t));
  if (!tr) throw Error("unknown ggml tensor type " + std::to_string(static_cast<uint32_t>(t)));
  return *tr;
}

bool known_type(uint32_t id) { return lookup(id) != nullptr; }

uint64_t row_bytes(TensorType t, uint64_t n) {
  const TypeTraits& tr = traits(t);
  if (n % tr.block_size != 0)
    throw Error(std::string("row of ") + std::to_string(n) + " elements is not a multiple of the " +
                tr.name + " block size " + std::to_string(tr.block_size));
  uint64_t bytes;
  if (__builtin_mul_overflow(n / tr.block_size, uint64_t{tr.type_size}, &bytes))
    throw Error("row of " + std::to_string(n) + " " + tr.name + " elements is too large");
  return bytes;
}

uint64_t TensorInfo::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<uint64_t>::max();
  return n;
}

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) {
    if (k) s += ", ";
    s += std::to_string(dims[k]);
  }
  return s + "]";
}

}  // namespace tern::gguf
