// Reference ExpandDepthwise: the FusedConv reference kernel for each part on its own attributes.
#include "kernels/ref/expand_depthwise.h"

#include <algorithm>

#include "kernels/ref/conv_pool.h"
#include "kernels/ref/fused.h"
#include "kernels/ref/nn_internal.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse::ref {

namespace {

const char* prefix_of(bool depthwise) {
  return depthwise ? kDepthwiseAttrPrefix : kExpandAttrPrefix;
}

const Value* input_or_null(const Node& n, size_t i) {
  return i < n.num_inputs() ? n.input(i) : nullptr;
}

// [N, E, He, We]: the expansion's output, X's shape with its output channels and the
// spatial dims its kernel, pads and strides give (unknown where they are).
Shape expanded_shape(const Node& fused) {
  const Value* x = input_or_null(fused, 0);
  const Value* w1 = input_or_null(fused, kExpandWeight);
  if (!x || !x->shape().has_rank || x->shape().dims.size() != 4) return {};
  Shape s = x->shape();
  const bool w1_4d = w1 && w1->shape().has_rank && w1->shape().dims.size() == 4;
  s.dims[1] = w1 && w1->shape().has_rank && !w1->shape().dims.empty() ? w1->shape().dims[0] : Dim{};
  const std::string prefix = kExpandAttrPrefix;
  const std::vector<int64_t> pads = fused.attr_ints(prefix + "pads", {0, 0, 0, 0});
  const std::vector<int64_t> strides = fused.attr_ints(prefix + "strides", {1, 1});
  for (size_t a = 0; a < 2; ++a) {
    Dim& d = s.dims[2 + a];
    const int64_t k = w1_4d ? w1->shape().dims[2 + a].value : -1;
    const bool valid = k >= 1 && pads.size() == 4 && strides.size() == 2 && strides[a] >= 1;
    if (valid && k == 1 && pads[a] == 0 && pads[a + 2] == 0 && strides[a] == 1) continue;  // X's
    if (!valid || !d.known()) {
      d = Dim{};
      continue;
    }
    const int64_t span = d.value + pads[a] + pads[a + 2] - k;
    d = span < 0 ? Dim{} : Dim{span / strides[a] + 1, ""};
  }
  return s;
}

}  // namespace

ExpandDepthwisePart expand_depthwise_part(const Node& fused, bool depthwise) {
  ExpandDepthwisePart p;
  p.graph = std::make_unique<Graph>();
  const Value* x = input_or_null(fused, 0);
  const DType dtype = x ? x->dtype() : DType::kFloat32;
  const Shape expanded = expanded_shape(fused);
  Value* in = depthwise ? p.graph->add_value(fused.name() + "/expanded", dtype, expanded)
                        : p.graph->add_value(x ? x->name() : fused.name() + "/x", dtype,
                                             x ? x->shape() : Shape{});
  std::vector<Value*> ins =
      conv_part_inputs(*p.graph, in, fused, depthwise ? kDepthwiseWeight : kExpandWeight);
  const Value* out = fused.num_outputs() > 0 ? fused.output(0) : nullptr;
  Value* y = depthwise ? p.graph->add_value(out ? out->name() : fused.name() + "/y", dtype,
                                            out ? out->shape() : Shape{})
                       : p.graph->add_value(fused.name() + "/expanded", dtype, expanded);
  p.node = p.graph->add_node("FusedConv", fused.name() + (depthwise ? "/depthwise" : "/expand"),
                             ins, {y}, kFusedDomain);
  for (const auto& [name, value] : part_attrs(fused, prefix_of(depthwise)))
    p.node->set_attr(name, value);
  return p;
}

std::string expand_depthwise_reason(const Node& fused) {
  if (std::string why = float_inputs_reason(fused); !why.empty()) return why;
  if (fused.num_inputs() < kDepthwiseWeight + 1 || fused.num_inputs() > kDepthwiseWeight + 2 ||
      !fused.input(0)) {
    return "expects X, W1, B1 (may be empty), W2 and B2 (optional)";
  }
  if (fused.num_outputs() != 1) return "ExpandDepthwise has one output";
  const Value* x = fused.input(0);
  if (x->shape().has_rank && x->shape().dims.size() != 4) return "X is not 4-D";
  const Value* w1 = fused.input(kExpandWeight);
  const Value* w2 = fused.input(kDepthwiseWeight);
  if (!w1) return "the expansion has no weight";
  if (!w2) return "the depthwise convolution has no weight";
  int64_t expanded = -1;
  if (w1->shape().has_rank) {
    const Shape& s = w1->shape();
    if (s.dims.size() != 4) return "the expansion's weight is not [E, C, kh, kw]";
    const int64_t c = x->shape().has_rank ? x->shape().dims[1].value : -1;
    if (c >= 0 && s.dims[1].value >= 0 && s.dims[1].value != c) {
      return "the expansion reads " + std::to_string(s.dims[1].value) + " channels, not " +
             std::to_string(c);
    }
    expanded = s.dims[0].value;
  }
  if (w2->shape().has_rank) {
    const Shape& s = w2->shape();
    if (s.dims.size() != 4 || s.dims[1].value != 1) {
      return "the depthwise weight is not [E, 1, k, k]";
    }
    if (expanded >= 0 && s.dims[0].value >= 0 && s.dims[0].value != expanded) {
      return "the depthwise convolution writes " + std::to_string(s.dims[0].value) +
             " channels, not the " + std::to_string(expanded) + " expanded";
    }
  }
  for (bool depthwise : {false, true}) {
    const std::string part = depthwise ? "the depthwise convolution" : "the expansion";
    const ExpandDepthwisePart p = expand_depthwise_part(fused, depthwise);
    if (std::string why = auto_pad_reason(*p.node); !why.empty()) return part + ": " + why;
    if (std::string why = activation_reason(*p.node); !why.empty()) return part + ": " + why;
    if (p.node->attr_string("auto_pad", "NOTSET") != "NOTSET") return part + " uses auto_pad";
    for (int64_t v : p.node->attr_ints("dilations", {})) {
      if (v != 1) return part + " is dilated";
    }
    if (!depthwise) {
      if (std::string why = expansion_attrs_reason(*p.node); !why.empty()) return why;
    } else if (expanded >= 0 && p.node->attr_int("group", 1) != expanded) {
      return part + " is not grouped by its " + std::to_string(expanded) + " channels";
    }
  }
  return "";
}

namespace {

void run_expand_depthwise(KernelContext& ctx) {
  const Tensor expanded =
      run_conv_part(ctx, *expand_depthwise_part(ctx.node, false).node, ctx.in(0), kExpandWeight);
  ctx.outputs[0] =
      run_conv_part(ctx, *expand_depthwise_part(ctx.node, true).node, expanded, kDepthwiseWeight);
}

std::string support_expand_depthwise(const Node& node, int64_t /*opset*/) {
  return expand_depthwise_reason(node);
}

}  // namespace
}  // namespace nnfuse::ref

namespace nnfuse {

void append_expand_depthwise_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"ExpandDepthwise", ref::run_expand_depthwise, ref::support_expand_depthwise});
}

}  // namespace nnfuse
