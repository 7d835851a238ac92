// run_reference, the fallback of fast kernels whose fast path does not fit a run's tensors: it
// reads channels-last inputs and writes planned channels-last outputs in their layout.
#include <gtest/gtest.h>

#include "kernels/cpu/layout.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace registry_test {

TEST(RunReference, ReadsAndWritesChannelsLast) {
  const Tensor x = testing::random_tensor({1, 5, 3, 4}, 1);
  const Tensor want = testing::run_ref1("Relu", {x});
  testing::OneNode one("Relu", {{x, false, Layout::kNHWC}}, {});
  const Tensor nhwc = to_layout(x, Layout::kNHWC);
  for (bool planned : {true, false}) {
    KernelIO io;
    io.inputs = {&nhwc};
    io.outputs.resize(1);
    if (planned) {
      io.outputs[0] = Tensor::uninitialized(DType::kFloat32, x.shape());
      io.outputs[0].set_layout(Layout::kNHWC);
    }
    run_reference(*one.node, 17, io);
    ASSERT_EQ(io.outputs[0].layout(), planned ? Layout::kNHWC : Layout::kPlain);
    const Tensor got = to_layout(io.outputs[0], Layout::kPlain);
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << (planned ? "planned " : "") << i;
    }
  }
}

}  // namespace registry_test
}  // namespace nnfuse
