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
#include "tern/context.h"
#include "tern/model.h"
#include "tern/quant.h"
#include "tern/tokenizer.h"

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
  tern::Context ctx(*m);
  auto s = ctx.forward(kTokens, 0, true);
  return {s.begin(), s.end()};
}

// The one-line error loading `path` gives ("loaded" if it loads).
std::string load_error(const std::string& path) {
  try {
    tern::Model::load(path);
  } catch (const tern::Error& e) {
    return e.what();
  }
  return "loaded";
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
// the per-tensor scale at their logical width (tern's pack pads the FFN's
// down projection to whole 256-blocks; I2_S stores its 128-blocks), file
// type 40, no tokenizer.ggml.pre.
// `keep_modes`: keep tern's activation mode and scale rule (a llama-arch
// pack would otherwise run as float), dropping only its tokenizer rules.
void write_i2s_from(const std::string& src, const std::string& dst,
                    const std::function<void(std::vector<int8_t>&)>& corrupt = nullptr, bool keep_modes = false) {
  const tern::gguf::File f = tern::gguf::File::open(src);
  const std::string arch = f.get("general.architecture").as_string("arch");
  const int64_t ffn = f.get(arch + ".feed_forward_length").as_int("ffn");
  std::vector<std::string> drop = {"tokenizer.ggml.pre", "general.file_type"};
  if (keep_modes) drop.push_back("tern.tokenizer.hf_pipeline");
  tern::test::rewrite_file_dims(
      src, dst, drop,
      [&](const tern::gguf::TensorInfo& t, const tern::gguf::File& file, TensorType& type,
          std::vector<uint64_t>& dims, std::vector<uint8_t>& bytes) {
        if (t.type != TensorType::TQ2_0) return;
        const int64_t K = int64_t(t.dims[0]), M = int64_t(t.dims[1]);
        const bool down = t.name.find("ffn_down") != std::string::npos;
        const int64_t width = down ? ffn : K;  // the logical width, <= K
        const float scale = file.get("tern.scale." + t.name).as_f32_array("scale").at(0);
        std::vector<int8_t> row(static_cast<size_t>(K));                  // [K] one stored row
        std::vector<int8_t> trits(static_cast<size_t>(M * width));        // [M][width]
        for (int64_t r = 0; r < M; ++r) {
          tern::unpack_ternary_row(TensorType::TQ2_0, t.data + r * (K / 256) * 66, K, row.data());
          std::copy_n(row.begin(), width, trits.begin() + r * width);
        }
        if (corrupt) corrupt(trits);
        bytes = encode_i2s(trits, scale);
        type = TensorType::I2_S;
        dims[0] = uint64_t(width);
      },
      keep_modes ? tern::test::TernKeys::Keep : tern::test::TernKeys::Drop);
}
void write_i2s(const std::string& family, const std::string& dst,
               const std::function<void(std::vector<int8_t>&)>& corrupt = nullptr) {
  write_i2s_from(fixture(family, "tq2_0.gguf"), dst, corrupt);
}

// Lossless: the same trits and the same f32 scale as tern's own pack, on
// every kernel (those that prepare their own layout free the repack).
void expect_i2s_runs_as_tq2_pack(const std::string& family) {
  const fs::path dir = tern::test::test_dir();
  const std::string i2s = (dir / ("ggml-model-i2_s-" + family + ".gguf")).string();
  write_i2s(family, i2s);
  auto m = tern::Model::load(i2s);
  EXPECT_EQ(m->config().family->gguf_arch, "bitnet-b1.58");
  EXPECT_EQ(m->config().act_mode, tern::ActMode::Int8);  // the family's, no tern key
  EXPECT_TRUE(m->config().tied_output);
  int ran = 0;
  for (const tern::KernelSet* k : tern::all_kernel_sets()) {
    if (!k->available(tern::cpu_features()) || !tern::kernel_supports(*k, tern::ActMode::Int8)) continue;
    EXPECT_EQ(logits(i2s, k->name), logits(fixture(family, "tq2_0.gguf"), k->name)) << k->name;
    ++ran;
  }
  EXPECT_GE(ran, 2);  // scalar and at least one SIMD set
}

TEST(ForeignGguf, BitnetCppI2sRunsExactlyAsTheTq2Pack) { expect_i2s_runs_as_tq2_pack("bitnet-2b4t"); }

// An FFN of 384: I2_S rows of three 128-blocks, which bitnet.cpp writes and
// runs; tern pads them to two TQ2_0 blocks, as its own pack of the same
// checkpoint does, and gets the same logits.
TEST(ForeignGguf, BitnetCppI2sRowsOfWhole128BlocksRunAsTheTq2Pack) {
  expect_i2s_runs_as_tq2_pack("bitnet-2b4t-i384");
  auto m = tern::Model::load(fixture("bitnet-2b4t-i384", "tq2_0.gguf"));
  EXPECT_EQ(m->config().hidden_dim, 384);
}

// PrismML's PTQ1_0 (base-3 trits), Q1_0 (signs) and type 42 holding
// 128-weight blocks, as its fork writes them (tests/tools/gguf_group/
// convert.py, a writer apart from tern's):
// converted to PQ2_0 at load, they give the PQ2_0 file's logits bit for
// bit on every kernel set, the tied group-typed embedding and head included.
TEST(ForeignGguf, PrismPtq1AndQ1RunExactlyAsTheirPq2Files) {
  const std::pair<const char*, const char*> pairs[] = {
      {"ptq1_0.gguf", "pq2_0.gguf"}, {"q1_0.gguf", "binary-pq2_0.gguf"}, {"q2_0-g128.gguf", "pq2_0.gguf"}};
  for (auto [file, same] : pairs) {
    auto m = tern::Model::load(fixture("bonsai", file));
    EXPECT_EQ(m->config().weight_type, TensorType::PQ2_0) << file;  // what the kernels run
    int ran = 0;
    for (const tern::KernelSet* k : tern::all_kernel_sets()) {
      if (!k->available(tern::cpu_features())) continue;
      EXPECT_EQ(logits(fixture("bonsai", file), k->name), logits(fixture("bonsai", same), k->name))
          << file << " on " << k->name;
      ++ran;
    }
    EXPECT_GE(ran, 2);
  }
  // The binary model is another model: the comparison can tell.
  EXPECT_NE(logits(fixture("bonsai", "q1_0.gguf")), logits(fixture("bonsai", "pq2_0.gguf")));
  // And the files are what they say: 28 and 18 bytes per 128 weights.
  const auto f = tern::gguf::File::open(fixture("bonsai", "ptq1_0.gguf"));
  const auto q = tern::gguf::File::open(fixture("bonsai", "q1_0.gguf"));
  EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type, TensorType::PTQ1_0);
  EXPECT_EQ(q.find_tensor("blk.0.attn_q.weight")->type, TensorType::Q1_0);
}

TEST(ForeignGguf, HadamardRotatedPrismFilesAreRefused) {
  const std::string rotated = (tern::test::test_dir() / "hadamard.gguf").string();
  rewrite_file(fixture("bonsai", "ptq1_0.gguf"), rotated, {}, [](auto&, auto&, auto&, auto&) {}, tern::test::TernKeys::Keep,
               {{"prism.hadamard.block_size", tern::gguf::Value::u32(1024)}});
  const std::string e = load_error(rotated);
  EXPECT_NE(e.find("prism.hadamard.block_size"), std::string::npos) << e;
  EXPECT_NE(e.find(rotated), std::string::npos) << e;
}

// bitnet.cpp's 2B-4T file carries Llama 3's vocabulary and no pre name:
// the text must still tokenize as the model's tokenizer does (llama.cpp's
// 'default' rules would not), so its perplexity is the pack's.
TEST(ForeignGguf, BitnetCppI2sWithLlama3VocabularyTokenizesAsThePack) {
  const std::string pack = (tern::test::test_models() / "bpe" / "tq2_0.gguf").string();
  const std::string i2s = (tern::test::test_dir() / "ggml-model-i2_s-llama3.gguf").string();
  write_i2s_from(pack, i2s, nullptr, true);
  const auto file = tern::gguf::File::open(i2s);
  ASSERT_EQ(file.find("tokenizer.ggml.pre"), nullptr);
  ASSERT_EQ(file.find("tern.tokenizer.hf_pipeline"), nullptr);
  const tern::Tokenizer from_i2s(file), from_pack(tern::gguf::File::open(pack));
  ASSERT_EQ(from_i2s.notes().size(), 1u);
  EXPECT_NE(from_i2s.notes()[0].find("Llama 3"), std::string::npos) << from_i2s.notes()[0];
  const std::string text =
      "In the beginning God created the heaven and the earth. 1234567 And God said, Let there be light: "
      "and there was light.\n\n  I'll say it's 3.14159;   they're here!!! \t(Genesis 1:3)";
  const std::vector<int32_t> ids = from_pack.encode(text);
  EXPECT_EQ(from_i2s.encode(text), ids);
  // The same ids give the same logits: the file is the pack, read through I2_S.
  tern::LoadOptions lo;
  auto a = tern::Model::load(i2s, lo), b = tern::Model::load(pack, lo);
  tern::Context ca(*a), cb(*b);
  const auto la = ca.forward(ids, 0, true);
  const auto lb = cb.forward(ids, 0, true);
  EXPECT_TRUE(std::equal(la.begin(), la.end(), lb.begin(), lb.end()));
}

TEST(ForeignGguf, I2sCodeThreeIsRefusedWithTensorAndRow) {
  const fs::path dir = tern::test::test_dir();
  const std::string i2s = (dir / "bad.gguf").string();
  // Trit +2 encodes as code 3; put it at row 1, column 5 of every linear.
  write_i2s("bitnet-2b4t", i2s, [](std::vector<int8_t>& trits) { trits[256 + 5] = 2; });
  const std::string err = load_error(i2s);
  EXPECT_NE(err.find("bad.gguf: tensor 'blk.0.attn_q.weight' row 1 column 5 holds I2_S code 3"),
            std::string::npos)
      << err;
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
  const std::string err = load_error(path);
  EXPECT_NE(err.find("is ik_llama.cpp's IQ2_BN, which tern does not read"), std::string::npos) << err;
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

// llama-quantize's mix for TQ2_0 files: a Q4_K token embedding and a Q6_K
// head. The Q4_K encoder here follows the format (llama.cpp's
// block_q4_K); the decoder follows llama.cpp's dequantize_row_q4_K loop,
// written here apart from tern's, so a misread shows as different logits.
std::vector<uint8_t> encode_q4_k(const std::vector<float>& x) {
  std::vector<uint8_t> out(x.size() / 256 * sizeof(tern::BlockQ4_K));
  for (size_t b = 0; b < x.size() / 256; ++b) {
    const float* v = x.data() + 256 * b;
    float sc[8], mn[8], max_sc = 0, max_mn = 0;
    for (int g = 0; g < 8; ++g) {
      const float lo = std::min(0.0f, *std::min_element(v + 32 * g, v + 32 * g + 32));
      const float hi = *std::max_element(v + 32 * g, v + 32 * g + 32);
      sc[g] = (hi - lo) / 15;
      mn[g] = -lo;
      max_sc = std::max(max_sc, sc[g]);
      max_mn = std::max(max_mn, mn[g]);
    }
    tern::BlockQ4_K blk{};
    blk.d = tern::f32_to_fp16(max_sc / 63);
    blk.dmin = tern::f32_to_fp16(max_mn / 63);
    const float d = tern::fp16_to_f32(blk.d), dmin = tern::fp16_to_f32(blk.dmin);
    int isc[8], imn[8];
    for (int g = 0; g < 8; ++g) {
      isc[g] = d > 0 ? std::min(63, int(std::lround(sc[g] / d))) : 0;
      imn[g] = dmin > 0 ? std::min(63, int(std::lround(mn[g] / dmin))) : 0;
    }
    for (int j = 0; j < 4; ++j) {
      blk.scales[j] = uint8_t(isc[j] | ((isc[j + 4] >> 4) << 6));
      blk.scales[j + 4] = uint8_t(imn[j] | ((imn[j + 4] >> 4) << 6));
      blk.scales[j + 8] = uint8_t((isc[j + 4] & 0xF) | ((imn[j + 4] & 0xF) << 4));
    }
    for (int i = 0; i < 256; ++i) {
      const int g = i / 32;
      const float step = d * float(isc[g]);
      const int q = step > 0 ? std::clamp(int(std::lround((v[i] + dmin * float(imn[g])) / step)), 0, 15) : 0;
      blk.qs[32 * (i / 64) + i % 32] |= uint8_t(i % 64 < 32 ? q : q << 4);
    }
    std::memcpy(out.data() + b * sizeof blk, &blk, sizeof blk);
  }
  return out;
}

std::vector<float> decode_q4_k(const uint8_t* bytes, size_t n) {
  std::vector<float> y(n);
  float* out = y.data();
  for (size_t b = 0; b < n / 256; ++b) {
    tern::BlockQ4_K x;
    std::memcpy(&x, bytes + b * sizeof x, sizeof x);
    const float d = tern::fp16_to_f32(x.d), min = tern::fp16_to_f32(x.dmin);
    const uint8_t* q = x.qs;
    auto get = [&](int j, uint8_t& sc, uint8_t& m) {
      if (j < 4) {
        sc = x.scales[j] & 63;
        m = x.scales[j + 4] & 63;
      } else {
        sc = uint8_t((x.scales[j + 4] & 0xF) | ((x.scales[j - 4] >> 6) << 4));
        m = uint8_t((x.scales[j + 4] >> 4) | ((x.scales[j] >> 6) << 4));
      }
    };
    for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
      uint8_t sc, m;
      get(is, sc, m);
      const float d1 = d * sc, m1 = min * m;
      get(is + 1, sc, m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l) *out++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *out++ = d2 * (q[l] >> 4) - m2;
    }
  }
  return y;
}

std::vector<float> floats_of(const tern::gguf::TensorInfo& t) {
  std::vector<float> v(t.n_elements());
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, t.data + 2 * i, 2);
    v[i] = t.type == TensorType::F16 ? tern::fp16_to_f32(h) : tern::bf16_to_f32(h);
  }
  return v;
}

TEST(ForeignGguf, LlamaQuantizeMixQ4kEmbeddingQ6kHead) {
  const fs::path dir = tern::test::test_dir();
  const std::string mix = (dir / "q4k-q6k.gguf").string(), want = (dir / "f32-q6k.gguf").string();
  // `as_f32`: the embedding as the F32 values the decoder above gives.
  auto write = [&](const std::string& dst, bool as_f32) {
    rewrite_file(fixture("llama3-1.58", "tq2_0.gguf"), dst, {},
                 [&](const tern::gguf::TensorInfo& t, const tern::gguf::File&, TensorType& type,
                     std::vector<uint8_t>& bytes) {
                   if (t.name == "token_embd.weight") {
                     ASSERT_TRUE(t.type == TensorType::F16 || t.type == TensorType::BF16);
                     bytes = encode_q4_k(floats_of(t));
                     type = TensorType::Q4_K;
                     if (as_f32) {
                       const std::vector<float> v = decode_q4_k(bytes.data(), t.n_elements());
                       const std::vector<float> src = floats_of(t);
                       double err = 0, mag = 0;  // the encoder is sane: 4 bits, about 7% RMS
                       for (size_t i = 0; i < v.size(); ++i) {
                         err += double(v[i] - src[i]) * double(v[i] - src[i]);
                         mag += double(src[i]) * double(src[i]);
                       }
                       ASSERT_LT(std::sqrt(err / mag), 0.15);
                       bytes.assign(reinterpret_cast<const uint8_t*>(v.data()),
                                    reinterpret_cast<const uint8_t*>(v.data() + v.size()));
                       type = TensorType::F32;
                     }
                   } else if (t.name == "output.weight") {
                     const std::vector<float> v = floats_of(t);
                     bytes.assign(v.size() / 256 * sizeof(tern::BlockQ6_K), 0);
                     tern::quantize_q6_k_row(v.data(), int64_t(v.size()),
                                             reinterpret_cast<tern::BlockQ6_K*>(bytes.data()));
                     type = TensorType::Q6_K;
                   }
                 });
  };
  write(mix, false);
  write(want, true);
  const auto got = logits(mix), expect = logits(want);
  ASSERT_EQ(got.size(), expect.size());
  EXPECT_EQ(got, expect);
  EXPECT_NE(got, logits(fixture("llama3-1.58", "tq2_0.gguf")));  // the mix did change the model
}

// A tied model's embedding is its head, which tern does not multiply in Q4_K.
TEST(ForeignGguf, TiedQ4kHeadIsRefused) {
  const std::string path = (tern::test::test_dir() / "tied-q4k.gguf").string();
  rewrite_file(fixture("bitnet-2b4t", "tq2_0.gguf"), path, {},
               [&](const tern::gguf::TensorInfo& t, const tern::gguf::File&, TensorType& type,
                   std::vector<uint8_t>& bytes) {
                 if (t.name != "token_embd.weight") return;
                 bytes = encode_q4_k(floats_of(t));
                 type = TensorType::Q4_K;
               });
  const std::string err = load_error(path);
  EXPECT_NE(err.find("tied-q4k.gguf: tensor 'token_embd.weight' is Q4_K and, with no 'output.weight', "
                     "also the output head"),
            std::string::npos)
      << err;
}

INSTANTIATE_TEST_SUITE_P(Families, LlamaCppTq, ::testing::Values("bitnet-2b4t", "1bitllm"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
