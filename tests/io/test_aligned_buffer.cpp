#include "tern/aligned_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "tern/error.h"

namespace tern {
namespace {

uintptr_t address(const AlignedBuffer& b) { return reinterpret_cast<uintptr_t>(b.get()); }

TEST(AlignedBuffer, SmallBuffersAreCacheLineAligned) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(100000), kHugePageBytes - 1}) {
    const AlignedBuffer b = alloc_aligned(bytes, "a test buffer");
    ASSERT_NE(b.get(), nullptr) << bytes;
    EXPECT_EQ(address(b) % kCacheLineBytes, 0u) << bytes;
    EXPECT_EQ(b.get_deleter().align, kCacheLineBytes) << bytes;
    std::memset(b.get(), 0xA5, bytes);  // the whole request is writable (ASan checks the bound)
  }
}

TEST(AlignedBuffer, LargeBuffersStartOnAHugePage) {
  for (size_t bytes : {kHugePageBytes, kHugePageBytes + 1, 3 * kHugePageBytes}) {
    const AlignedBuffer b = alloc_aligned(bytes, "a test buffer");
    EXPECT_EQ(address(b) % kHugePageBytes, 0u) << bytes;
    EXPECT_EQ(b.get_deleter().align, kHugePageBytes) << bytes;
    // Rounded up to whole huge pages, so the last page is never shared.
    const size_t total = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    std::memset(b.get(), 0x5A, total);
  }
}

// Sizes whose rounding up wraps around: refused before the allocator sees
// them (a size the allocator refuses would abort under ASan, whose
// allocator does not return null by default).
TEST(AlignedBuffer, ImpossibleSizesNameWhatWasAsked) {
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  for (size_t bytes : {kMax, kMax - kHugePageBytes + 2}) {
    try {
      (void)alloc_aligned(bytes, "the read-roof buffer");
      FAIL() << "allocated " << bytes << " bytes";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("cannot allocate"), std::string::npos) << msg;
      EXPECT_NE(msg.find("for the read-roof buffer"), std::string::npos) << msg;
      EXPECT_NE(msg.find(" GiB "), std::string::npos) << msg;  // sized as the other refusal is
    }
  }
}

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

// The value cache's allocation: zeros, and on a 2 MiB boundary of a
// mapping of its own when huge pages are asked for and the size has one.
TEST(ZeroedBuffer, HugeOnesAreZeroedMappingsOnAHugePage) {
  for (size_t bytes : {kHugePageBytes, kHugePageBytes + 1, 3 * kHugePageBytes - 64}) {
    const ZeroedBuffer b = alloc_zeroed(bytes, true);
    ASSERT_NE(b.get(), nullptr) << bytes;
    const size_t total = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
#if defined(__linux__)
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % kHugePageBytes, 0u) << bytes;
    EXPECT_TRUE(b.get_deleter().mapped) << bytes;
    EXPECT_EQ(b.get_deleter().bytes, total) << bytes;
#endif
    EXPECT_TRUE(all_zero(b.get(), bytes)) << bytes;
    std::memset(b.get(), 0x5A, b.get_deleter().mapped ? total : bytes);
  }
}

TEST(ZeroedBuffer, SmallOrPlainOnesComeFromCalloc) {
  for (auto [bytes, huge] : {std::pair{size_t(1), true}, {kHugePageBytes - 1, true}, {size_t(100000), false},
                             {3 * kHugePageBytes, false}}) {
    const ZeroedBuffer b = alloc_zeroed(bytes, huge);
    ASSERT_NE(b.get(), nullptr) << bytes;
    EXPECT_FALSE(b.get_deleter().mapped) << bytes;
    EXPECT_TRUE(all_zero(b.get(), bytes)) << bytes;
    std::memset(b.get(), 0xA5, bytes);
  }
  EXPECT_EQ(alloc_zeroed(0, true).get(), nullptr);
}

// Sizes whose rounding, or the extra huge page of the mapping, wraps around.
TEST(ZeroedBuffer, ImpossibleHugeSizesThrowBadAlloc) {
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  for (size_t bytes : {kMax, kMax - kHugePageBytes + 2, kMax / kHugePageBytes * kHugePageBytes})
    EXPECT_THROW((void)alloc_zeroed(bytes, true), std::bad_alloc) << bytes;
}

}  // namespace
}  // namespace tern
