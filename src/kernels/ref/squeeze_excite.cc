// Reference SqueezeExcite: the GlobalAveragePool reference kernel, then the FusedConv reference
// kernel for each part on its own attributes.
#include "kernels/ref/squeeze_excite.h"

#include "kernels/ref/conv_pool.h"
#include "kernels/ref/fused.h"
#include "kernels/ref/nn_internal.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse::ref {

namespace {

const char* attr_prefix(bool excite) { return excite ? kExciteAttrPrefix : kSqueezeAttrPrefix; }

// The part's weight, or nullptr.
const Value* part_weight(const Node& fused, bool excite) {
  const size_t at = excite ? kExciteWeight : kSqueezeWeight;
  return at < fused.num_inputs() ? fused.input(at) : nullptr;
}

}  // namespace

SqueezeExcitePart squeeze_excite_part(const Node& fused, bool excite) {
  SqueezeExcitePart p;
  p.graph = std::make_unique<Graph>();
  const size_t first = excite ? kExciteWeight : kSqueezeWeight;
  const Value* w = part_weight(fused, excite);
  // The part's input: the pooled X, or the squeeze's output, [N, C, 1, 1].
  Shape in_shape;
  const Value* x = fused.num_inputs() > 0 ? fused.input(0) : nullptr;
  const Value* w1 = part_weight(fused, false);
  if (x && x->shape().has_rank && x->shape().dims.size() == 4) {
    in_shape = x->shape();
    in_shape.dims[2] = in_shape.dims[3] = Dim{1, ""};
    if (excite) {
      in_shape.dims[1] =
          w1 && w1->shape().has_rank && w1->shape().dims.size() == 4 ? w1->shape().dims[0] : Dim{};
    }
  }
  Value* in = p.graph->add_value(fused.name() + (excite ? "/squeezed" : "/pooled"),
                                 x ? x->dtype() : DType::kFloat32, in_shape);
  std::vector<Value*> ins = conv_part_inputs(*p.graph, in, fused, first);
  Shape out_shape = in_shape;
  if (out_shape.has_rank) {
    out_shape.dims[1] =
        w && w->shape().has_rank && !w->shape().dims.empty() ? w->shape().dims[0] : Dim{};
  }
  Value* y = p.graph->add_value(excite ? fused.name() + "/excited" : fused.name() + "/squeezed",
                                x ? x->dtype() : DType::kFloat32, out_shape);
  p.node = p.graph->add_node("FusedConv", fused.name() + (excite ? "/excite" : "/squeeze"), ins,
                             {y}, kFusedDomain);
  for (const auto& [name, value] : part_attrs(fused, attr_prefix(excite)))
    p.node->set_attr(name, value);
  return p;
}

std::string squeeze_excite_reason(const Node& fused) {
  if (std::string why = float_inputs_reason(fused); !why.empty()) return why;
  if (fused.num_inputs() < kExciteWeight + 1 || fused.num_inputs() > kExciteWeight + 2 ||
      !fused.input(0)) {
    return "expects X, W1, B1 (may be empty), W2 and B2 (optional)";
  }
  if (fused.num_outputs() != 1) return "SqueezeExcite has one output";
  const int64_t apply = fused.attr_int(kApplyAttr, 0);
  if (apply != 0 && apply != 1) return "apply is " + std::to_string(apply) + ", not 0 or 1";
  int64_t channels = -1;
  const Value* x = fused.input(0);
  if (x->shape().has_rank) {
    if (x->shape().dims.size() != 4) return "X is not 4-D";
    channels = x->shape().dims[1].value;  // -1 when not known
  }
  for (bool excite : {false, true}) {
    const std::string part = excite ? "the excite convolution" : "the squeeze convolution";
    const Value* w = part_weight(fused, excite);
    if (!w) return part + " has no weight";
    if (w->shape().has_rank) {
      const Shape& s = w->shape();
      if (s.dims.size() != 4 || s.dims[2].value != 1 || s.dims[3].value != 1) {
        return part + "'s weight is not [out, in, 1, 1]";
      }
      if (channels >= 0 && s.dims[1].value >= 0 && s.dims[1].value != channels) {
        return part + " reads " + std::to_string(s.dims[1].value) + " channels, not " +
               std::to_string(channels);
      }
      channels = s.dims[0].value;
    } else {
      channels = -1;
    }
    if (excite && apply == 1 && channels >= 0 && x->shape().has_rank &&
        x->shape().dims[1].value >= 0 && channels != x->shape().dims[1].value) {
      return "apply: the scale has " + std::to_string(channels) + " channels, X " +
             std::to_string(x->shape().dims[1].value);
    }
    const SqueezeExcitePart p = squeeze_excite_part(fused, excite);
    if (p.node->attr_int("group", 1) != 1) return part + " is grouped";
    for (int64_t v : p.node->attr_ints("pads", {})) {
      if (v != 0) return part + " is padded";
    }
    if (std::string why = auto_pad_reason(*p.node); !why.empty()) return part + ": " + why;
    if (std::string why = activation_reason(*p.node); !why.empty()) return part + ": " + why;
  }
  return "";
}

namespace {

void run_squeeze_excite(KernelContext& ctx) {
  const RefKernelEntry* pool = find_ref_kernel("GlobalAveragePool");
  NNFUSE_CHECK(pool, "SqueezeExcite needs the GlobalAveragePool reference kernel");
  KernelContext pooled{ctx.node, ctx.opset, {&ctx.in(0)}, std::vector<Tensor>(1)};
  pool->run(pooled);
  const Tensor squeezed = run_conv_part(ctx, *squeeze_excite_part(ctx.node, false).node,
                                        pooled.outputs[0], kSqueezeWeight);
  Tensor scale =
      run_conv_part(ctx, *squeeze_excite_part(ctx.node, true).node, squeezed, kExciteWeight);
  if (!squeeze_excite_applies(ctx.node)) {
    ctx.outputs[0] = std::move(scale);
    return;
  }
  // X times the scale of its image and channel: the Mul reference kernel, broadcasting.
  const RefKernelEntry* mul = find_ref_kernel("Mul");
  NNFUSE_CHECK(mul, "SqueezeExcite needs the Mul reference kernel");
  KernelContext scaled{ctx.node, ctx.opset, {&ctx.in(0), &scale}, std::vector<Tensor>(1)};
  mul->run(scaled);
  ctx.outputs[0] = std::move(scaled.outputs[0]);
}

std::string support_squeeze_excite(const Node& node, int64_t /*opset*/) {
  return squeeze_excite_reason(node);
}

}  // namespace
}  // namespace nnfuse::ref

namespace nnfuse {

void append_squeeze_excite_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"SqueezeExcite", ref::run_squeeze_excite, ref::support_squeeze_excite});
}

}  // namespace nnfuse
