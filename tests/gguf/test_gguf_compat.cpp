// Format cross-checks against encoders other than tern's own Writer: bytes
// assembled field by field from the spec, and the Python-made fuzz seeds.
#include "gguf_test_util.h"

namespace tern::gguf::test {
namespace {

TEST(Compat, WriterOutputMatchesSpecByteForByte) {
  const auto path = (scratch_dir() / "w.gguf").string();
  const std::vector<uint8_t> data(66, 0x11);
  {
    Writer w(path);
    w.set("general.architecture", Value::string("bitnet"));
    w.set("bitnet.block_count", Value::u32(30));
    w.set("scores", Value::f32_array(std::vector<float>{1.0f}));
    w.add_tensor("t", TensorType::TQ2_0, {256});
    w.write_header();
    w.write_tensor("t", data);
    w.finish();
  }
  Bytes want = header(1, 3);
  want.str("general.architecture").u32(8).str("bitnet");
  want.str("bitnet.block_count").u32(4).u32(30);
  want.str("scores").u32(9).u32(6).u64(1).u32(0x3f800000);  // 1.0f
  want.tensor("t", {256}, 35, 0).pad_to(32);
  want.raw(data.data(), data.size()).pad_to(32);
  EXPECT_EQ(read_all(path), want.b);
}

TEST(Compat, WriterEmitsNonDefaultAlignmentAsU32) {
  const auto path = (scratch_dir() / "a.gguf").string();
  {
    Writer w(path, 64);
    w.finish();
  }
  Bytes want = header(0, 1);
  want.str("general.alignment").u32(4).u32(64).pad_to(64);
  EXPECT_EQ(read_all(path), want.b);
}

TEST(Compat, AnyNonZeroBoolByteIsTrue) {
  Bytes b = header(0, 2);
  b.str("t").u32(7).u8(2).str("f").u32(7).u8(0);
  std::vector<uint8_t> bytes = b.b;
  File f = File::parse(bytes, "b.gguf");
  EXPECT_TRUE(f.get("t").as_bool("t"));
  EXPECT_EQ(f.get("t").u, 1u);  // normalised, so a Writer can copy it
  EXPECT_FALSE(f.get("f").as_bool("f"));
}

fs::path corpus(const char* name) { return fs::path(TERN_SOURCE_DIR) / "tests/fuzz/corpus/gguf" / name; }

TEST(Compat, PythonSeedMetadataOnly) {
  File f = File::open(corpus("metadata_only.gguf").string());
  EXPECT_EQ(f.get("general.architecture").as_string("a"), "bitnet");
  EXPECT_EQ(f.get("i8").as_int("i8"), -7);
  EXPECT_EQ(f.get("u16").as_uint("u16"), 600u);
  EXPECT_EQ(f.get("i16").as_int("i16"), -600);
  EXPECT_EQ(f.get("u32").as_uint("u32"), 70000u);
  EXPECT_EQ(f.get("i32").as_int("i32"), -70000);
  EXPECT_EQ(f.get("f32").as_float("f32"), 0.5);
  EXPECT_TRUE(f.get("bool").as_bool("bool"));
  EXPECT_EQ(f.get("u64").as_uint("u64"), 1ull << 40);
  EXPECT_EQ(f.get("i64").as_int("i64"), -(1ll << 40));
  EXPECT_EQ(f.get("f64").as_float("f64"), 2.5);
  EXPECT_EQ(f.get("tokens").as_string_array("t"), (std::vector<std::string>{"<s>", "</s>", "a"}));
  EXPECT_EQ(f.get("scores").as_f32_array("s"), (std::vector<float>{0.f, -1.f, 2.f}));
  EXPECT_EQ(f.get("types").as_i32_array("t"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(f.get("bytes").as_u8_array("b").size(), 2u);
}

TEST(Compat, PythonSeedTensors) {
  File f = File::open(corpus("tensors.gguf").string());
  ASSERT_EQ(f.tensors().size(), 3u);
  const TensorType tq2[] = {TensorType::TQ2_0};
  const uint64_t dims[] = {256, 2};
  const TensorInfo& t = f.tensor("token_embd.weight", tq2, dims);
  EXPECT_EQ(t.nbytes, 132u);
  // make_corpus.py fills byte i of a tensor with (i * 37 + len(name)) & 0xff.
  for (uint64_t k = 0; k < t.nbytes; ++k)
    ASSERT_EQ(t.data[k], static_cast<uint8_t>(k * 37 + t.name.size())) << k;
  EXPECT_EQ(f.tensors()[1].offset, 160u);
  EXPECT_EQ(f.tensors()[2].type, TensorType::F16);
}

TEST(Compat, PythonSeedAligned64) {
  File f = File::open(corpus("aligned64.gguf").string());
  EXPECT_EQ(f.alignment(), 64u);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[0].nbytes, 108u);
  EXPECT_EQ(f.tensors()[1].offset, 128u);
  EXPECT_EQ(f.tensors()[1].data[3], static_cast<uint8_t>(3 * 37 + 1));
}

}  // namespace
}  // namespace tern::gguf::test
