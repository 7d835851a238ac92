// cpu.roi_align against the reference kernel: both modes, both coordinate transformations,
// fixed and adaptive sampling, rois partly or wholly outside the map, two images.
#include <gtest/gtest.h>

#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_roi_align_test {

using testing::expect_matches_ref;
using testing::FastInput;
using testing::random_tensor;

std::vector<FastInput> inputs(DType index_type) {
  const Tensor x = random_tensor({2, 5, 12, 10}, 1, -2.0f, 2.0f);
  // [x1, y1, x2, y2] in input pixels: inside, straddling the edges, outside, degenerate, large.
  const Tensor rois = Tensor::from_vector<float>(
      {6, 4}, {1.5f,  2.0f,  7.25f, 9.0f,  -3.0f, -2.0f, 4.0f, 5.5f, 8.0f, 10.0f, 15.0f, 14.0f,
               20.0f, 20.0f, 30.0f, 25.0f, 3.0f,  3.0f,  3.0f, 3.0f, 0.0f, 0.0f,  10.0f, 12.0f});
  Tensor bi = Tensor::from_vector<int64_t>({6}, {0, 1, 1, 0, 1, 0});
  if (index_type == DType::kInt32) bi = testing::run_ref1("Cast", {bi}, {{"to", attr_int(6)}});
  return {{x}, {rois}, {bi}};
}

TEST(CpuRoiAlign, MatchesTheReferenceKernel) {
  for (const char* mode : {"avg", "max"}) {
    for (int64_t ratio : {0, 2}) {
      for (int64_t opset : {10, 16}) {
        for (DType it : {DType::kInt64, DType::kInt32}) {
          SCOPED_TRACE(std::string(mode) + " ratio " + std::to_string(ratio) + " opset " +
                       std::to_string(opset));
          const std::map<std::string, Attribute> attrs = {{"mode", attr_string(mode)},
                                                          {"output_height", attr_int(3)},
                                                          {"output_width", attr_int(4)},
                                                          {"sampling_ratio", attr_int(ratio)},
                                                          {"spatial_scale", attr_float(0.5f)}};
          expect_matches_ref("cpu.roi_align", "RoiAlign", inputs(it), attrs, 1, 1e-5f, 1e-4f,
                             opset);
        }
      }
    }
  }
}

TEST(CpuRoiAlign, BadBatchIndexIsAnErrorAndNoRoisGiveAnEmptyOutput) {
  std::vector<FastInput> in = inputs(DType::kInt64);
  in[2].value = Tensor::from_vector<int64_t>({6}, {0, 1, 2, 0, 1, 0});
  EXPECT_THROW(testing::run_kernel("RoiAlign", in, {}, 1, "cpu.roi_align"), Error);
  std::vector<FastInput> none = {
      in[0], {Tensor(DType::kFloat32, {0, 4})}, {Tensor(DType::kInt64, {0})}};
  testing::FastRun r = testing::run_kernel("RoiAlign", none, {}, 1, "cpu.roi_align");
  EXPECT_EQ(r.outputs[0].shape(), (Dims{0, 5, 1, 1}));
}

}  // namespace cpu_roi_align_test
}  // namespace nnfuse
