// Malformed GGUF input: every case must end in one tern::Error line naming
// the file, never a crash, an overread or a huge allocation.
#include "gguf_test_util.h"

namespace tern::gguf::test {
namespace {

constexpr uint32_t kF32 = 0, kTQ2_0 = 35;
constexpr uint32_t kU32 = 4, kString = 8, kArray = 9;

// One F32 [8] tensor (32 bytes) at offset 0 after `kvs`.
std::vector<uint8_t> one_tensor_file(std::vector<uint64_t> dims = {8}, uint32_t type = kF32,
                                     uint64_t offset = 0, size_t data_bytes = 32) {
  Bytes b = header(1, 0);
  b.tensor("t", dims, type, offset).pad_to(32).zeros(data_bytes);
  return b.b;
}

std::vector<uint8_t> small_valid_file() {
  const auto path = (scratch_dir() / "small.gguf").string();
  Writer w(path);
  w.set("general.architecture", Value::string("bitnet"));
  w.set("n", Value::u32(3));
  w.set("tokens", Value::string_array({"<s>", "a", "bc"}));
  w.set("scores", Value::f32_array(std::vector<float>{0.5f, -1.f}));
  w.set("flag", Value::boolean(true));
  w.add_tensor("w", TensorType::TQ2_0, {256, 1});  // 66 bytes, then padding
  w.add_tensor("n", TensorType::F32, {8});         // 32 bytes: the file ends with data
  w.write_header();
  w.write_tensor("w", std::vector<uint8_t>(66, 0x5a));
  w.write_tensor("n", std::vector<uint8_t>(32, 0xa5));
  w.finish();
  return read_all(path);
}

TEST(BadInput, ValidFileParses) {
  EXPECT_EQ(parse_error(small_valid_file()), "<no error>");
  EXPECT_EQ(parse_error(one_tensor_file()), "<no error>");
}

TEST(BadInput, EmptyFile) {
  EXPECT_EQ(parse_error({}), "m.gguf: empty file (not a GGUF file)");
  const auto path = (scratch_dir() / "empty.gguf").string();
  write_all(path, {});
  EXPECT_EQ(open_error(path), path + ": empty file (not a GGUF file)");
}

TEST(BadInput, EveryTruncationFailsCleanly) {
  const auto full = small_valid_file();
  ASSERT_GT(full.size(), 200u);
  for (size_t n = 0; n < full.size(); ++n) {
    const std::vector<uint8_t> prefix(full.begin(), full.begin() + static_cast<long>(n));
    const std::string msg = parse_error(prefix);
    EXPECT_EQ(msg.rfind("m.gguf: ", 0), 0u) << "cut at " << n << ": " << msg;
  }
}

TEST(BadInput, TruncationMessageNamesThePlace) {
  Bytes b = header(0, 1);
  b.str("k").u32(kU32).u8(1).u8(2);  // a u32 value with two of its bytes
  EXPECT_EQ(parse_error(b.b), "m.gguf: truncated in metadata key 0 ('k')");
  Bytes key = header(0, 1);
  key.u64(20).raw("general.arc", 11).zeros(2);
  EXPECT_EQ(parse_error(key.b),
            "m.gguf: metadata key 0: string length 20 runs past end of file (13 bytes left)");
  Bytes t = header(1, 0);
  t.str("blk.0.attn_q.weight").u32(2).u64(256).zeros(4);
  EXPECT_EQ(parse_error(t.b), "m.gguf: truncated in tensor info 0 ('blk.0.attn_q.weight')");
}

TEST(BadInput, WrongMagic) {
  auto b = one_tensor_file();
  b[0] = 'G', b[1] = 'G', b[2] = 'M', b[3] = 'L';
  EXPECT_EQ(parse_error(b), "m.gguf: not a GGUF file (bad magic)");
  EXPECT_EQ(parse_error({'G', 'X'}), "m.gguf: not a GGUF file (bad magic)");
  EXPECT_EQ(parse_error({'G', 'G'}), "m.gguf: truncated in header");
}

TEST(BadInput, Version2) {
  EXPECT_EQ(parse_error(header(0, 0, 2).b), "m.gguf: unsupported GGUF version 2 (tern reads v3)");
}

TEST(BadInput, Version4) {
  EXPECT_EQ(parse_error(header(0, 0, 4).b), "m.gguf: unsupported GGUF version 4 (tern reads v3)");
}

TEST(BadInput, TensorOffsetPastEnd) {
  EXPECT_EQ(parse_error(one_tensor_file({8}, kF32, 4096)),
            "m.gguf: tensor 't' data [offset 4096, 32 bytes] runs past end of file (size 96)");
  // Data that starts inside the file but ends outside it.
  EXPECT_CONTAINS(parse_error(one_tensor_file({8}, kF32, 0, 31)), "runs past end of file (size 95)");
  // An offset so large that offset + size wraps around.
  EXPECT_CONTAINS(parse_error(one_tensor_file({8}, kF32, UINT64_MAX - 31)), "runs past end of file");
}

TEST(BadInput, MisalignedOffset) {
  EXPECT_EQ(parse_error(one_tensor_file({8}, kF32, 4)),
            "m.gguf: tensor 't' offset 4 is not a multiple of the alignment 32");
}

TEST(BadInput, AbsurdTensorCount) {
  Bytes b = header(1ull << 60, 0);
  b.zeros(64);
  EXPECT_CONTAINS(parse_error(b.b), "tensor count 1152921504606846976 is impossible");
}

TEST(BadInput, AbsurdKvCount) {
  Bytes b = header(0, UINT64_MAX);
  b.zeros(64);
  EXPECT_CONTAINS(parse_error(b.b), "metadata count 18446744073709551615 is impossible");
}

TEST(BadInput, AbsurdStringLength) {
  Bytes b = header(0, 1);
  b.u64(1ull << 62).zeros(16);
  EXPECT_EQ(parse_error(b.b),
            "m.gguf: metadata key 0: string length 4611686018427387904 runs past end of file "
            "(16 bytes left)");
  Bytes v = header(0, 1);
  v.str("k").u32(kString).u64(UINT64_MAX).zeros(4);
  EXPECT_CONTAINS(parse_error(v.b), "string length 18446744073709551615 runs past end of file");
}

TEST(BadInput, AbsurdArrayCount) {
  Bytes b = header(0, 1);
  b.str("a").u32(kArray).u32(kU32).u64(1ull << 62).zeros(16);
  EXPECT_EQ(parse_error(b.b),
            "m.gguf: metadata key 'a': array of 4611686018427387904 u32 runs past end of file "
            "(16 bytes left)");
  Bytes s = header(0, 1);
  s.str("s").u32(kArray).u32(kString).u64(UINT64_MAX / 4).zeros(16);
  EXPECT_CONTAINS(parse_error(s.b), "array of 4611686018427387903 string runs past end of file");
  // count * 8 would wrap to a small number if multiplied before checking.
  Bytes w = header(0, 1);
  w.str("w").u32(kArray).u32(11).u64((1ull << 61) + 1).zeros(16);
  EXPECT_CONTAINS(parse_error(w.b), "runs past end of file");
}

TEST(BadInput, ZeroDims) {
  EXPECT_EQ(parse_error(one_tensor_file({})),
            "m.gguf: tensor 't' has 0 dimensions (expected 1 to 4)");
}

TEST(BadInput, FiveDims) {
  EXPECT_EQ(parse_error(one_tensor_file({8, 1, 1, 1, 1})),
            "m.gguf: tensor 't' has 5 dimensions (expected 1 to 4)");
}

TEST(BadInput, ZeroDimension) {
  EXPECT_EQ(parse_error(one_tensor_file({8, 0})), "m.gguf: tensor 't' has a zero dimension [8, 0]");
}

TEST(BadInput, DimsProductOverflows) {
  EXPECT_EQ(parse_error(one_tensor_file({1ull << 32, 1ull << 32})),
            "m.gguf: tensor 't' shape [4294967296, 4294967296] has too many elements");
  // Fits in u64 but not in ggml's int64 element count.
  EXPECT_CONTAINS(parse_error(one_tensor_file({1ull << 63})), "has too many elements");
  // Element count fits, byte count does not.
  EXPECT_CONTAINS(parse_error(one_tensor_file({1ull << 61, 2})), "is too large");
}

TEST(BadInput, RowNotMultipleOfBlock) {
  EXPECT_EQ(parse_error(one_tensor_file({100}, kTQ2_0)),
            "m.gguf: tensor 't' row length 100 is not a multiple of the TQ2_0 block size 256");
}

TEST(BadInput, UnknownTensorType) {
  EXPECT_EQ(parse_error(one_tensor_file({8}, 99)), "m.gguf: tensor 't' has unknown ggml type 99");
  EXPECT_EQ(parse_error(one_tensor_file({8}, 4)), "m.gguf: tensor 't' has unknown ggml type 4");
}

TEST(BadInput, UnknownValueType) {
  Bytes b = header(0, 1);
  b.str("k").u32(13).u32(0);
  EXPECT_EQ(parse_error(b.b), "m.gguf: metadata key 'k' has unknown value type 13");
  Bytes a = header(0, 1);
  a.str("k").u32(kArray).u32(200).u64(0);
  EXPECT_EQ(parse_error(a.b), "m.gguf: metadata key 'k' is an array of unknown value type 200");
}

TEST(BadInput, NestedArray) {
  Bytes b = header(0, 1);
  b.str("k").u32(kArray).u32(kArray).u64(0);
  EXPECT_EQ(parse_error(b.b), "m.gguf: metadata key 'k' is an array of arrays (not supported)");
}

TEST(BadInput, DuplicateKey) {
  Bytes b = header(0, 2);
  b.str("k").u32(kU32).u32(1).str("k").u32(kU32).u32(2);
  EXPECT_EQ(parse_error(b.b), "m.gguf: duplicate metadata key 'k'");
}

TEST(BadInput, DuplicateTensor) {
  Bytes b = header(2, 0);
  b.tensor("t", {8}, kF32, 0).tensor("t", {8}, kF32, 32).pad_to(32).zeros(64);
  EXPECT_EQ(parse_error(b.b), "m.gguf: duplicate tensor 't'");
}

TEST(BadInput, OverlappingTensors) {
  Bytes b = header(2, 0);
  b.tensor("a", {16}, kF32, 0).tensor("b", {8}, kF32, 32).pad_to(32).zeros(64);
  EXPECT_EQ(parse_error(b.b), "m.gguf: tensors 'a' and 'b' overlap");
  Bytes same = header(2, 0);
  same.tensor("a", {8}, kF32, 0).tensor("b", {8}, kF32, 0).pad_to(32).zeros(32);
  EXPECT_EQ(parse_error(same.b), "m.gguf: tensors 'a' and 'b' overlap");
  // Declared out of order but disjoint is fine.
  Bytes swapped = header(2, 0);
  swapped.tensor("a", {8}, kF32, 32).tensor("b", {8}, kF32, 0).pad_to(32).zeros(64);
  EXPECT_EQ(parse_error(swapped.b), "<no error>");
}

TEST(BadInput, BadAlignment) {
  auto with_alignment = [](uint32_t type, uint32_t value) {
    Bytes b = header(0, 1);
    b.str("general.alignment").u32(type).u32(value);
    return parse_error(b.b);
  };
  EXPECT_EQ(with_alignment(kU32, 0), "m.gguf: general.alignment 0 is not a power of two");
  EXPECT_EQ(with_alignment(kU32, 48), "m.gguf: general.alignment 48 is not a power of two");
  EXPECT_EQ(with_alignment(5, 64), "m.gguf: general.alignment has type i32, expected u32");
  EXPECT_EQ(with_alignment(kU32, 64), "<no error>");
}

TEST(BadInput, HostileNamesStayOneShortLine) {
  Bytes b = header(0, 2);
  b.str("a\nb").u32(kU32).u32(1).str("a\nb").u32(kU32).u32(2);
  EXPECT_EQ(parse_error(b.b), "m.gguf: duplicate metadata key 'a?b'");
  Bytes t = header(1, 0);
  t.tensor(std::string(5000, 'x'), {8}, 99, 0).pad_to(32).zeros(32);
  const std::string msg = parse_error(t.b);
  EXPECT_CONTAINS(msg, "xxx...' has unknown ggml type 99");
  EXPECT_LT(msg.size(), 200u);
}

TEST(BadInput, DirectoryInsteadOfFile) {
  const auto dir = scratch_dir().string();
  EXPECT_EQ(open_error(dir), dir + ": is a directory, not a regular file");
}

TEST(BadInput, MissingFile) {
  const auto path = (scratch_dir() / "absent.gguf").string();
  EXPECT_EQ(open_error(path), path + ": not found");
}

// open(2) on a FIFO blocks until a writer appears; tern must not.
TEST(BadInput, FifoIsRefusedWithoutBlocking) {
  const auto path = (scratch_dir() / "pipe.gguf").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(open_error(path), path + ": is a FIFO, not a regular file");
  EXPECT_EQ(open_error("/dev/null"), "/dev/null: is a character device, not a regular file");
}

TEST(BadInput, OpenReportsParseErrorsWithPath) {
  const auto path = (scratch_dir() / "v2.gguf").string();
  write_all(path, header(0, 0, 2).b);
  EXPECT_EQ(open_error(path), path + ": unsupported GGUF version 2 (tern reads v3)");
}

}  // namespace
}  // namespace tern::gguf::test
