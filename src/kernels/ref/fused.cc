// Reference kernels of nnfuse's fused ops (domain ai.nnfuse). Each is the composition of the
// ONNX reference kernels of the nodes it replaced, run on the fused node's own attributes,
// then a plain activation loop, so checking a fusion against the unfused graph adds nothing
// new to trust:
//   FusedConv(X, W, B?, Sum?)        = act(Conv(X, W, B) [+ Sum])
//   FusedConv(X, W, B?, -, X2, W2, B2?) = act(Conv(X, W, B) + Conv(X2, W2, B2))  (conv_skip.h)
//   ScaledConv(X, S, W, B?, Sum?)    = act(Conv(X * S, W, B) [+ Sum])  (S: [N or 1, C, 1, 1])
//   FusedConvSplit(X, W, B?)         = Split(act(Conv(X, W, B)), axis 1, attr split): the
//                                      outputs of convolutions of one X side by side
//   FusedMatMul(A, B, Bias?)         = act(MatMul(A, B) [+ Bias])
//   FusedGemm(A, B, C?)              = act(Gemm(A, B, C))
//   FusedGlobalPoolGemm(X, B, C?)    = act(Gemm(Flatten(GlobalAveragePool(X)), B, C))
//   Gelu(X), Swish(X)                = the activation alone (see fused.h)
// The residual Sum and the Bias must broadcast to the product's shape without growing it.
#include "kernels/ref/fused.h"

#include <cmath>
#include <limits>
#include <map>
#include <numbers>

#include "ir/builder.h"
#include "kernels/ref/conv_skip.h"
#include "kernels/ref/nn_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse::ref {

namespace {

double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double clamp_unit(double x) { return std::fmax(0.0, std::fmin(1.0, x)); }

}  // namespace

double apply_activation(const Activation& a, double x) {
  switch (a.kind) {
    case ActivationKind::kNone:
      return x;
    case ActivationKind::kRelu:
      return x < 0 ? 0.0 : x;
    case ActivationKind::kLeakyRelu:
      return x >= 0 ? x : a.alpha * x;
    case ActivationKind::kClip: {
      // As ONNX Clip: min(max(x, lo), hi), NaN kept.
      const double v = x < a.alpha ? a.alpha : x;
      return a.beta < v ? a.beta : v;
    }
    case ActivationKind::kSigmoid:
      return logistic(x);
    case ActivationKind::kTanh:
      return std::tanh(x);
    case ActivationKind::kHardSigmoid:
      return clamp_unit(a.alpha * x + a.beta);
    case ActivationKind::kHardSwish:
      return x * clamp_unit(x / 6.0 + 0.5);
    case ActivationKind::kSiLU:
      return x * logistic(x);
    case ActivationKind::kGelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case ActivationKind::kGeluTanh: {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
    case ActivationKind::kSwish:
      return x * logistic(a.alpha * x);
    case ActivationKind::kQuantize:
      return ops::quantize_dequantize(static_cast<float>(x), a.alpha, a.beta);
  }
  return x;
}

namespace {

// The ONNX kernels run under this opset: Conv, MatMul, Gemm (with C optional), Add and
// GlobalAveragePool have had their current semantics since opset 13.
constexpr int64_t kInnerOpset = 17;

// Runs the reference kernel of ONNX `op` on `inputs` with the fused node's attributes (the
// fused ops carry the attributes of the ops they replaced), so errors name the fused node.
Tensor run_part(const KernelContext& ctx, const char* op, std::vector<const Tensor*> inputs) {
  const RefKernelEntry* e = find_ref_kernel(op);
  NNFUSE_CHECK(e, "no reference kernel for ", op);
  KernelContext part{ctx.node, kInnerOpset, std::move(inputs), std::vector<Tensor>(1)};
  e->run(part);
  return std::move(part.outputs[0]);
}

// y + t for t that broadcasts to y's shape (Add's reference kernel does the adding).
Tensor add_into_shape(const KernelContext& ctx, const Tensor& y, const Tensor& t,
                      const char* what) {
  NNFUSE_CHECK(
      t.rank() <= y.rank() && broadcast_shapes(t.shape(), y.shape(), ctx.node) == y.shape(),
      ctx.node.describe(), ": ", what, " of shape ", dims_str(t.shape()),
      " does not broadcast to the output shape ", dims_str(y.shape()));
  NNFUSE_CHECK(t.dtype() == y.dtype(), ctx.node.describe(), ": ", what, " has type ",
               dtype_name(t.dtype()), ", expected ", dtype_name(y.dtype()));
  return run_part(ctx, "Add", {&y, &t});
}

void apply_activation_to(const Node& node, Tensor& y) {
  const Activation a = read_activation(node);
  if (a.kind == ActivationKind::kNone) return;
  dispatch_float(y.dtype(), node.describe(), [&](auto tag) {
    using T = decltype(tag);
    T* p = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      p[i] = static_cast<T>(apply_activation(a, static_cast<double>(p[i])));
    }
  });
}

void run_fused_conv(KernelContext& ctx) {
  Tensor y =
      run_part(ctx, "Conv", {&ctx.in(0), &ctx.in(1), ctx.has_input(2) ? ctx.inputs[2] : nullptr});
  if (ctx.has_input(3)) y = add_into_shape(ctx, y, ctx.in(3), "the residual Sum");
  if (has_skip_conv(ctx.node)) {
    const SkipPart skip = skip_part(ctx.node);
    std::vector<const Tensor*> ins;
    for (size_t i = kSkipInput; i < kSkipInput + 3; ++i) {
      ins.push_back(ctx.has_input(i) ? ctx.inputs[i] : nullptr);
    }
    while (!ins.back()) ins.pop_back();
    const RefKernelEntry* conv = find_ref_kernel("Conv");
    NNFUSE_CHECK(conv, "no reference kernel for Conv");
    KernelContext part{*skip.node, kInnerOpset, std::move(ins), std::vector<Tensor>(1)};
    conv->run(part);
    NNFUSE_CHECK(part.outputs[0].shape() == y.shape(), ctx.node.describe(),
                 ": the skip convolution's output ", dims_str(part.outputs[0].shape()),
                 " differs from the output shape ", dims_str(y.shape()));
    y = add_into_shape(ctx, y, part.outputs[0], "the skip convolution's output");
  }
  apply_activation_to(ctx.node, y);
  ctx.outputs[0] = std::move(y);
}

void run_fused_conv_split(KernelContext& ctx) {
  KernelContext whole{ctx.node, ctx.opset, ctx.inputs, std::vector<Tensor>(1)};
  run_fused_conv(whole);
  // Split's reference kernel on a node of its own: axis 1, the fused node's split sizes.
  const RefKernelEntry* split = find_ref_kernel("Split");
  NNFUSE_CHECK(split, "no reference kernel for Split");
  Graph g;
  Value* y = g.add_value("y", whole.outputs[0].dtype());
  g.add_input(y);
  std::vector<Value*> outs;
  for (size_t k = 0; k < ctx.outputs.size(); ++k) outs.push_back(g.add_value(std::to_string(k)));
  Node* n = g.add_node("Split", ctx.node.name() + "/split", {y}, outs);
  n->set_attr("axis", attr_int(1));
  n->set_attr("split", attr_ints(ctx.node.attr_ints("split")));
  KernelContext part{*n, 11, {&whole.outputs[0]}, std::vector<Tensor>(ctx.outputs.size())};
  split->run(part);
  ctx.outputs = std::move(part.outputs);
}

void run_scaled_conv(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& sc = ctx.in(1);
  NNFUSE_CHECK(x.rank() == 4 && sc.rank() == 4 && sc.dim(1) == x.dim(1) && sc.dim(2) == 1 &&
                   sc.dim(3) == 1 && (sc.dim(0) == 1 || sc.dim(0) == x.dim(0)),
               ctx.node.describe(), ": the scale ", dims_str(sc.shape()),
               " is not one value per channel of X ", dims_str(x.shape()));
  const Tensor scaled = run_part(ctx, "Mul", {&x, &sc});
  Tensor y =
      run_part(ctx, "Conv", {&scaled, &ctx.in(2), ctx.has_input(3) ? ctx.inputs[3] : nullptr});
  if (ctx.has_input(4)) y = add_into_shape(ctx, y, ctx.in(4), "the residual Sum");
  apply_activation_to(ctx.node, y);
  ctx.outputs[0] = std::move(y);
}

void run_fused_matmul(KernelContext& ctx) {
  Tensor y = run_part(ctx, "MatMul", {&ctx.in(0), &ctx.in(1)});
  if (ctx.has_input(2)) y = add_into_shape(ctx, y, ctx.in(2), "the bias");
  apply_activation_to(ctx.node, y);
  ctx.outputs[0] = std::move(y);
}

void run_fused_gemm(KernelContext& ctx) {
  Tensor y =
      run_part(ctx, "Gemm", {&ctx.in(0), &ctx.in(1), ctx.has_input(2) ? ctx.inputs[2] : nullptr});
  apply_activation_to(ctx.node, y);
  ctx.outputs[0] = std::move(y);
}

void run_fused_global_pool_gemm(KernelContext& ctx) {
  NNFUSE_CHECK(ctx.node.attr_int("transA", 0) == 0, ctx.node.describe(),
               ": transA must be 0 (A is the pooled input)");
  const Tensor pooled = run_part(ctx, "GlobalAveragePool", {&ctx.in(0)});
  const Tensor a = pooled.reshaped({pooled.dim(0), pooled.numel() / pooled.dim(0)});
  Tensor y = run_part(ctx, "Gemm", {&a, &ctx.in(1), ctx.has_input(2) ? ctx.inputs[2] : nullptr});
  apply_activation_to(ctx.node, y);
  ctx.outputs[0] = std::move(y);
}

// The activation a standalone Gelu or Swish node computes.
Activation standalone_activation(const Node& node) {
  Activation a;
  if (node.is(Op::kSwish)) {
    a.kind = ActivationKind::kSwish;
    a.alpha = node.attr_float("alpha", 1.0f);
    return a;
  }
  const std::string approx = node.attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") {
    fail(ErrorKind::kUnsupported, node.describe(),
         ": approximate must be \"none\" or \"tanh\", got '", approx, "'");
  }
  a.kind = approx == "tanh" ? ActivationKind::kGeluTanh : ActivationKind::kGelu;
  return a;
}

void run_standalone_activation(KernelContext& ctx) {
  const Activation a = standalone_activation(ctx.node);
  const Tensor& x = ctx.in(0);
  Tensor y(x.dtype(), x.shape());
  dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      py[i] = static_cast<T>(apply_activation(a, static_cast<double>(px[i])));
    }
  });
  ctx.outputs[0] = std::move(y);
}

std::string support_standalone_activation(const Node& node, int64_t /*opset*/) {
  std::string why = float_inputs_reason(node);
  if (!why.empty()) return why;
  if (node.num_inputs() != 1) return "expects exactly one input";
  try {
    standalone_activation(node);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string support_fused(const Node& node, int64_t /*opset*/) {
  std::string why = float_inputs_reason(node);
  return why.empty() ? activation_reason(node) : why;
}

std::string support_fused_conv(const Node& node, int64_t opset) {
  std::string why = support_fused(node, opset);
  if (why.empty()) why = auto_pad_reason(node);
  if (!why.empty() || !node.is(Op::kFusedConv) || !has_skip_conv(node)) return why;
  if (node.input(3)) return "a residual Sum and a skip convolution together";
  if (node.num_inputs() > kSkipInput + 3) return "more than 7 inputs";
  if (!node.input(kSkipInput + 1)) return "the skip convolution has no weight";
  const SkipPart skip = skip_part(node);
  why = auto_pad_reason(*skip.node);
  return why.empty() ? "" : "the skip convolution: " + why;
}

std::string support_fused_conv_split(const Node& node, int64_t opset) {
  std::string why = support_fused(node, opset);
  if (why.empty()) why = auto_pad_reason(node);
  if (!why.empty()) return why;
  if (node.num_inputs() > 3) return "at most 3 inputs (X, W, B)";
  try {
    const std::vector<int64_t> split = node.attr_ints("split");
    if (split.size() < 2 || split.size() != node.num_outputs()) {
      return "split needs one size per output, at least 2";
    }
    for (int64_t v : split) {
      if (v <= 0) return "split sizes must be positive";
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string support_fused_pool_gemm(const Node& node, int64_t opset) {
  std::string why = support_fused(node, opset);
  if (!why.empty()) return why;
  try {
    if (node.attr_int("transA", 0) != 0) return "transA must be 0";
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

}  // namespace nnfuse::ref

namespace nnfuse {

void append_fused_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"FusedConv", ref::run_fused_conv, ref::support_fused_conv});
  t.push_back({"ScaledConv", ref::run_scaled_conv, ref::support_fused_conv});
  t.push_back({"FusedConvSplit", ref::run_fused_conv_split, ref::support_fused_conv_split});
  t.push_back({"FusedMatMul", ref::run_fused_matmul, ref::support_fused});
  t.push_back({"FusedGemm", ref::run_fused_gemm, ref::support_fused});
  t.push_back(
      {"FusedGlobalPoolGemm", ref::run_fused_global_pool_gemm, ref::support_fused_pool_gemm});
  append_norm_fused_kernels(t);
  append_attention_kernels(t);  // attention.cc
  t.push_back({"Gelu", ref::run_standalone_activation, ref::support_standalone_activation});
  t.push_back({"Swish", ref::run_standalone_activation, ref::support_standalone_activation});
  append_embed_kernels(t);
}

}  // namespace nnfuse
