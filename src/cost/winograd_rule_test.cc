#include "cost/winograd_rule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>

namespace nnfuse::cost {
namespace winograd_rule_test {

TEST(WinogradRule, PaysWithEnoughChannelsAndPixels) {
  EXPECT_TRUE(winograd_pays(64, 64, 28, 28));
  EXPECT_TRUE(winograd_pays(96, 208, 14, 14));
  EXPECT_FALSE(winograd_pays(64, 64, 14, 14));   // 14x14 wants 96 output channels
  EXPECT_FALSE(winograd_pays(128, 32, 56, 56));  // DenseNet's growth convs
  EXPECT_FALSE(winograd_pays(16, 64, 28, 28));   // few inputs
  EXPECT_FALSE(winograd_pays(256, 256, 7, 7));   // 7x7 maps
  // Measured where the answer depends on the machine, whatever the rule says.
  EXPECT_TRUE(winograd_measured(64, 32, 28, 28));
  EXPECT_TRUE(winograd_measured(96, 208, 14, 14));
  EXPECT_FALSE(winograd_measured(64, 32, 7, 7));
  EXPECT_FALSE(winograd_measured(16, 64, 28, 28));
}

TEST(WinogradRule, ScratchpadBound) {
  // A scratchpad that stays in cache never stops Winograd; a larger one must be paid for by
  // the work: 64 direct FLOPs per scratchpad byte.
  const auto flops = [](double cin, double cout, double hw) {
    return 2 * cin * cout * 9 * hw * hw;
  };
  // On a machine whose last-level cache holds 8 MiB (or less, or is unknown: 0).
  const int64_t mib = int64_t{1} << 20;
  for (int64_t cache : {int64_t{0}, 4 * mib, 8 * mib}) {
    EXPECT_TRUE(winograd_scratch_pays(flops(32, 64, 147), 155648, cache));
    EXPECT_TRUE(winograd_scratch_pays(1.0, 8 * mib, cache));
    EXPECT_FALSE(winograd_scratch_pays(1.0, 8 * mib + 1, cache));
    // Inception-v3's 80 -> 192 conv on 71x71, 27 MiB: direct. VGG's 256 -> 256 on 56x56,
    // 29 MiB: Winograd.
    EXPECT_FALSE(winograd_scratch_pays(flops(80, 192, 71), 27060224, cache));
    EXPECT_TRUE(winograd_scratch_pays(flops(256, 256, 56), 30179328, cache));
    EXPECT_TRUE(winograd_scratch_pays(64.0 * 30179328, 30179328, cache));
    EXPECT_FALSE(winograd_scratch_pays(63.9 * 30179328, 30179328, cache));
  }
  // With a 32 MiB last-level cache, a scratchpad that fits it.
  EXPECT_TRUE(winograd_scratch_pays(flops(128, 128, 32), 11010048, 32 * mib));
  EXPECT_TRUE(winograd_scratch_pays(flops(80, 192, 71), 27060224, 32 * mib));
  EXPECT_FALSE(winograd_scratch_pays(1.0, 32 * mib + 1, 32 * mib));
  EXPECT_TRUE(winograd_scratch_pays(64.0 * 40 * mib, 40 * mib, 32 * mib));
}

TEST(WinogradRule, LastLevelCacheIsReadOnce) {
  // sysfs's size of cpu0's highest cache level, or 0 where it has none; the same every call.
  const int64_t bytes = last_level_cache_bytes();
  EXPECT_GE(bytes, 0);
  EXPECT_EQ(bytes, last_level_cache_bytes());
  std::ifstream probe("/sys/devices/system/cpu/cpu0/cache/index0/size");
  if (probe) {
    EXPECT_GT(bytes, 0);
  }
}

}  // namespace winograd_rule_test
}  // namespace nnfuse::cost
