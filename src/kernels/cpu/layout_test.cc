#include "kernels/cpu/layout.h"

#include <gtest/gtest.h>

#include <cstring>

#include "kernels/cpu/test_util.h"

namespace nnfuse {
namespace layout_test {

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

// Ranks 3 and 5 store [N, spatial..., C]; float32 through oneDNN's reorder, int64 through the
// blocked transpose.
TEST(CpuLayout, ChannelsLastOfRanksThreeAndFive) {
  for (const Dims& shape : {Dims{2, 3, 7}, Dims{2, 3, 2, 3, 4}}) {
    Tensor f = testing::random_tensor(shape, 2);
    Tensor i(DType::kInt64, shape);
    for (int64_t k = 0; k < i.numel(); ++k) i.data<int64_t>()[k] = k * 7 - 5;
    for (const Tensor& t : {f, i}) {
      Tensor n = to_layout(t, Layout::kNHWC);
      EXPECT_EQ(n.layout(), Layout::kNHWC);
      const int64_t c = shape[1], inner = t.numel() / (shape[0] * c);
      const size_t es = dtype_size(t.dtype());
      const auto* p = static_cast<const std::byte*>(t.raw());
      const auto* q = static_cast<const std::byte*>(n.raw());
      for (int64_t b = 0; b < shape[0]; ++b) {
        for (int64_t ch = 0; ch < c; ++ch) {
          for (int64_t s = 0; s < inner; ++s) {
            ASSERT_EQ(std::memcmp(q + ((b * inner + s) * c + ch) * es,
                                  p + ((b * c + ch) * inner + s) * es, es),
                      0);
          }
        }
      }
      Tensor back = to_layout(n, Layout::kPlain);
      EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.nbytes()), 0);
    }
  }
  EXPECT_EQ(storage_dims({2, 3, 7}, Layout::kNHWC), (Dims{2, 7, 3}));
  EXPECT_EQ(storage_dims({2, 3, 4, 5, 6}, Layout::kNHWC), (Dims{2, 4, 5, 6, 3}));
  EXPECT_EQ(storage_dims({2, 3}, Layout::kNHWC), (Dims{2, 3}));
  EXPECT_EQ(storage_axis(1, 5, Layout::kNHWC), 4u);
  EXPECT_EQ(storage_axis(2, 5, Layout::kNHWC), 1u);
  EXPECT_EQ(storage_axis(2, 3, Layout::kNHWC), 1u);
  EXPECT_EQ(storage_axis(1, 4, Layout::kNHWC), 3u);
  EXPECT_EQ(storage_axis(3, 4, Layout::kNHWC), 2u);
}

}  // namespace layout_test
}  // namespace nnfuse
