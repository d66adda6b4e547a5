// Memory for prepared layouts (kernels/layout.h): layouts cut from shared
// huge-page slabs must never overlap, must stay valid however the others
// are freed, and must keep the alignment the kernels assume.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "../../kernels/layout.h"

namespace tern {
namespace {

using kernels_detail::alloc_layout;

void fill(void* p, size_t bytes, uint8_t tag) { std::memset(p, tag, bytes); }

bool holds(const void* p, size_t bytes, uint8_t tag) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; i += 61)
    if (b[i] != tag) return false;
  return b[bytes - 1] == tag;
}

TEST(Layout, SizesAcrossEveryPathAreAlignedAndDisjoint) {
  // Below the slab threshold, in it (several slabs' worth), and huge.
  const std::vector<size_t> sizes = {64, 4096, 65536, 600 * 1024, 1536 * 1024, (2u << 20) - 1,
                                     2u << 20, 5u << 20};
  std::vector<std::shared_ptr<void>> live;
  std::vector<size_t> live_bytes;
  for (int round = 0; round < 12; ++round)
    for (size_t bytes : sizes) {
      live.push_back(alloc_layout(bytes));
      live_bytes.push_back(bytes);
      ASSERT_NE(live.back(), nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(live.back().get()) % 64, 0u) << bytes;
      if (bytes >= (64u << 10)) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(live.back().get()) % 4096, 0u) << bytes;
      }
      fill(live.back().get(), bytes, uint8_t(live.size()));
    }
  for (size_t i = 0; i < live.size(); ++i)
    EXPECT_TRUE(holds(live[i].get(), live_bytes[i], uint8_t(i + 1))) << "layout " << i << " was overwritten";
}

TEST(Layout, SlabPiecesOutliveTheirNeighbours) {
  // 0.6 MB pieces: about 50 per 32 MiB slab, so 150 span several slabs.
  constexpr size_t kBytes = 600 * 1024;
  std::vector<std::shared_ptr<void>> live;
  for (int i = 0; i < 150; ++i) {
    live.push_back(alloc_layout(kBytes));
    fill(live.back().get(), kBytes, uint8_t(i));
  }
  for (size_t i = 0; i < live.size(); i += 2) live[i].reset();  // every other one
  std::vector<std::shared_ptr<void>> more;
  for (int i = 0; i < 100; ++i) {
    more.push_back(alloc_layout(kBytes));
    fill(more.back().get(), kBytes, uint8_t(200 + i % 50));
  }
  for (size_t i = 1; i < live.size(); i += 2) EXPECT_TRUE(holds(live[i].get(), kBytes, uint8_t(i))) << i;
  for (size_t i = 0; i < more.size(); ++i) EXPECT_TRUE(holds(more[i].get(), kBytes, uint8_t(200 + i % 50))) << i;
  // The last owner of a slab may be any piece: ASan reports a use after
  // free or a leak if a slab is freed early or never.
  live.clear();
  for (size_t i = 0; i < more.size(); ++i) EXPECT_TRUE(holds(more[i].get(), kBytes, uint8_t(200 + i % 50))) << i;
}

}  // namespace
}  // namespace tern
