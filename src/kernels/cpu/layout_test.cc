#include "kernels/cpu/layout.h"

#include <gtest/gtest.h>

#include "kernels/cpu/test_util.h"

namespace nnfuse {
namespace {

TEST(CpuLayout, NhwcRoundTripAndElementOrder) {
  Tensor t = testing::random_tensor({2, 3, 4, 5}, 1);
  Tensor n = to_layout(t, Layout::kNHWC);
  EXPECT_EQ(n.layout(), Layout::kNHWC);
  EXPECT_EQ(n.shape(), t.shape());
  // Element (b, c, h, w) lives at ((b * H + h) * W + w) * C + c.
  const float* p = t.data<float>();
  const float* q = n.data<float>();
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 5; ++w)
          ASSERT_EQ(q[((b * 4 + h) * 5 + w) * 3 + c], p[((b * 3 + c) * 4 + h) * 5 + w]);
  Tensor back = to_layout(n, Layout::kPlain);
  testing::expect_close(back, t, 0, 0);
}

}  // namespace
}  // namespace nnfuse
