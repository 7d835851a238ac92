// GlobalResponseNormFusionPass: ConvNeXt-V2's Global Response Normalization, as PyTorch exports
// the paper's and timm's modules, on channels-last [N, H, W, C] or channels-first [N, C, H, W]
// maps:
//   G = ReduceL2(x, spatial axes, keepdims)        (or Sqrt(ReduceSum(x^2)), the norm written out)
//   N = G / (ReduceMean(G, channel axis, keepdims) + eps)
//   y = gamma * (x * N) + beta + x                 (the product and the sum in any order)
//   == GlobalResponseNorm(x, gamma, beta; epsilon, channels_last)   (ops/response_norm.h)
// Unfused, the norm is a reduction over every map and the rest five elementwise passes over X;
// fused, one pass reads X for the norms and one writes Y.
#include "ops/response_norm.h"

#include <algorithm>

#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

using pattern::Pat;

// The axes a Reduce node reduces, normalized for `rank` and sorted (from its axes attribute, or
// its constant second input from opset 18); nullopt when they are not known or keepdims is 0.
std::optional<Dims> kept_axes(const Node& n, int64_t rank) {
  if (n.attr_int("keepdims", 1) != 1) return std::nullopt;
  Dims axes = n.attr_ints("axes", {});
  if (const Value* a = n.input(1)) {
    const Tensor* t = pattern::constant_value(a);
    if (!t) return std::nullopt;
    axes = t->to_int64_vector();
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    a = a < 0 ? a + rank : a;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// One value per channel of a map of rank `rank` whose channel axis is `axis`: its C values
// along that axis (a [C] or [1, 1, 1, C] gamma for channels-last maps, [C, 1, 1] for
// channels-first ones), as a float32 [C]; nullopt otherwise.
std::optional<Tensor> channel_values(const Tensor* t, int64_t rank, int64_t axis, int64_t c) {
  if (!t || !(t->dtype() == DType::kFloat32 || t->dtype() == DType::kFloat64) || t->numel() != c ||
      t->rank() > rank) {
    return std::nullopt;
  }
  const int64_t at = axis - (rank - t->rank());  // the channel axis among t's dims
  if (c > 1 && (at < 0 || t->dim(at) != c)) return std::nullopt;
  Tensor r(DType::kFloat32, {c});
  for (int64_t i = 0; i < c; ++i) r.data<float>()[i] = static_cast<float>(t->double_at(i));
  return r;
}

// The GRN a match is, as one GlobalResponseNorm; "" or why not.
std::string fuse_response_norm(const RuleMatch& m) {
  const Shape& xs = m["x"]->shape();
  if (!xs.fully_known() || xs.dims.size() < 3) return "X is not of static shape, rank 3+";
  const int64_t rank = static_cast<int64_t>(xs.dims.size());
  const std::optional<Dims> spatial = kept_axes(*m.node("norm"), rank);
  const std::optional<Dims> channel = kept_axes(*m.node("mean"), rank);
  if (!spatial || !channel || channel->size() != 1) {
    return "the norm or the mean does not keep its axes, or its axes are not constants";
  }
  const int64_t axis = (*channel)[0];
  if (axis != rank - 1 && axis != 1) return "the mean is not over the first or last axis";
  Dims rest;
  for (int64_t a = 1; a < rank; ++a) {
    if (a != axis) rest.push_back(a);
  }
  if (*spatial != rest) return "the norm is not over every axis but the batch and channels";
  const int64_t c = xs.dims[axis].value;
  const auto gamma = channel_values(m.constant("gamma"), rank, axis, c);
  const auto beta = channel_values(m.constant("beta"), rank, axis, c);
  if (!gamma || !beta) return "gamma or beta is not one value per channel";
  const std::string stem = m.node("norm")->name();
  ops::GlobalResponseNorm grn{m["x"], m.add_constant(stem + "_gamma", *gamma),
                              m.add_constant(stem + "_beta", *beta), m.scalar("eps"),
                              axis == rank - 1};
  return m.fuse(grn.spec());
}

Rule response_norm() {
  using namespace pattern;
  Pat x = any("x");
  Pat g = any_of({op("ReduceL2", {x}, false).named("norm"),
                  sqrt(op("ReduceSum", {any_of({pow(x, 2.0f), x * x})}, false).named("norm"))});
  Pat mean = op("ReduceMean", {g}, false).named("mean");
  Pat scaled = product_of({constant("gamma"), x, g / (mean + constant("eps"))});
  Pat y = any_of({(scaled + constant("beta")) + x, (scaled + x) + constant("beta")});
  return {.name = "GlobalResponseNormFusionPass",
          .description =
              "Fuses ConvNeXt-V2's Global Response Normalization (the maps' L2 norms, their ratio "
              "to the mean norm, the affine and the residual) into one kernel",
          .ops = {"ReduceL2", "ReduceMean", "Add", "Div", "Mul", "Mul", "Add", "Add"},
          .patterns = {{"", y}},
          .guards = {guard::float32({"x"}), guard::scalar("eps", "epsilon")},
          .rewrite = fuse_response_norm};
}

}  // namespace

std::unique_ptr<Pass> make_response_norm_pass() { return make_rule_pass(response_norm()); }

}  // namespace nnfuse
