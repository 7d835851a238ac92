// cpu.grid_sample against the reference kernel: every mode and padding mode, both corner
// alignments, grid points inside, outside and on the border of the image, a NaN point, both
// opsets' mode names, and a block of points wider than one task.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_grid_sample_test {

using testing::expect_matches_ref;
using testing::FastInput;
using testing::random_tensor;

std::vector<FastInput> inputs(const Dims& x_shape, int64_t oh, int64_t ow, uint32_t seed) {
  Tensor grid = random_tensor({x_shape[0], oh, ow, 2}, seed, -1.4f, 1.4f);
  grid.data<float>()[0] = -1.0f;  // the corners exactly
  grid.data<float>()[1] = 1.0f;
  grid.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  return {{random_tensor(x_shape, seed + 1, -2.0f, 2.0f)}, {grid}};
}

TEST(CpuGridSample, MatchesTheReferenceKernel) {
  uint32_t seed = 1;
  for (int64_t opset : {16, 20}) {
    for (const char* mode : {"nearest", "linear", "cubic"}) {
      std::string name = mode;
      if (opset < 20 && name != "nearest") name = "bi" + name;
      for (const char* pad : {"zeros", "border", "reflection"}) {
        for (int64_t align : {0, 1}) {
          SCOPED_TRACE(name + " " + pad + " align " + std::to_string(align) + " opset " +
                       std::to_string(opset));
          const std::map<std::string, Attribute> attrs = {{"mode", attr_string(name)},
                                                          {"padding_mode", attr_string(pad)},
                                                          {"align_corners", attr_int(align)}};
          expect_matches_ref("cpu.grid_sample", "GridSample", inputs({2, 3, 5, 7}, 4, 6, seed++),
                             attrs, 1, 1e-5f, 1e-5f, opset);
        }
      }
    }
  }
}

// RAFT's lookups: many images of one channel, 7x7 points each, in blocks across threads.
TEST(CpuGridSample, ManyImagesOfOneChannel) {
  expect_matches_ref("cpu.grid_sample", "GridSample", inputs({64, 1, 4, 4}, 7, 7, 50),
                     {{"align_corners", attr_int(1)}}, 1, 1e-5f, 1e-5f, 16);
  expect_matches_ref("cpu.grid_sample", "GridSample", inputs({1, 5, 9, 9}, 30, 31, 60), {}, 1,
                     1e-5f, 1e-5f, 16);
}

TEST(CpuGridSample, DeclinesWhatItDoesNotRun) {
  std::vector<FastInput> in = inputs({1, 2, 4, 4}, 3, 3, 70);
  EXPECT_THROW(testing::run_kernel("GridSample", in, {{"mode", attr_string("linear")}}, 1,
                                   "cpu.grid_sample", 16),
               Error);  // opset 20's name at opset 16
  std::vector<FastInput> five = {{random_tensor({1, 2, 3, 4, 4}, 71)},
                                 {random_tensor({1, 2, 3, 3, 3}, 72)}};
  EXPECT_THROW(testing::run_kernel("GridSample", five, {}, 1, "cpu.grid_sample", 20), Error);
}

}  // namespace cpu_grid_sample_test
}  // namespace nnfuse
