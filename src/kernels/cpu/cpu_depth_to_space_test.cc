// cpu.depth_to_space and cpu.space_to_depth against the reference kernels: both DepthToSpace
// modes, block sizes 1 to 3, plain and channels-last input, elements of 1, 4 and 8 bytes, and
// the shapes they cannot rearrange.
#include <gtest/gtest.h>

#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_depth_to_space_test {

using testing::expect_matches_ref;
using testing::FastInput;
using testing::random_tensor;

Tensor typed(const Dims& shape, uint32_t seed, DType t) {
  const Tensor f = random_tensor(shape, seed, -50.0f, 50.0f);
  if (t == DType::kFloat32) return f;
  return testing::run_ref1("Cast", {f}, {{"to", attr_int(static_cast<int64_t>(t))}});
}

TEST(CpuDepthToSpace, MatchesTheReferenceKernel) {
  uint32_t seed = 1;
  for (DType t : {DType::kFloat32, DType::kUInt8, DType::kInt64}) {
    for (int64_t b : {1, 2, 3}) {
      for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
        for (const char* mode : {"DCR", "CRD"}) {
          SCOPED_TRACE(dtype_name(t) + " blocksize " + std::to_string(b) + " " + mode + " " +
                       layout_name(l));
          expect_matches_ref("cpu.depth_to_space", "DepthToSpace",
                             {{typed({2, 2 * b * b, 5, 7}, seed++, t), false, l}},
                             {{"blocksize", attr_int(b)}, {"mode", attr_string(mode)}}, 1, 0.0f,
                             0.0f);
        }
        SCOPED_TRACE(dtype_name(t) + " SpaceToDepth blocksize " + std::to_string(b) + " " +
                     layout_name(l));
        expect_matches_ref("cpu.space_to_depth", "SpaceToDepth",
                           {{typed({2, 3, 4 * b, 5 * b}, seed++, t), false, l}},
                           {{"blocksize", attr_int(b)}}, 1, 0.0f, 0.0f);
      }
    }
  }
}

// A pixel shuffle's size (ESPCN: 27 channels of 224 x 224 into 3 of 672 x 672).
TEST(CpuDepthToSpace, LargeChannelsLastInput) {
  expect_matches_ref("cpu.depth_to_space", "DepthToSpace",
                     {{random_tensor({1, 27, 64, 80}, 9), false, Layout::kNHWC}},
                     {{"blocksize", attr_int(3)}, {"mode", attr_string("CRD")}}, 1, 0.0f, 0.0f);
}

TEST(CpuDepthToSpace, ShapesItCannotRearrangeAreErrors) {
  EXPECT_THROW(testing::run_kernel("DepthToSpace", {{random_tensor({1, 6, 2, 2}, 1)}},
                                   {{"blocksize", attr_int(2)}}, 1, "cpu.depth_to_space"),
               Error);
  EXPECT_THROW(testing::run_kernel("SpaceToDepth", {{random_tensor({1, 2, 5, 4}, 2)}},
                                   {{"blocksize", attr_int(2)}}, 1, "cpu.space_to_depth"),
               Error);
}

}  // namespace cpu_depth_to_space_test
}  // namespace nnfuse
