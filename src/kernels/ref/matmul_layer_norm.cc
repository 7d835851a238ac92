// Reference FusedMatMulLayerNorm(A, B, Bias?, Residual, Gamma, Beta?; epsilon)
//   = LayerNormalization(FusedMatMul(A, B, Bias) + Residual, Gamma, Beta; axis -1, epsilon),
// each part by its own reference kernel.
#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

namespace {

Tensor run_op(const Node& node, const char* op, std::vector<const Tensor*> inputs) {
  const RefKernelEntry* e = find_ref_kernel(op);
  NNFUSE_CHECK(e, "no reference kernel for ", op);
  KernelContext c{node, 17, std::move(inputs), std::vector<Tensor>(1)};
  e->run(c);
  return std::move(c.outputs[0]);
}

void run_matmul_layer_norm(KernelContext& ctx) {
  const Node& node = ctx.node;
  Tensor y = run_op(node, "FusedMatMul",
                    {&ctx.in(0), &ctx.in(1), ctx.has_input(2) ? ctx.inputs[2] : nullptr});
  const Tensor& res = ctx.in(3);
  NNFUSE_CHECK(res.shape() == y.shape() && res.dtype() == y.dtype(), node.describe(),
               ": the residual ", dims_str(res.shape()), " is not of the product's shape ",
               dims_str(y.shape()));
  y = run_op(node, "Add", {&y, &res});
  // LayerNormalization reads axis and epsilon from the node: a one-node graph with just those.
  Graph g;
  Value* x = g.add_value("x", y.dtype(), Shape::of(y.shape()));
  Node* ln = g.add_node("LayerNormalization", node.name(), {x}, {g.add_value("y")});
  Attribute eps;
  eps.kind = Attribute::Kind::kFloat;
  eps.f = node.attr_float("epsilon", 1e-5f);
  ln->set_attr("epsilon", eps);
  ctx.outputs[0] = run_op(*ln, "LayerNormalization",
                          {&y, &ctx.in(4), ctx.has_input(5) ? ctx.inputs[5] : nullptr});
}

std::string support_matmul_layer_norm(const Node& node, int64_t /*opset*/) {
  if (node.num_inputs() < 5 || node.num_outputs() != 1) {
    return "FusedMatMulLayerNorm takes A, B, Bias, Residual, Gamma (and Beta) and has one output";
  }
  if (!node.attr_string("activation", "").empty()) return "an activation is not supported";
  return "";
}

}  // namespace

void append_matmul_layer_norm_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"FusedMatMulLayerNorm", run_matmul_layer_norm, support_matmul_layer_norm});
}

}  // namespace nnfuse
