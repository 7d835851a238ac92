// Tests of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on the ONNX spec's worked
// examples and hand-computed cases.
#include <cmath>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace loss_test {

using testing::run_ref;
using testing::run_ref1;
using testing::values;
using F = std::vector<float>;

// The spec's example: N 2, C 3, d1 2.
Tensor input() {
  return Tensor::from_vector<float>({2, 3, 2}, {1, 2, 2, 2, 3, 2, 0, 1, 2, 2, 1, 2});
}
Tensor target() { return Tensor::from_vector<int64_t>({2, 2}, {2, 1, 0, 2}); }
Tensor weight() { return Tensor::from_vector<float>({3}, {0.2f, 0.3f, 0.1f}); }

TEST(RefLoss, NllPerSample) {
  Tensor y = run_ref1("NegativeLogLikelihoodLoss", {input(), target()},
                      {{"reduction", attr_string("none")}});
  EXPECT_EQ(y.shape(), (Dims{2, 2}));
  EXPECT_EQ(values<float>(y), (F{-3, -2, -0, -2}));
}

TEST(RefLoss, NllWeightedSumAndMean) {
  Tensor sum = run_ref1("NegativeLogLikelihoodLoss", {input(), target(), weight()},
                        {{"reduction", attr_string("sum")}});
  EXPECT_EQ(sum.rank(), 0);
  EXPECT_NEAR(values<float>(sum)[0], -1.1f, 1e-6);
  Tensor mean = run_ref1("NegativeLogLikelihoodLoss", {input(), target(), weight()});
  EXPECT_NEAR(values<float>(mean)[0], -1.1f / 0.7f, 1e-6);  // divided by the weights' sum
}

// An ignored sample contributes neither loss nor weight, and may lie outside [0, C).
TEST(RefLoss, NllIgnoreIndex) {
  Tensor t = Tensor::from_vector<int64_t>({2, 2}, {2, -1, 0, 2});
  Tensor mean =
      run_ref1("NegativeLogLikelihoodLoss", {input(), t}, {{"ignore_index", attr_int(-1)}});
  EXPECT_NEAR(values<float>(mean)[0], (-3 - 0 - 2) / 3.0f, 1e-6);
  // Without ignore_index the same target is an error naming the node.
  EXPECT_THROW(run_ref1("NegativeLogLikelihoodLoss", {input(), t}), Error);
}

TEST(RefLoss, SoftmaxCrossEntropyIsNllOfLogSoftmax) {
  Tensor scores = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 0, 0, 5});
  Tensor labels = Tensor::from_vector<int64_t>({2}, {2, 0});
  auto out = run_ref("SoftmaxCrossEntropyLoss", {scores, labels}, {}, 2);
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3;
  const double l1 = std::log(2 + std::exp(5.0)) - 0;
  EXPECT_NEAR(values<float>(out[0])[0], (l0 + l1) / 2, 1e-6);
  EXPECT_EQ(out[1].shape(), (Dims{2, 3}));
  EXPECT_NEAR(values<float>(out[1])[5], 5 - std::log(2 + std::exp(5.0)), 1e-6);
}

TEST(RefLoss, BadShapesAndAttributesAreErrors) {
  Tensor bad_target = Tensor::from_vector<int64_t>({2}, {0, 1});
  EXPECT_THROW(run_ref1("NegativeLogLikelihoodLoss", {input(), bad_target}), Error);
  EXPECT_THROW(run_ref1("NegativeLogLikelihoodLoss", {input(), target()},
                        {{"reduction", attr_string("max")}}),
               Error);
}

}  // namespace loss_test
}  // namespace nnfuse
