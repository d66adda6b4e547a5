#include "tern/aligned_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

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

}  // namespace
}  // namespace tern
