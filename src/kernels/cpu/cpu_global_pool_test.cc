#include <gtest/gtest.h>

#include "kernels/cpu/onednn_test_util.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace {

using testing::BuiltKernel;
using testing::expect_matches_ref;
using testing::random_tensor;
using testing::run_kernel;

constexpr float kTol = 1e-5f;

TEST(CpuGlobalPool, MatchesTheReferenceInBothLayouts) {
  // Channel counts off the vector width, one pixel, more pixels than one block (256) and than
  // one thread's share, several images.
  uint32_t seed = 1;
  for (Layout layout : {Layout::kPlain, Layout::kNHWC}) {
    for (const Dims& x : {Dims{2, 17, 7, 9}, Dims{1, 64, 7, 7}, Dims{1, 3, 1, 1},
                          Dims{1, 960, 24, 24}, Dims{3, 40, 37, 41}, Dims{1, 1, 300, 301}}) {
      SCOPED_TRACE(dims_str(x) + std::string(" ") + layout_name(layout));
      expect_matches_ref("cpu.global_pool", "GlobalAveragePool",
                         {{random_tensor(x, seed++), false, layout}}, {}, 1, kTol, kTol);
    }
  }
  for (const Dims& x : {Dims{2, 5, 11}, Dims{1, 3, 4, 5, 6}}) {
    SCOPED_TRACE(dims_str(x));
    expect_matches_ref("cpu.global_pool", "GlobalAveragePool", {{random_tensor(x, seed++)}}, {}, 1,
                       kTol, kTol);
  }
}

TEST(CpuGlobalPool, LargeOffsetMeansStayAccurate) {
  // 147,456 pixels of 1000 + noise: float sums of that many terms would drift; blocks of 256
  // in float, added in double, stay within float rounding of the mean.
  Tensor x = random_tensor({1, 16, 384, 384}, 5, 999.0f, 1001.0f);
  expect_matches_ref("cpu.global_pool", "GlobalAveragePool", {{x, false, Layout::kPlain}}, {}, 1,
                     1e-6f, 1e-6f);
  expect_matches_ref("cpu.global_pool", "GlobalAveragePool", {{x, false, Layout::kNHWC}}, {}, 1,
                     1e-6f, 1e-6f);
}

TEST(CpuGlobalPool, RunsAheadOfOnednnAndWritesPlain) {
  const Tensor x = to_layout(random_tensor({2, 5, 3, 4}, 1), Layout::kNHWC);
  EXPECT_EQ(run_kernel("GlobalAveragePool", {{x, false, Layout::kNHWC}}).kernel, "cpu.global_pool");
  BuiltKernel k("cpu.global_pool", "GlobalAveragePool", {{x, false, Layout::kNHWC}});
  ASSERT_TRUE(k.accepted);
  EXPECT_EQ(k.output_layout(), Layout::kPlain);
  const Tensor y = k.run({x});
  EXPECT_EQ(y.layout(), Layout::kPlain);
  EXPECT_EQ(y.shape(), (Dims{2, 5, 1, 1}));
}

TEST(CpuGlobalPool, DeclinesWhatItDoesNotRun) {
  BuiltKernel ints("cpu.global_pool", "GlobalAveragePool",
                   {{Tensor(DType::kInt32, {1, 2, 3, 3}), false}});
  EXPECT_FALSE(ints.accepted);
  BuiltKernel rank2("cpu.global_pool", "GlobalAveragePool", {{random_tensor({4, 5}, 2), false}});
  EXPECT_FALSE(rank2.accepted);
  BuiltKernel empty("cpu.global_pool", "GlobalAveragePool",
                    {{random_tensor({1, 2, 0, 3}, 3), false}});
  EXPECT_FALSE(empty.accepted);
}

}  // namespace
}  // namespace nnfuse
