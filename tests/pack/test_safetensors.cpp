#include "pack/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "pack_test_util.h"

using namespace tern::pack;
using namespace tern::pack::testing;

namespace {

std::string write_st(const std::string& path, const std::string& header,
                     const std::vector<uint8_t>& data, int64_t claimed_len = -1) {
  std::vector<uint8_t> b(8);
  uint64_t n = claimed_len >= 0 ? static_cast<uint64_t>(claimed_len) : header.size();
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(n >> (8 * i));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  write_bytes(path, b);
  return path;
}

template <typename T>
void append(std::vector<uint8_t>& v, T x) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &x, sizeof(T));
  v.insert(v.end(), b, b + sizeof(T));
}

}  // namespace

TEST(PackSafetensors, ReadsF32F16Bf16Exactly) {
  auto dir = test_dir();
  std::vector<uint8_t> data;
  append<float>(data, 1.5f);
  append<float>(data, -0.25f);
  append<uint16_t>(data, 0x3C00);  // fp16 1.0
  append<uint16_t>(data, 0xC000);  // fp16 -2.0
  append<uint16_t>(data, 0x3F80);  // bf16 1.0
  append<uint16_t>(data, 0x4049);  // bf16 3.140625
  auto path = write_st(dir + "/a.safetensors",
                       R"({"__metadata__":{"format":"pt"},)"
                       R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F16","shape":[1,2],"data_offsets":[8,12]},)"
                       R"("c":{"dtype":"BF16","shape":[2],"data_offsets":[12,16]}})",
                       data);
  auto f = SafetensorsFile::open(path);
  ASSERT_EQ(f->tensors().size(), 3u);
  std::vector<float> out(2);
  for (const auto& t : f->tensors()) {
    f->read_f32(t, out.data());
    if (t.name == "a") {
      EXPECT_EQ(out, (std::vector<float>{1.5f, -0.25f}));
    } else if (t.name == "b") {
      EXPECT_EQ(out, (std::vector<float>{1.0f, -2.0f}));
      EXPECT_EQ(t.shape_string(), "[1, 2]");
    } else {
      EXPECT_EQ(out, (std::vector<float>{1.0f, 3.140625f}));
    }
  }
}

TEST(PackSafetensors, HeaderLengthPastEof) {
  auto dir = test_dir();
  auto path = write_st(dir + "/t.safetensors", "{}", {}, 1000);
  auto msg = error_of([&] { SafetensorsFile::open(path); });
  EXPECT_NE(msg.find("t.safetensors: header length 1000 past end of file (size 10)"),
            std::string::npos) << msg;
}

TEST(PackSafetensors, TooSmallForHeader) {
  auto dir = test_dir();
  write_bytes(dir + "/t.safetensors", {1, 2, 3});
  auto msg = error_of([&] { SafetensorsFile::open(dir + "/t.safetensors"); });
  EXPECT_NE(msg.find("too small"), std::string::npos) << msg;
}

TEST(PackSafetensors, DataPastEof) {
  auto dir = test_dir();
  auto path = write_st(dir + "/t.safetensors",
                       R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
                       std::vector<uint8_t>(8));
  auto msg = error_of([&] { SafetensorsFile::open(path); });
  EXPECT_NE(msg.find("tensor 'w' data_offsets [0, 16] past end of data (size 8)"),
            std::string::npos) << msg;
}

TEST(PackSafetensors, BadJsonHeader) {
  auto dir = test_dir();
  auto path = write_st(dir + "/t.safetensors", R"({"w": {"dtype": "F32", )", {});
  auto msg = error_of([&] { SafetensorsFile::open(path); });
  EXPECT_NE(msg.find("t.safetensors: invalid JSON header"), std::string::npos) << msg;
}

TEST(PackSafetensors, SizeMustMatchShape) {
  auto dir = test_dir();
  auto path = write_st(dir + "/t.safetensors",
                       R"({"w":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})",
                       std::vector<uint8_t>(8));
  auto msg = error_of([&] { SafetensorsFile::open(path); });
  EXPECT_NE(msg.find("tensor 'w' has 8 bytes of data, shape [3] BF16 needs 6"), std::string::npos)
      << msg;
}

TEST(PackSafetensors, OverlapRejected) {
  auto dir = test_dir();
  auto path = write_st(dir + "/t.safetensors",
                       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                       std::vector<uint8_t>(12));
  auto msg = error_of([&] { SafetensorsFile::open(path); });
  EXPECT_NE(msg.find("tensors 'a' and 'b' overlap"), std::string::npos) << msg;
}

// The format's other two header rules (the safetensors library enforces
// both): every data byte belongs to a tensor, and no key appears twice.
TEST(PackSafetensors, HolesAndDuplicateKeysRejected) {
  auto dir = test_dir();
  auto hole = write_st(dir + "/hole.safetensors",
                       R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                       std::vector<uint8_t>(12));
  auto msg = error_of([&] { SafetensorsFile::open(hole); });
  EXPECT_NE(msg.find("bytes between tensors 'a' and 'b' belong to no tensor"), std::string::npos) << msg;
  auto tail = write_st(dir + "/tail.safetensors", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                       std::vector<uint8_t>(9));
  msg = error_of([&] { SafetensorsFile::open(tail); });
  EXPECT_NE(msg.find("the data section holds bytes that belong to no tensor"), std::string::npos) << msg;
  auto dup = write_st(dir + "/dup.safetensors",
                      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                      std::vector<uint8_t>(8));
  msg = error_of([&] { SafetensorsFile::open(dup); });
  EXPECT_NE(msg.find("JSON header has the key 'a' twice"), std::string::npos) << msg;
}

TEST(PackSafetensors, UnknownDtypeAndBadShape) {
  auto dir = test_dir();
  auto p1 = write_st(dir + "/a.safetensors",
                     R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})",
                     std::vector<uint8_t>(2));
  EXPECT_NE(error_of([&] { SafetensorsFile::open(p1); }).find("unknown dtype 'Q4'"),
            std::string::npos);
  auto p2 = write_st(dir + "/b.safetensors",
                     R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
                     std::vector<uint8_t>(8));
  EXPECT_NE(error_of([&] { SafetensorsFile::open(p2); }).find("not a non-negative integer"),
            std::string::npos);
  // A shape whose element count overflows must not be trusted.
  auto p3 = write_st(dir + "/c.safetensors",
                     R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                     std::vector<uint8_t>(8));
  EXPECT_NE(error_of([&] { SafetensorsFile::open(p3); }).find("overflows"), std::string::npos);
}

TEST(PackSafetensors, ReadingUnsupportedDtypeThrows) {
  auto dir = test_dir();
  auto path = write_st(dir + "/t.safetensors",
                       R"({"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                       std::vector<uint8_t>(8));
  auto f = SafetensorsFile::open(path);
  std::vector<float> out(1);
  auto msg = error_of([&] { f->read_f32(f->tensors()[0], out.data()); });
  EXPECT_NE(msg.find("t.safetensors: tensor 'x' has unsupported dtype I64"), std::string::npos)
      << msg;
}

TEST(PackSafetensors, ShardedIndex) {
  auto dir = test_dir();
  std::vector<uint8_t> d1, d2;
  append<float>(d1, 7.0f);
  append<float>(d2, 9.0f);
  write_st(dir + "/s1.safetensors", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", d1);
  write_st(dir + "/s2.safetensors", R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", d2);
  write_text(dir + "/model.safetensors.index.json",
             R"({"metadata":{},"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})");
  auto ck = Checkpoint::open(dir);
  ASSERT_NE(ck.find("b"), nullptr);
  EXPECT_EQ(ck.read_f32(*ck.find("b")), std::vector<float>{9.0f});
  EXPECT_EQ(ck.read_f32(*ck.find("a")), std::vector<float>{7.0f});
  EXPECT_NE(ck.label().find("model.safetensors.index.json"), std::string::npos);

  write_text(dir + "/model.safetensors.index.json",
             R"({"weight_map":{"a":"s1.safetensors","c":"s2.safetensors"}})");
  auto msg = error_of([&] { Checkpoint::open(dir); });
  EXPECT_NE(msg.find("s2.safetensors: missing tensor 'c'"), std::string::npos) << msg;

  write_text(dir + "/model.safetensors.index.json", R"({"weight_map":{"a":"../s1.safetensors"}})");
  msg = error_of([&] { Checkpoint::open(dir); });
  EXPECT_NE(msg.find("not a file name"), std::string::npos) << msg;

  write_text(dir + "/model.safetensors.index.json", R"({"weight_map":{"a":"gone.safetensors"}})");
  msg = error_of([&] { Checkpoint::open(dir); });
  EXPECT_NE(msg.find("gone.safetensors: not found"), std::string::npos) << msg;
}

TEST(PackSafetensors, MissingCheckpoint) {
  auto dir = test_dir();
  auto msg = error_of([&] { Checkpoint::open(dir); });
  EXPECT_NE(msg.find("model.safetensors: not found"), std::string::npos) << msg;
}
