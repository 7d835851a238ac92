// The batch loop (batch_loop.h) around a kernel other than a convolution: Resize of a batch
// known only at run time (cpu.resize_batch), against the reference kernel at batches 0, 1 and
// 3, plain and channels-last; and the Resizes it declines (sizes given, a scaled batch).
#include <gtest/gtest.h>

#include "kernels/cpu/layout.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace batch_loop_test {

using testing::random_tensor;

// Resize of X [?, 3, 5, 6] with constant scales (or sizes), X arriving in `layout`: the
// factory that takes it, and its kernel run on a batch of `n`, against the reference kernel.
struct DynamicResize {
  Graph g;
  Node* node = nullptr;
  std::unique_ptr<NodeInfo> info;
  const KernelFactory* chosen = nullptr;

  DynamicResize(const Tensor& scales, const Tensor& sizes, Layout layout) {
    g.opsets[""] = 17;
    Shape xs = Shape::of({1, 3, 5, 6});
    xs.dims[0] = Dim{-1, "n"};
    Value* x = g.add_value("x", DType::kFloat32, xs);
    g.add_input(x);
    Value* sc = g.add_value("scales", DType::kFloat32, Shape::of(scales.shape()));
    sc->set_constant(scales);
    std::vector<Value*> ins = {x, nullptr, sc};
    if (sizes.defined()) {
      Value* sz = g.add_value("sizes", DType::kInt64, Shape::of(sizes.shape()));
      sz->set_constant(sizes);
      ins.push_back(sz);
    }
    node = g.add_node("Resize", "resize", ins, {g.add_value("y")});
    node->set_attr("mode", attr_string("linear"));
    std::vector<Layout> layouts(ins.size(), Layout::kPlain);
    layouts[0] = layout;
    info = std::make_unique<NodeInfo>(NodeInfo{*node, 17, layouts, 2});
    for (const KernelFactory& f : kernels_for("Resize")) {
      if (f.accepts(*info)) {
        chosen = &f;
        break;
      }
    }
  }
};

TEST(BatchLoop, ResizeOfUnknownBatch) {
  const Tensor scales = Tensor::from_vector<float>({4}, {1.0f, 1.0f, 2.0f, 1.5f});
  for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
    DynamicResize r(scales, Tensor(), l);
    ASSERT_NE(r.chosen, nullptr);
    ASSERT_STREQ(r.chosen->name, "cpu.resize_batch");
    std::unique_ptr<Kernel> k = r.chosen->create(*r.info);
    for (int64_t n : {int64_t{3}, int64_t{0}, int64_t{1}}) {
      SCOPED_TRACE("batch " + std::to_string(n) + " " + layout_name(l));
      const Tensor x = random_tensor({n, 3, 5, 6}, 7 + static_cast<uint32_t>(n));
      const Tensor want =
          testing::run_ref("Resize", {x, Tensor(), scales}, {{"mode", attr_string("linear")}})[0];
      const Tensor laid = to_layout(x, l);
      KernelIO io;
      io.inputs = {&laid, nullptr, &scales};
      io.outputs.resize(1);
      k->run(io);
      const Tensor got = to_layout(io.outputs[0], Layout::kPlain);
      ASSERT_EQ(got.shape(), want.shape());
      testing::expect_close(got, want, 1e-5f, 1e-5f);
    }
  }
}

TEST(BatchLoop, ResizeThatChangesTheBatchOrNamesItIsDeclined) {
  // Scales that resize the batch, and sizes (which name the exported batch): the reference.
  DynamicResize scaled(Tensor::from_vector<float>({4}, {2.0f, 1.0f, 2.0f, 2.0f}), Tensor(),
                       Layout::kPlain);
  EXPECT_STREQ(scaled.chosen->name, "ref");
  DynamicResize sized(Tensor(DType::kFloat32, {0}),
                      Tensor::from_vector<int64_t>({4}, {2, 3, 10, 12}), Layout::kPlain);
  EXPECT_STREQ(sized.chosen->name, "ref");
}

}  // namespace batch_loop_test
}  // namespace nnfuse
