// cpu.cumsum against the reference kernel, bit for bit: every axis of ranks 1 to 4 (negative
// axes too), exclusive and reverse, float32, int32 and int64, rows wider than a task's columns,
// an empty input, and an axis out of range.
#include <gtest/gtest.h>

#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"
#include "testing/numeric.h"

namespace nnfuse {
namespace cpu_cumsum_test {

using testing::expect_matches_ref;
using testing::FastInput;

Tensor values(const Dims& shape, DType type, uint32_t seed) {
  const Tensor f = testing::random_tensor(shape, seed, -50.0f, 50.0f);
  if (type == DType::kFloat32) return f;
  return testing::run_ref1("Cast", {f}, {{"to", attr_int(static_cast<int64_t>(type))}});
}

TEST(CpuCumSum, MatchesTheReferenceKernelBitForBit) {
  const std::vector<Dims> shapes = {{7}, {5, 300}, {3, 4, 6}, {2, 3, 5, 4}};
  uint32_t seed = 1;
  for (const Dims& shape : shapes) {
    const int64_t rank = static_cast<int64_t>(shape.size());
    for (int64_t axis = -rank; axis < rank; ++axis) {
      for (DType type : {DType::kFloat32, DType::kInt32, DType::kInt64}) {
        for (int64_t exclusive : {0, 1}) {
          for (int64_t reverse : {0, 1}) {
            SCOPED_TRACE(dims_str(shape) + " axis " + std::to_string(axis) + " " +
                         dtype_name(type) + " exclusive " + std::to_string(exclusive) +
                         " reverse " + std::to_string(reverse));
            std::vector<FastInput> in = {{values(shape, type, seed++)},
                                         {Tensor::from_vector<int64_t>({}, {axis})}};
            expect_matches_ref("cpu.cumsum", "CumSum", in,
                               {{"exclusive", attr_int(exclusive)}, {"reverse", attr_int(reverse)}},
                               1, 0.0f, 0.0f);
          }
        }
      }
    }
  }
}

TEST(CpuCumSum, EmptyInputAndBadAxis) {
  std::vector<FastInput> empty = {{Tensor(DType::kFloat32, {3, 0})},
                                  {Tensor::from_vector<int64_t>({}, {1})}};
  expect_matches_ref("cpu.cumsum", "CumSum", empty, {}, 1, 0.0f, 0.0f);
  std::vector<FastInput> bad = {{values({3, 4}, DType::kFloat32, 9)},
                                {Tensor::from_vector<int64_t>({}, {2})}};
  EXPECT_THROW(testing::run_kernel("CumSum", bad, {}, 1, "cpu.cumsum"), Error);
}

}  // namespace cpu_cumsum_test
}  // namespace nnfuse
