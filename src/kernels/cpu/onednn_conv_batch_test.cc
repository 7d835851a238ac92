// The batch-loop convolutions (onednn_conv_batch.cc): Conv, ConvTranspose and FusedConv whose
// batch is known only at run time, against the reference kernel at several batches (none
// included), inputs plain and channels-last; and what they decline.
#include <gtest/gtest.h>

#include "kernels/cpu/layout.h"
#include "kernels/cpu/onednn_test_util.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace onednn_conv_batch_test {

using testing::Attrs;
using testing::random_tensor;

constexpr float kTol = 1e-4f;

Shape batch_unknown(const Dims& d) {  // [?, d1, d2, ...]
  Shape s = Shape::of(d);
  s.dims[0] = Dim{-1, "n"};
  return s;
}

// A one-node graph: X (and FusedConv's residual, input 3) of batch unknown and the rest of
// `x_image`/`y_image`, W and B constants, inputs arriving in `layout`.
struct BatchNode {
  Graph g;
  Node* node = nullptr;
  std::unique_ptr<NodeInfo> info;
  const KernelFactory* chosen = nullptr;

  BatchNode(const std::string& op, const Shape& x, const Tensor& w, const Tensor& b,
            const std::optional<Shape>& residual, const Attrs& attrs, Layout layout) {
    g.opsets[""] = 17;
    std::vector<Value*> ins = {g.add_value("x", DType::kFloat32, x)};
    g.add_input(ins[0]);
    for (const Tensor* c : {&w, &b}) {
      Value* v =
          g.add_value("c" + std::to_string(ins.size()), DType::kFloat32, Shape::of(c->shape()));
      v->set_constant(*c);
      ins.push_back(v);
    }
    std::vector<Layout> layouts = {layout, Layout::kPlain, Layout::kPlain};
    if (residual) {
      ins.push_back(g.add_value("sum", DType::kFloat32, *residual));
      g.add_input(ins.back());
      layouts.push_back(layout);
    }
    node = g.add_node(op, "node", ins, {g.add_value("y")}, ref_op_domain(op));
    for (auto& [k, a] : attrs) node->set_attr(k, a);
    info = std::make_unique<NodeInfo>(NodeInfo{*node, 17, layouts, 2});
    for (const KernelFactory& f : kernels_for(op)) {
      if (f.accepts(*info)) {
        chosen = &f;
        break;
      }
    }
  }
};

// Runs `op` on batches of `counts` images through the batch-loop kernel `kernel` and the
// reference kernel.
void check(const std::string& op, const std::string& kernel, const Dims& x_image,
           const Dims& w_shape, bool residual, const Attrs& attrs, Layout layout) {
  const Tensor w = random_tensor(w_shape, 3),
               b = random_tensor({op == "ConvTranspose" ? w_shape[1] : w_shape[0]}, 4);
  Dims x1 = x_image;
  x1.insert(x1.begin(), 1);
  // The output of one image, from the reference kernel.
  const std::string ref_op = op == "FusedConv" ? "FusedConv" : op;
  std::vector<Tensor> probe = {random_tensor(x1, 5), w, b};
  if (residual) {
    Attrs plain = attrs;
    plain.erase("activation");
    Dims y1 = testing::run_ref("Conv", {probe[0], w, b}, plain)[0].shape();
    probe.push_back(random_tensor(y1, 6));
  }
  const Dims y1 = testing::run_ref(ref_op, probe, attrs)[0].shape();
  std::optional<Shape> sum;
  if (residual) sum = batch_unknown(y1);
  BatchNode n(op, batch_unknown(x1), w, b, sum, attrs, layout);
  ASSERT_NE(n.chosen, nullptr);
  ASSERT_EQ(std::string(n.chosen->name), kernel) << op << " " << layout_name(layout);
  std::unique_ptr<Kernel> k = n.chosen->create(*n.info);
  for (int64_t count : {int64_t{3}, int64_t{0}, int64_t{1}}) {
    SCOPED_TRACE(op + " batch " + std::to_string(count) + " " + layout_name(layout));
    Dims xs = x1, ys = y1;
    xs[0] = ys[0] = count;
    const Tensor x = random_tensor(xs, 10 + static_cast<uint32_t>(count), -2.0f, 2.0f);
    std::vector<Tensor> in = {x, w, b};
    if (residual) in.push_back(random_tensor(ys, 20 + static_cast<uint32_t>(count)));
    const Tensor want = testing::run_ref(ref_op, in, attrs)[0];
    std::vector<Tensor> laid = {to_layout(x, layout), w, b};
    if (residual) laid.push_back(to_layout(in[3], layout));
    KernelIO io;
    for (const Tensor& t : laid) io.inputs.push_back(&t);
    io.outputs.resize(1);
    k->run(io);
    const Tensor got = to_layout(io.outputs[0], Layout::kPlain);
    ASSERT_EQ(got.shape(), want.shape());
    testing::expect_close(got, want, kTol, kTol);
  }
}

TEST(OnednnConvBatch, ConvAndTransposedConvOfUnknownBatch) {
  for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
    check("Conv", "onednn.conv_batch", {8, 7, 7}, {16, 8, 3, 3}, false,
          {{"pads", attr_ints({1, 1, 1, 1})}}, l);
    check("Conv", "onednn.conv_batch", {8, 9}, {4, 8, 3}, false, {}, l);  // 1-D
    check("ConvTranspose", "onednn.conv_transpose_batch", {8, 7, 7}, {8, 6, 2, 2}, false,
          {{"strides", attr_ints({2, 2})}}, l);
  }
}

TEST(OnednnConvBatch, FusedConvWithResidualAndActivation) {
  for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
    check("FusedConv", "onednn.fused_conv_batch", {8, 6, 6}, {8, 8, 3, 3}, true,
          {{"pads", attr_ints({1, 1, 1, 1})}, {"activation", attr_string("Relu")}}, l);
    check("FusedConv", "onednn.fused_conv_batch", {8, 6, 6}, {12, 8, 1, 1}, false,
          {{"activation", attr_string("Sigmoid")}}, l);
  }
}

TEST(OnednnConvBatch, DeclinesOtherUnknownDimsAndChecksRunShapes) {
  const Tensor w = random_tensor({16, 8, 3, 3}, 1), b = random_tensor({16}, 2);
  // Unknown spatial dims: no single-image kernel can be made.
  Shape spatial = batch_unknown({1, 8, 7, 7});
  spatial.dims[2] = Dim{-1, "h"};
  EXPECT_STREQ(BatchNode("Conv", spatial, w, b, std::nullopt, {}, Layout::kPlain).chosen->name,
               "ref");
  // Without X (an invalid node) the reference kernel is left to say so.
  {
    Graph g;
    g.opsets[""] = 17;
    Value* wv = g.add_value("w", DType::kFloat32, Shape::of(w.shape()));
    wv->set_constant(w);
    Node* n = g.add_node("Conv", "conv", {nullptr, wv}, {g.add_value("y")});
    const NodeInfo info{*n, 17, {Layout::kPlain, Layout::kPlain}, 2};
    for (const KernelFactory& f : kernels_for("Conv")) {
      if (std::string(f.name) == "onednn.conv_batch") {
        EXPECT_FALSE(f.accepts(info));
        EXPECT_EQ(decline_reason(f, info), "X is missing");
      }
    }
  }
  // A static batch goes to the static-shape kernel.
  EXPECT_STREQ(BatchNode("Conv", Shape::of({2, 8, 7, 7}), w, b, std::nullopt, {}, Layout::kPlain)
                   .chosen->name,
               "onednn.conv");
  // At run time an image of another size is an error naming the node.
  BatchNode n("Conv", batch_unknown({1, 8, 7, 7}), w, b, std::nullopt, {}, Layout::kPlain);
  ASSERT_STREQ(n.chosen->name, "onednn.conv_batch");
  std::unique_ptr<Kernel> k = n.chosen->create(*n.info);
  const Tensor x = random_tensor({2, 8, 6, 7}, 3);
  KernelIO io;
  io.inputs = {&x, &w, &b};
  io.outputs.resize(1);
  EXPECT_THROW(k->run(io), Error);
}

}  // namespace onednn_conv_batch_test
}  // namespace nnfuse
