// The repacked code layouts (kernels/code_layout.h) against their written
// definitions, computed here from the trits: every layout the AVX-512 and
// NEON sets prepare, from both stored types, so a faster repack cannot
// move a code. Portable code: it runs on every machine, not only where the
// sets that use the layouts do.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "../../kernels/code_layout.h"
#include "kernel_test_util.h"

namespace tern {
namespace {

using kernels_detail::CodeLayout;

// Row r of m in `layout`, as code_layout.h defines it.
std::vector<uint8_t> expected_row(const test::Matrix& m, int64_t r, CodeLayout layout) {
  const int64_t K = m.K;
  std::vector<uint8_t> out(size_t(kernels_detail::code_row_bytes(layout, K)), 0);
  auto code = [&](int64_t k) { return unsigned(m.trits[size_t(r * K + k)] + 1); };
  if (layout == CodeLayout::Base3x64) {
    for (int64_t g = 0; g < (K + 319) / 320; ++g)
      for (int64_t i = 0; i < 64; ++i) {
        unsigned v = 0;
        for (int64_t n = 0; n < 5; ++n) {
          const int64_t k = 320 * g + 64 * n + i;
          v = v * 3 + (k < K ? code(k) : 0);
        }
        out[size_t(64 * g + i)] = uint8_t((v * 256 + 242) / 243);
      }
    return out;
  }
  for (int64_t k = 0; k < K; ++k) {
    const int64_t byte = layout == CodeLayout::Chunk64 ? 64 * (k / 256) + k % 64 : k / 4;
    const int64_t shift = layout == CodeLayout::Chunk64 ? 2 * ((k % 256) / 64) : 2 * (k % 4);
    out[size_t(byte)] = uint8_t(out[size_t(byte)] | code(k) << shift);
  }
  return out;
}

struct Case {
  gguf::TensorType type;
  CodeLayout layout;
};

TEST(CodeLayout, RowsMatchTheirDefinition) {
  const Case cases[] = {{gguf::TensorType::TQ2_0, CodeLayout::Chunk64},
                        {gguf::TensorType::TQ2_0, CodeLayout::Linear},
                        {gguf::TensorType::TQ1_0, CodeLayout::Chunk64},
                        {gguf::TensorType::TQ1_0, CodeLayout::Linear},
                        {gguf::TensorType::TQ1_0, CodeLayout::Base3x64}};
  for (const Case& c : cases)
    for (int64_t K : {256, 512, 1280, 2560}) {
      const int64_t M = 7;
      const test::Matrix m = test::make_matrix(c.type, M, K, test::Rows::Mixed, uint32_t(K));
      const int64_t rb = kernels_detail::code_row_bytes(c.layout, K);
      std::vector<uint8_t> got(size_t(M * rb));
      kernels_detail::pack_code_rows(m.plain, c.layout, 0, M, got.data());
      // The grouped layout of pack_codes holds the same rows.
      const auto packed = kernels_detail::pack_codes(m.plain, c.layout);
      TernaryMatrix w = m.plain;
      w.packed = packed.get();
      const uint8_t* codes = kernels_detail::layout_body(w, c.layout);
      ASSERT_NE(codes, nullptr);
      for (int64_t r = 0; r < M; ++r) {
        const std::vector<uint8_t> want = expected_row(m, r, c.layout);
        const std::string what = "type " + std::to_string(int(c.type)) + " layout " +
                                 std::to_string(int(c.layout)) + " K " + std::to_string(K) +
                                 " row " + std::to_string(r);
        EXPECT_EQ(std::memcmp(got.data() + r * rb, want.data(), want.size()), 0) << what;
        const uint8_t* first = kernels_detail::packed_row(codes, c.layout, K, r);
        for (int64_t u = 0; u < rb / kernels_detail::kUnitBytes; ++u)
          EXPECT_EQ(std::memcmp(first + u * kernels_detail::kPackedUnitStride,
                                want.data() + u * kernels_detail::kUnitBytes,
                                kernels_detail::kUnitBytes),
                    0)
              << what << " unit " << u;
      }
    }
}

// A TQ2_0 byte of all ones holds four code-3 fields; the 2-bit layouts keep
// them as 3 (kernels then count them as +2, as scalar's unpack does).
TEST(CodeLayout, Tq2CodeThreeStaysThree) {
  test::Matrix m = test::make_matrix(gguf::TensorType::TQ2_0, 1, 256, test::Rows::Zero, 1);
  m.data[5] = 0xFF;  // columns 5, 37, 69, 101
  for (CodeLayout layout : {CodeLayout::Chunk64, CodeLayout::Linear}) {
    std::vector<uint8_t> got(64);
    kernels_detail::pack_code_rows(m.plain, layout, 0, 1, got.data());
    for (int64_t k = 0; k < 256; ++k) {
      const int64_t byte = layout == CodeLayout::Chunk64 ? k % 64 : k / 4;
      const int64_t shift = layout == CodeLayout::Chunk64 ? 2 * (k / 64) : 2 * (k % 4);
      const unsigned want = (k == 5 || k == 37 || k == 69 || k == 101) ? 3 : 1;
      EXPECT_EQ((got[size_t(byte)] >> shift) & 3u, want) << "layout " << int(layout) << " k " << k;
    }
  }
}

}  // namespace
}  // namespace tern
