// GGUF files written by other engines: bitnet.cpp's I2_S files (the official
// BitNet b1.58 2B-4T release), llama.cpp-made TQ files without tern's keys,
// and ik_llama.cpp's BitNet types. Each foreign file here is rewritten from
// a tern pack of a family fixture (make_test_models) in the other engine's
// conventions, with encoders written in this test from those engines'
// format, so a wrong reading in tern shows up as different logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "support/gguf_rewrite.h"
#include "support/test_env.h"
#include "tern/error.h"
#include "tern/gguf.h"
#include "tern/kernels.h"
#include "tern/model.h"
#include "tern/quant.h"

namespace fs = std::filesystem;
using tern::gguf::TensorType;
using tern::test::rewrite_file;

namespace {

const std::vector<int32_t> kTokens{1, 17, 250, 3, 99, 400, 7, 7, 12, 300, 45, 2, 64};

std::string fixture(const std::string& family, const std::string& file) {
  return (tern::test::test_models() / ("family-" + family) / file).string();
}

std::vector<float> logits(const std::string& path, const std::string& kernel = "") {
  tern::LoadOptions lo;
  lo.kernel = kernel;
  auto m = tern::Model::load(path, lo);
  auto s = m->forward(kTokens, 0, true);
  return {s.begin(), s.end()};
}

// bitnet.cpp's quantize_i2_s layout, from its source: the tensor flattened
// row after row into 128-weight blocks of 32 bytes, weight j of a block in
// byte j % 32 at bits 6 - 2 * (j / 32), code = trit + 1; then 32 bytes whose
// first four are the f32 scale.
std::vector<uint8_t> encode_i2s(const std::vector<int8_t>& trits, float scale) {
  std::vector<uint8_t> out(trits.size() / 4 + 32, 0);
  for (size_t i = 0; i < trits.size(); ++i) {
    const size_t block = i / 128, j = i % 128;
    out[32 * block + j % 32] |= uint8_t((trits[i] + 1) << (6 - 2 * (j / 32)));
  }
  std::memcpy(&out[trits.size() / 4], &scale, sizeof scale);
  return out;
}

// The tern TQ2_0 pack of a family as bitnet.cpp writes it: I2_S linears with
// the per-tensor scale, file type 40, no tokenizer.ggml.pre.
void write_i2s(const std::string& family, const std::string& dst,
               const std::function<void(std::vector<int8_t>&)>& corrupt = nullptr) {
  rewrite_file(fixture(family, "tq2_0.gguf"), dst, {"tokenizer.ggml.pre", "general.file_type"},
               [&](const tern::gguf::TensorInfo& t, const tern::gguf::File& src, TensorType& type,
                   std::vector<uint8_t>& bytes) {
                 if (t.type != TensorType::TQ2_0) return;
                 const int64_t K = int64_t(t.dims[0]), M = int64_t(t.dims[1]);
                 const float scale = src.get("tern.scale." + t.name).as_f32_array("scale").at(0);
                 std::vector<int8_t> trits(size_t(M * K));
                 for (int64_t r = 0; r < M; ++r)
                   tern::unpack_ternary_row(TensorType::TQ2_0, t.data + r * (K / 256) * 66, K,
                                            &trits[size_t(r * K)]);
                 if (corrupt) corrupt(trits);
                 bytes = encode_i2s(trits, scale);
                 type = TensorType::I2_S;
               });
}

TEST(ForeignGguf, BitnetCppI2sRunsExactlyAsTheTq2Pack) {
  const fs::path dir = tern::test::test_dir();
  const std::string i2s = (dir / "ggml-model-i2_s.gguf").string();
  write_i2s("bitnet-2b4t", i2s);
  auto m = tern::Model::load(i2s);
  EXPECT_EQ(m->config().family->gguf_arch, "bitnet-b1.58");
  EXPECT_EQ(m->config().act_mode, tern::ActMode::Int8);  // the family's, no tern key
  EXPECT_TRUE(m->config().tied_output);
  // Lossless: the same trits and the same f32 scale as tern's own pack, on
  // every kernel (those that prepare their own layout free the repack).
  int ran = 0;
  for (const tern::KernelSet* k : tern::all_kernel_sets()) {
    if (!k->available(tern::cpu_features()) || !tern::kernel_supports(*k, tern::ActMode::Int8)) continue;
    EXPECT_EQ(logits(i2s, k->name), logits(fixture("bitnet-2b4t", "tq2_0.gguf"), k->name)) << k->name;
    ++ran;
  }
  EXPECT_GE(ran, 2);  // scalar and at least one SIMD set
}

TEST(ForeignGguf, I2sCodeThreeIsRefusedWithTensorAndRow) {
  const fs::path dir = tern::test::test_dir();
  const std::string i2s = (dir / "bad.gguf").string();
  // Trit +2 encodes as code 3; put it at row 1, column 5 of every linear.
  write_i2s("bitnet-2b4t", i2s, [](std::vector<int8_t>& trits) { trits[256 + 5] = 2; });
  try {
    tern::Model::load(i2s);
    FAIL() << "loaded a file with I2_S code 3";
  } catch (const tern::Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.gguf: tensor 'blk.0.attn_q.weight' row 1 column 5 "
                                         "holds I2_S code 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(ForeignGguf, IkBitnetTypeIsNamedInTheError) {
  const fs::path dir = tern::test::test_dir();
  const std::string path = (dir / "iq2_bn.gguf").string();
  rewrite_file(fixture("bitnet-2b4t", "tq2_0.gguf"), path, {},
               [](const tern::gguf::TensorInfo& t, const tern::gguf::File&, TensorType& type,
                  std::vector<uint8_t>& bytes) {
                 if (t.type != TensorType::TQ2_0) return;
                 type = TensorType::IQ2_BN;  // 16 bytes per 64 weights
                 bytes.assign(t.n_elements() / 64 * 16, 0);
               });
  try {
    tern::Model::load(path);
    FAIL() << "loaded IQ2_BN";
  } catch (const tern::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is ik_llama.cpp's IQ2_BN, which tern does not read"),
              std::string::npos)
        << e.what();
  }
}

// A file as llama.cpp's converter and llama-quantize leave it: no tern.*
// keys, so the row scales come from the fp16 block scales and the
// activation mode from the family.
class LlamaCppTq : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppTq, RunsWithoutTernKeys) {
  const fs::path dir = tern::test::test_dir();
  const std::string stripped = (dir / "llamacpp.gguf").string();
  const std::string fp16_scales = (dir / "fp16_scales.gguf").string();
  const std::string tern_pack = fixture(GetParam(), "tq2_0.gguf");
  const auto same = [](auto&, auto&, auto&, auto&) {};
  rewrite_file(tern_pack, stripped, {}, same);
  // tern's own file with its exact scales rounded as the blocks hold them:
  // the stripped file must run exactly like it.
  rewrite_file(tern_pack, fp16_scales, {}, same, tern::test::TernKeys::Fp16Scales);
  const auto want = logits(fp16_scales);
  const auto got = logits(stripped);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Families, LlamaCppTq, ::testing::Values("bitnet-2b4t", "1bitllm"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
