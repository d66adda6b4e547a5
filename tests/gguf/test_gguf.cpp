// Type traits, Writer -> File round trips, and lookup error messages.
#include <cstdint>
#include <limits>

#include "gguf_test_util.h"

namespace tern::gguf::test {
namespace {

TEST(TypeTraits, MatchGgmlBlockGeometry) {
  struct Row { TensorType t; const char* name; uint32_t block, size; };
  const Row rows[] = {
      {TensorType::F32, "F32", 1, 4},        {TensorType::F16, "F16", 1, 2},
      {TensorType::BF16, "BF16", 1, 2},      {TensorType::Q4_0, "Q4_0", 32, 18},
      {TensorType::Q4_1, "Q4_1", 32, 20},    {TensorType::Q5_0, "Q5_0", 32, 22},
      {TensorType::Q5_1, "Q5_1", 32, 24},    {TensorType::Q8_0, "Q8_0", 32, 34},
      {TensorType::Q8_1, "Q8_1", 32, 36},    {TensorType::Q2_K, "Q2_K", 256, 84},
      {TensorType::Q3_K, "Q3_K", 256, 110},  {TensorType::Q4_K, "Q4_K", 256, 144},
      {TensorType::Q5_K, "Q5_K", 256, 176},  {TensorType::Q6_K, "Q6_K", 256, 210},
      {TensorType::Q8_K, "Q8_K", 256, 292},  {TensorType::I8, "I8", 1, 1},
      {TensorType::I16, "I16", 1, 2},        {TensorType::I32, "I32", 1, 4},
      {TensorType::I64, "I64", 1, 8},        {TensorType::F64, "F64", 1, 8},
      {TensorType::TQ1_0, "TQ1_0", 256, 54}, {TensorType::TQ2_0, "TQ2_0", 256, 66},
      // Foreign ternary types: bitnet.cpp's I2_S (true geometry, plus a
      // 32-byte tail per tensor) and ik_llama.cpp's BitNet types.
      {TensorType::I2_S, "I2_S", 128, 32},   {TensorType::IQ1_BN, "IQ1_BN", 64, 13},
      {TensorType::IQ2_BN, "IQ2_BN", 64, 16},
      // Group-scaled: ggml's Q1_0 and Q2_0, PrismML's PQ2_0 and PTQ1_0.
      {TensorType::Q1_0, "Q1_0", 128, 18},   {TensorType::Q2_0, "Q2_0", 64, 18},
      {TensorType::PQ2_0, "PQ2_0", 128, 34}, {TensorType::PTQ1_0, "PTQ1_0", 128, 28},
  };
  for (const auto& r : rows) {
    EXPECT_STREQ(traits(r.t).name, r.name);
    EXPECT_EQ(traits(r.t).block_size, r.block) << r.name;
    EXPECT_EQ(traits(r.t).type_size, r.size) << r.name;
    EXPECT_TRUE(known_type(static_cast<uint32_t>(r.t)));
  }
  EXPECT_EQ(traits(TensorType::I2_S).tensor_tail, 32u);
  EXPECT_EQ(traits(TensorType::TQ2_0).tensor_tail, 0u);
  for (uint32_t id : {4u, 5u, 16u, 29u, 31u, 33u, 37u, 133u, 1000u}) EXPECT_FALSE(known_type(id)) << id;
  EXPECT_THROW(traits(static_cast<TensorType>(4)), tern::Error);
}

TEST(TypeTraits, RowBytes) {
  EXPECT_EQ(row_bytes(TensorType::TQ2_0, 2560), 10u * 66);
  EXPECT_EQ(row_bytes(TensorType::TQ1_0, 256), 54u);
  EXPECT_EQ(row_bytes(TensorType::F16, 7), 14u);
  EXPECT_THROW(row_bytes(TensorType::TQ2_0, 100), tern::Error);
  EXPECT_THROW(row_bytes(TensorType::F32, std::numeric_limits<uint64_t>::max()), tern::Error);
}

// Two type-42 tensors of [1024, 2] laid out at `second`: 576 bytes each as
// ggml's Q2_0 (64-weight blocks), 544 in the 128-weight blocks PrismML's
// April 2026 Bonsai files hold under the same id.
std::vector<uint8_t> two_q2_0_tensors(uint64_t second, size_t data_bytes) {
  Bytes b = header(2, 0);
  b.tensor("a", {1024, 2}, 42, 0).tensor("b", {1024, 2}, 42, second).pad_to(32).zeros(data_bytes);
  return b.b;
}

TEST(Q2_0Layout, SizesTellTheTwoLayoutsApart) {
  // Packed at 544 bytes: the 64-weight reading overlaps, the 128-weight one fits.
  std::vector<uint8_t> bonsai = two_q2_0_tensors(544, 2 * 544);
  const File f = File::parse(bonsai, "bonsai.gguf");
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(t.type, TensorType::PQ2_0) << t.name;
    EXPECT_TRUE(t.declared_q2_0);
    EXPECT_EQ(t.nbytes, 544u);
  }
  // Packed at 576: ggml's layout fits and is kept.
  std::vector<uint8_t> mainline = two_q2_0_tensors(576, 2 * 576);
  const File g = File::parse(mainline, "q2_0.gguf");
  for (const auto& t : g.tensors()) {
    EXPECT_EQ(t.type, TensorType::Q2_0) << t.name;
    EXPECT_FALSE(t.declared_q2_0);
    EXPECT_EQ(t.nbytes, 576u);
  }
}

TEST(Q2_0Layout, AFileThatFitsNeitherKeepsTheDeclaredLayoutsError) {
  // Overlapping under both readings: the error is the declared layout's.
  std::vector<uint8_t> bad = two_q2_0_tensors(512, 2 * 576);
  try {
    File::parse(bad, "bad.gguf");
    ADD_FAILURE() << "parsed";
  } catch (const tern::Error& e) {
    EXPECT_STREQ(e.what(), "bad.gguf: tensors 'a' and 'b' overlap");
  }
  // Cut short of even the 128-weight size: runs past the end as Q2_0.
  std::vector<uint8_t> cut = two_q2_0_tensors(544, 544 + 100);
  try {
    File::parse(cut, "cut.gguf");
    ADD_FAILURE() << "parsed";
  } catch (const tern::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut.gguf: tensor 'b' data [offset 544, 576 bytes] runs past end"),
              std::string::npos) << e.what();
  }
}

TEST(RoundTrip, EveryValueType) {
  const auto path = (scratch_dir() / "v.gguf").string();
  const std::vector<std::string> strs = {"", "hello", std::string("nul\0inside", 10), "ü"};
  const std::vector<float> fs = {0.f, -1.5f, 3.25e10f, std::numeric_limits<float>::denorm_min()};
  const std::vector<int32_t> is = {INT32_MIN, -1, 0, INT32_MAX};
  const std::vector<uint8_t> us = {0, 1, 254, 255};
  Value u16s;  // an array type without a factory
  u16s.type = ValueType::ARRAY;
  u16s.array_type = ValueType::U16;
  u16s.count = 2;
  u16s.raw = {0x34, 0x12, 0xff, 0xff};
  {
    Writer w(path);
    w.set("u8", scalar(ValueType::U8, 255));
    w.set("i8", scalar(ValueType::I8, 0, -128));
    w.set("u16", scalar(ValueType::U16, 65535));
    w.set("i16", scalar(ValueType::I16, 0, -32768));
    w.set("u32", Value::u32(4000000000u));
    w.set("i32", Value::i32(-2000000000));
    w.set("f32", Value::f32(0.1f));
    w.set("bool", Value::boolean(true));
    w.set("string", Value::string("BitNet b1.58"));
    w.set("u64", Value::u64(UINT64_MAX));
    w.set("i64", scalar(ValueType::I64, 0, INT64_MIN));
    w.set("f64", scalar(ValueType::F64, 0, 0, 1e300));
    w.set("strs", Value::string_array(strs));
    w.set("f32s", Value::f32_array(fs));
    w.set("i32s", Value::i32_array(is));
    w.set("u8s", Value::u8_array(us));
    w.set("u16s", u16s);
    w.set("empty", Value::f32_array({}));
    w.set("false", Value::boolean(false));
    w.finish();
  }
  File f = File::open(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_TRUE(f.tensors().empty());
  const char* order[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "u64",
                         "i64", "f64", "strs", "f32s", "i32s", "u8s", "u16s", "empty", "false"};
  ASSERT_EQ(f.metadata().size(), std::size(order));  // no general.alignment at 32
  for (size_t k = 0; k < std::size(order); ++k) EXPECT_EQ(f.metadata()[k].first, order[k]);

  EXPECT_EQ(f.get("u8").type, ValueType::U8);
  EXPECT_EQ(f.get("u8").as_uint("u8"), 255u);
  EXPECT_EQ(f.get("i8").as_int("i8"), -128);
  EXPECT_EQ(f.get("u16").as_uint("u16"), 65535u);
  EXPECT_EQ(f.get("i16").as_int("i16"), -32768);
  EXPECT_EQ(f.get("u32").type, ValueType::U32);
  EXPECT_EQ(f.get("u32").as_uint("u32"), 4000000000u);
  EXPECT_EQ(f.get("i32").as_int("i32"), -2000000000);
  EXPECT_EQ(f.get("f32").type, ValueType::F32);
  EXPECT_EQ(static_cast<float>(f.get("f32").as_float("f32")), 0.1f);
  EXPECT_TRUE(f.get("bool").as_bool("bool"));
  EXPECT_FALSE(f.get("false").as_bool("false"));
  EXPECT_EQ(f.get("string").as_string("string"), "BitNet b1.58");
  EXPECT_EQ(f.get("u64").as_uint("u64"), UINT64_MAX);
  EXPECT_EQ(f.get("i64").as_int("i64"), INT64_MIN);
  EXPECT_EQ(f.get("f64").type, ValueType::F64);
  EXPECT_EQ(f.get("f64").as_float("f64"), 1e300);
  EXPECT_EQ(f.get("strs").as_string_array("strs"), strs);
  EXPECT_EQ(f.get("strs").array_size(), 4u);
  EXPECT_EQ(f.get("f32s").as_f32_array("f32s"), fs);
  EXPECT_EQ(f.get("i32s").as_i32_array("i32s"), is);
  const auto u8v = f.get("u8s").as_u8_array("u8s");
  EXPECT_EQ(std::vector<uint8_t>(u8v.begin(), u8v.end()), us);
  EXPECT_EQ(f.get("u16s").array_type, ValueType::U16);
  EXPECT_EQ(f.get("u16s").raw, u16s.raw);
  EXPECT_EQ(f.get("empty").array_size(), 0u);
  EXPECT_TRUE(f.get("empty").as_f32_array("empty").empty());
}

TEST(RoundTrip, TensorsByteForByte) {
  const auto path = (scratch_dir() / "t.gguf").string();
  struct Spec { std::string name; TensorType type; std::vector<uint64_t> dims; };
  const std::vector<Spec> specs = {
      {"a.f32", TensorType::F32, {5, 3}},         // 60 bytes: padding follows
      {"b.f16", TensorType::F16, {7}},            // 14 bytes
      {"c.tq2", TensorType::TQ2_0, {512, 3}},     // 6 blocks of 66
      {"d.tq1", TensorType::TQ1_0, {256, 2, 2}},  // 4 blocks of 54
      {"e.f32", TensorType::F32, {8}},
  };
  std::vector<std::vector<uint8_t>> data;
  {
    Writer w(path);
    w.set("general.architecture", Value::string("bitnet"));
    for (const auto& s : specs) w.add_tensor(s.name, s.type, s.dims);
    w.write_header();
    for (size_t k = 0; k < specs.size(); ++k) {
      const auto& s = specs[k];
      uint64_t rows = 1;
      for (size_t d = 1; d < s.dims.size(); ++d) rows *= s.dims[d];
      data.push_back(random_bytes(row_bytes(s.type, s.dims[0]) * rows, 7 + k));
      w.write_tensor(s.name, data.back());
    }
    w.finish();
  }
  File f = File::open(path);
  ASSERT_EQ(f.tensors().size(), specs.size());
  for (size_t k = 0; k < specs.size(); ++k) {
    const TensorInfo& t = f.tensors()[k];
    EXPECT_EQ(t.name, specs[k].name);
    EXPECT_EQ(t.type, specs[k].type);
    EXPECT_EQ(t.dims, specs[k].dims);
    EXPECT_EQ(t.nbytes, data[k].size());
    EXPECT_EQ(t.offset % 32, 0u);
    // The mapping is page-aligned, so aligned file offsets give aligned pointers.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 32, 0u) << t.name;
    ASSERT_EQ(std::vector<uint8_t>(t.data, t.data + t.nbytes), data[k]) << t.name;
    EXPECT_EQ(f.find_tensor(t.name), &t);
  }
  EXPECT_EQ(f.tensors()[2].n_elements(), 1536u);
  EXPECT_EQ(f.tensors()[3].shape_string(), "[256, 2, 2]");
  // The writer pads after the last tensor too, like llama.cpp.
  EXPECT_EQ(f.file_size() % 32, 0u);
  // Parsing a copy in memory gives the same layout.
  const auto bytes = read_all(path);
  EXPECT_EQ(bytes.size(), f.file_size());
  File g = File::parse(bytes, "copy");
  ASSERT_EQ(g.tensors().size(), specs.size());
  for (size_t k = 0; k < specs.size(); ++k) {
    EXPECT_EQ(g.tensors()[k].data - g.tensors()[0].data, f.tensors()[k].data - f.tensors()[0].data);
    EXPECT_EQ(g.tensors()[k].offset, f.tensors()[k].offset);
  }
}

TEST(RoundTrip, CustomAlignment) {
  const auto path = (scratch_dir() / "a.gguf").string();
  const auto x = random_bytes(4 * 10, 1), y = random_bytes(4 * 3, 2);
  {
    Writer w(path, 256);
    w.set("k", Value::u32(1));
    w.add_tensor("x", TensorType::F32, {10});
    w.add_tensor("y", TensorType::F32, {3});
    w.write_header();
    w.write_tensor("x", x);
    w.write_tensor("y", y);
    w.finish();
  }
  File f = File::open(path);
  EXPECT_EQ(f.alignment(), 256u);
  EXPECT_EQ(f.get("general.alignment").as_uint("general.alignment"), 256u);
  EXPECT_EQ(f.get("general.alignment").type, ValueType::U32);
  EXPECT_EQ(f.tensors()[1].offset, 256u);
  for (const auto& t : f.tensors()) EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 256, 0u);
  EXPECT_EQ(std::vector<uint8_t>(f.tensors()[1].data, f.tensors()[1].data + 12), y);
}

TEST(RoundTrip, MovedFileKeepsMapping) {
  const auto path = (scratch_dir() / "m.gguf").string();
  const auto x = random_bytes(64, 3);
  {
    Writer w(path);
    w.add_tensor("x", TensorType::I8, {64});
    w.write_header();
    w.write_tensor("x", x);
    w.finish();
  }
  File a = File::open(path);
  File b = std::move(a);
  File c = File::open(path);
  c = std::move(b);
  ASSERT_EQ(c.tensors().size(), 1u);
  EXPECT_EQ(std::vector<uint8_t>(c.tensors()[0].data, c.tensors()[0].data + 64), x);
  EXPECT_EQ(c.path(), path);
}

// Released pages (a repacked tensor, a verified one) must read back the
// same when touched again; ranges outside the file are ignored.
TEST(RoundTrip, ReleasedTensorReadsBackTheSame) {
  const auto path = (scratch_dir() / "r.gguf").string();
  const auto x = random_bytes(3 << 16, 5);
  {
    Writer w(path);
    w.add_tensor("x", TensorType::I8, {x.size()});
    w.write_header();
    w.write_tensor("x", x);
    w.finish();
  }
  const File f = File::open(path);
  const TensorInfo& t = f.tensors()[0];
  ASSERT_EQ(std::vector<uint8_t>(t.data, t.data + t.nbytes), x);
  f.release(t);
  f.release(t.data + 100, 70000);
  f.release(x.data(), x.size());  // not the file's memory: ignored
  EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.nbytes), x);
}

class Lookup : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = (scratch_dir() / "l.gguf").string();
    Writer w(path);
    w.set("llama.context_length", Value::u32(4096));
    w.set("general.name", Value::string("tiny"));
    w.set("neg", Value::i32(-5));
    w.set("tokens", Value::string_array({"a", "b"}));
    w.add_tensor("token_embd.weight", TensorType::TQ2_0, {256, 4096});
    w.write_header();
    w.write_tensor("token_embd.weight", std::vector<uint8_t>(66 * 4096));
    w.finish();
    bytes_ = read_all(path);
    file_ = std::make_unique<File>(File::parse(bytes_, "m.gguf"));
  }
  static std::string error_of(auto&& fn) {
    try {
      fn();
    } catch (const tern::Error& e) {
      return e.what();
    }
    return "<no error>";
  }
  std::vector<uint8_t> bytes_;
  std::unique_ptr<File> file_;
};

TEST_F(Lookup, MissingKey) {
  EXPECT_EQ(error_of([&] { file_->get("llama.block_count"); }),
            "m.gguf: missing key 'llama.block_count'");
  EXPECT_EQ(file_->find("llama.block_count"), nullptr);
  EXPECT_EQ(file_->get("llama.context_length").as_uint("llama.context_length"), 4096u);
}

TEST_F(Lookup, ValueTypeMismatchNamesKey) {
  const File& f = *file_;
  EXPECT_EQ(error_of([&] { f.get("general.name").as_uint("general.name"); }),
            "general.name: expected an unsigned integer, got string");
  EXPECT_EQ(error_of([&] { f.get("llama.context_length").as_string("llama.context_length"); }),
            "llama.context_length: expected string, got u32");
  EXPECT_EQ(error_of([&] { f.get("tokens").as_f32_array("tokens"); }),
            "tokens: expected array of f32, got array of string");
  EXPECT_EQ(error_of([&] { f.get("neg").as_uint("neg"); }),
            "neg: expected a non-negative integer, got -5");
  EXPECT_EQ(error_of([&] { f.get("neg").as_float("neg"); }), "neg: expected f32 or f64, got i32");
  EXPECT_EQ(error_of([&] { f.get("neg").as_bool("neg"); }), "neg: expected bool, got i32");
  EXPECT_EQ(f.get("neg").as_int("neg"), -5);
  EXPECT_EQ(f.get("llama.context_length").as_int("x"), 4096);
  EXPECT_EQ(Value::u64(UINT64_MAX).as_uint("x"), UINT64_MAX);
  EXPECT_THROW(Value::u64(UINT64_MAX).as_int("x"), tern::Error);
}

TEST_F(Lookup, TensorMissing) {
  EXPECT_EQ(error_of([&] { file_->tensor("output_norm.weight", {}, {}); }),
            "m.gguf: missing tensor 'output_norm.weight'");
  EXPECT_EQ(file_->find_tensor("output_norm.weight"), nullptr);
}

TEST_F(Lookup, TensorWrongType) {
  const TensorType two[] = {TensorType::F32, TensorType::F16};
  const uint64_t dims[] = {256, 4096};
  EXPECT_EQ(error_of([&] { file_->tensor("token_embd.weight", two, dims); }),
            "m.gguf: tensor 'token_embd.weight' has type TQ2_0, expected F32 or F16");
  const TensorType three[] = {TensorType::F32, TensorType::F16, TensorType::BF16};
  EXPECT_EQ(error_of([&] { file_->tensor("token_embd.weight", three, dims); }),
            "m.gguf: tensor 'token_embd.weight' has type TQ2_0, expected F32, F16 or BF16");
}

TEST_F(Lookup, TensorWrongShape) {
  const TensorType types[] = {TensorType::TQ2_0};
  const uint64_t dims[] = {256, 32000};
  EXPECT_EQ(error_of([&] { file_->tensor("token_embd.weight", types, dims); }),
            "m.gguf: tensor 'token_embd.weight' has shape [256, 4096], expected [256, 32000]");
  const uint64_t dims3[] = {256, 4096, 1};
  EXPECT_THROW(file_->tensor("token_embd.weight", types, dims3), tern::Error);
  const uint64_t ok[] = {256, 4096};
  const TensorInfo& t = file_->tensor("token_embd.weight", types, ok);
  EXPECT_EQ(t.nbytes, 66u * 4096);
}

}  // namespace
}  // namespace tern::gguf::test
