// Reference kernel of the gated dense layer (a gated FFN's gate and up projections in one):
//   FusedGatedMatMul(X, W, Bias?, Gamma?, Beta?; activation, activation_alpha, activation_beta,
//                    epsilon, norm)
//     = act(P[..., :N]) * P[..., N:],  P = A W (+ Bias),  W [K, 2N] (gate columns first)
//     A = X, or with a Gamma its norm prologue: LayerNorm(X, Gamma, Beta) (RMSNorm(X, Gamma)
//     with norm "rms") over the last axis
// P by the FusedMatMul reference kernel, then the gate's activation in double.
#include "kernels/ref/fused.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

namespace {

void run_gated_matmul(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& w = ctx.in(1);
  NNFUSE_CHECK(w.rank() == 2 && w.dim(1) % 2 == 0, node.describe(), ": W ", dims_str(w.shape()),
               " is not a [K, 2N] matrix");
  // The product without the activation: a one-node graph with none.
  Graph g;
  std::vector<Value*> ins = {g.add_value("x"), g.add_value("w")};
  if (ctx.has_input(2)) ins.push_back(g.add_value("b"));
  Node* mm = g.add_node("FusedMatMul", node.name(), ins, {g.add_value("p")}, kFusedDomain);
  const RefKernelEntry* e = find_ref_kernel("FusedMatMul");
  NNFUSE_CHECK(e, "no reference kernel for FusedMatMul");
  const Tensor a = ctx.has_input(3) ? ref::norm_prologue(ctx) : Tensor();
  KernelContext c{
      *mm,
      17,
      {ctx.has_input(3) ? &a : &ctx.in(0), &w, ctx.has_input(2) ? ctx.inputs[2] : nullptr},
      std::vector<Tensor>(1)};
  e->run(c);
  const Tensor& p = c.outputs[0];
  const int64_t n2 = w.dim(1), n = n2 / 2, rows = p.numel() / n2;
  Dims ys = p.shape();
  ys.back() = n;
  Tensor y(DType::kFloat32, ys);
  const ref::Activation act = ref::read_activation(node);
  const float* pp = p.data<float>();
  float* py = y.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const double gate = ref::apply_activation(act, pp[r * n2 + j]);
      py[r * n + j] = static_cast<float>(gate * pp[r * n2 + n + j]);
    }
  }
  ctx.outputs[0] = std::move(y);
}

std::string support_gated_matmul(const Node& node, int64_t /*opset*/) {
  if (node.num_inputs() < 2 || node.num_inputs() > 5 || node.num_outputs() != 1) {
    return "FusedGatedMatMul takes X, W (and Bias, Gamma, Beta) and has one output";
  }
  if (node.num_inputs() > 3 && !node.input(3)) return "a Beta without a Gamma";
  if (std::string r = ref::norm_prologue_reason(node); !r.empty()) return r;
  return ref::activation_reason(node);
}

}  // namespace

void append_gated_matmul_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"FusedGatedMatMul", run_gated_matmul, support_gated_matmul});
}

}  // namespace nnfuse
