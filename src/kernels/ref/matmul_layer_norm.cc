// Reference kernels of the dense layers with a residual or a LayerNorm, each part by its own
// reference kernel:
//   FusedMatMulResidual(A, B, Bias?, Residual) = FusedMatMul(A, B, Bias) + Residual
//   FusedMatMulLayerNorm(A, B, Bias?, Residual, Gamma, Beta?; epsilon)
//     = LayerNormalization(FusedMatMul(A, B, Bias) + Residual, Gamma, Beta; axis -1, epsilon)
//   FusedLayerNormMatMul(X, B, Bias?, Gamma, Beta?; epsilon, activation, norm)
//     = FusedMatMul(LayerNormalization(X, Gamma, Beta; axis -1, epsilon), B, Bias; activation)
//     with norm "rms": FusedMatMul(RMSNorm(X, Gamma; epsilon), B, Bias; activation)
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

// LayerNormalization (or RMSNorm, `rms`) over the last axis with the fused node's epsilon (a
// one-node graph with just that attribute, since the reference kernel reads it from its node).
Tensor layer_norm(const Node& fused, const Tensor& x, const Tensor& gamma, const Tensor* beta,
                  bool rms = false) {
  Graph g;
  Value* xv = g.add_value("x", x.dtype(), Shape::of(x.shape()));
  const char* op = rms ? "RMSNorm" : "LayerNormalization";
  Node* ln = g.add_node(op, fused.name(), {xv}, {g.add_value("y")}, rms ? kFusedDomain : "");
  Attribute eps;
  eps.kind = Attribute::Kind::kFloat;
  eps.f = fused.attr_float("epsilon", 1e-5f);
  ln->set_attr("epsilon", eps);
  if (rms) {
    NNFUSE_CHECK(!beta, fused.describe(), ": an RMSNorm prologue takes no beta");
    return run_op(*ln, op, {&x, &gamma});
  }
  return run_op(*ln, op, {&x, &gamma, beta});
}

// FusedMatMul(A, B, Bias) + Residual (of the product's shape).
Tensor product_plus_residual(const KernelContext& ctx) {
  const Node& node = ctx.node;
  Tensor y = run_op(node, "FusedMatMul",
                    {&ctx.in(0), &ctx.in(1), ctx.has_input(2) ? ctx.inputs[2] : nullptr});
  const Tensor& res = ctx.in(3);
  NNFUSE_CHECK(res.shape() == y.shape() && res.dtype() == y.dtype(), node.describe(),
               ": the residual ", dims_str(res.shape()), " is not of the product's shape ",
               dims_str(y.shape()));
  return run_op(node, "Add", {&y, &res});
}

void run_matmul_residual(KernelContext& ctx) { ctx.outputs[0] = product_plus_residual(ctx); }

void run_matmul_layer_norm(KernelContext& ctx) {
  const Tensor y = product_plus_residual(ctx);
  ctx.outputs[0] = layer_norm(ctx.node, y, ctx.in(4), ctx.has_input(5) ? ctx.inputs[5] : nullptr);
}

void run_layer_norm_matmul(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor a = ref::norm_prologue(ctx);
  ctx.outputs[0] =
      run_op(node, "FusedMatMul", {&a, &ctx.in(1), ctx.has_input(2) ? ctx.inputs[2] : nullptr});
}

std::string support_layer_norm_matmul(const Node& node, int64_t /*opset*/) {
  if (node.num_inputs() < 4 || node.num_outputs() != 1) {
    return "FusedLayerNormMatMul takes X, B, Bias, Gamma (and Beta) and has one output";
  }
  return ref::norm_prologue_reason(node);
}

std::string support_matmul_residual(const Node& node, int64_t /*opset*/) {
  if (node.num_inputs() != 4 || node.num_outputs() != 1) {
    return "FusedMatMulResidual takes A, B, Bias (or none) and Residual and has one output";
  }
  if (!node.attr_string("activation", "").empty()) return "an activation is not supported";
  return "";
}

std::string support_matmul_layer_norm(const Node& node, int64_t /*opset*/) {
  if (node.num_inputs() < 5 || node.num_outputs() != 1) {
    return "FusedMatMulLayerNorm takes A, B, Bias, Residual, Gamma (and Beta) and has one output";
  }
  if (!node.attr_string("activation", "").empty()) return "an activation is not supported";
  return "";
}

}  // namespace

namespace ref {

std::string norm_prologue_reason(const Node& node) {
  const std::string kind = node.attr_string("norm", "layer");
  if (kind != "layer" && kind != "rms") return "norm '" + kind + "' is not 'layer' or 'rms'";
  if (kind == "rms" && node.num_inputs() > 4 && node.input(4)) return "an RMSNorm with a beta";
  return "";
}

Tensor norm_prologue(const KernelContext& ctx) {
  const bool rms = ctx.node.attr_string("norm", "layer") == "rms";
  return layer_norm(ctx.node, ctx.in(0), ctx.in(3), ctx.has_input(4) ? ctx.inputs[4] : nullptr,
                    rms);
}

}  // namespace ref

void append_matmul_layer_norm_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"FusedMatMulLayerNorm", run_matmul_layer_norm, support_matmul_layer_norm});
  t.push_back({"FusedMatMulResidual", run_matmul_residual, support_matmul_residual});
  t.push_back({"FusedLayerNormMatMul", run_layer_norm_matmul, support_layer_norm_matmul});
}

}  // namespace nnfuse
