#include "kernels/cpu/conv_spec.h"

#include "kernels/ref/conv_pool.h"
#include "kernels/ref/nn_internal.h"

namespace nnfuse::onednn {

using dnnl::memory;

namespace {

// ConvTranspose geometry, as the reference kernel and the ONNX spec define it: the output size
// from the pads, or the pads from output_shape (or auto_pad SAME, which asks for in * stride
// outputs), the odd unit at the end for SAME_UPPER and at the beginning otherwise.
// Returns false where oneDNN cannot express the result (negative leading pads).
bool transpose_geometry(const Node& node, const Dims& in, const Dims& kernel, ConvSpec& s) {
  const size_t r = in.size();
  s.strides = ref::spatial_attr(node, "strides", r, 1, true);
  const Dims dil = ref::spatial_attr(node, "dilations", r, 1, true);
  const Dims out_pad = ref::spatial_attr(node, "output_padding", r, 0, false);
  const ref::AutoPad ap = ref::read_auto_pad(node);
  const bool same = ap == ref::AutoPad::kSameUpper || ap == ref::AutoPad::kSameLower;
  Dims out_shape;
  if (node.has_attr("output_shape")) {
    out_shape = node.attr_ints("output_shape");
    if (out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    if (out_shape.size() != r) return false;
  }
  Dims pads;
  if (out_shape.empty() && ap == ref::AutoPad::kNotSet) {
    pads = ref::spatial_attr(node, "pads", 2 * r, 0, false);
  }
  Dims out(r);
  s.dilations.clear();
  s.pad_l.assign(r, 0);
  s.pad_r.assign(r, 0);
  for (size_t j = 0; j < r; ++j) {
    if (out_pad[j] < 0 || out_pad[j] >= s.strides[j] || kernel[j] > ref::kMaxGeometryValue ||
        in[j] > ref::kMaxGeometryValue) {
      return false;
    }
    const int64_t full = s.strides[j] * (in[j] - 1) + out_pad[j] + (kernel[j] - 1) * dil[j] + 1;
    int64_t begin = 0, end = 0;
    if (!out_shape.empty() || same) {
      out[j] = out_shape.empty() ? in[j] * s.strides[j] : out_shape[j];
      if (out[j] < 1 || out[j] > ref::kMaxGeometryValue) return false;
      const int64_t total = full - out[j];
      if (ap == ref::AutoPad::kSameUpper) {
        begin = ref::floor_div(total, 2);
        end = total - begin;
      } else {
        end = ref::floor_div(total, 2);
        begin = total - end;
      }
    } else {
      begin = pads[j];
      end = pads[r + j];
      if (begin < 0 || end < 0) return false;
      out[j] = full - begin - end;
      if (out[j] < 1) return false;
    }
    if (begin < 0) return false;
    s.dilations.push_back(dil[j] - 1);
    s.pad_l[j] = begin;
    s.pad_r[j] = end - out_pad[j];
  }
  s.y_shape.insert(s.y_shape.end(), out.begin(), out.end());
  return true;
}

// FusedConvPool's pooling part, from its pool_ attributes over the conv's output shape.
bool pool_geometry(const NodeInfo& info, ConvSpec& s) {
  if (s.x_shape.size() != 4 || info.node.num_outputs() != 1) return false;
  ref::PoolPart part = ref::pool_part(info.node, s.y_shape);
  NodeInfo pool_info{*part.node, 17, {Layout::kNHWC}, info.num_threads};
  std::optional<PoolSpec> p = pool_spec(pool_info);
  if (!p || p->alg != dnnl::algorithm::pooling_max) return false;
  s.pool = ConvPool{*p, pool_output_layout(info.node)};
  return output_shape_is(info, p->y_shape);
}

// FusedConvSplit: `split` (one positive size per output, 2 or more) cuts the computed 4-D
// output's channels into the outputs' shapes.
bool split_geometry(const NodeInfo& info, ConvSpec& s) {
  s.split = info.node.attr_ints("split", {});
  if (s.split.size() < 2 || s.y_shape.size() != 4) return false;
  int64_t total = 0;
  for (size_t k = 0; k < s.split.size(); ++k) {
    if (s.split[k] <= 0) return false;
    Dims part = s.y_shape;
    part[1] = s.split[k];
    const std::optional<Dims> out = info.output_shape(k);
    if (out && *out != part) return false;
    total += s.split[k];
  }
  return total == s.y_shape[1];
}

}  // namespace

Dims tail(const Dims& d, size_t from) {
  return Dims(d.begin() + static_cast<int64_t>(from), d.end());
}

Dims prim(const ConvSpec& s, Dims d) {
  if (s.lift) d.insert(s.lift_h ? d.end() : d.begin() + 2, 1);
  return d;
}

memory::desc input_view(const ConvSpec& s) {
  if (!s.subsample) return f32_desc(prim(s, s.x_shape), s.in_layout);
  const int64_t c = s.x_shape[1], h = s.x_shape[2], w = s.x_shape[3];
  const int64_t sh = s.strides[0], sw = s.strides[1];
  const Dims dims = {s.x_shape[0], c, s.y_shape[2], s.y_shape[3]};
  const Dims strides = s.in_layout == Layout::kNHWC ? Dims{h * w * c, 1, sh * w * c, sw * c}
                                                    : Dims{c * h * w, h * w, sh * w, sw};
  return memory::desc(to_dims(dims), memory::data_type::f32, to_dims(strides));
}

bool winograd_geometry(const ConvSpec& s) {
  if (s.transpose || s.x_shape.size() != 4 || s.group != 1 || !s.split.empty()) return false;
  if (s.w_shape[2] != 3 || s.w_shape[3] != 3) return false;
  for (size_t j = 0; j < 2; ++j) {
    if (s.strides[j] != 1 || s.dilations[j] != 0) return false;
  }
  return true;
}

Layout pool_output_layout(const Node& node) {
  const Value* y = node.output(0);
  if (!y || y->uses().empty()) return Layout::kNHWC;
  for (const Use& u : y->uses()) {
    if (!u.node->is(Op::kFlatten) && !u.node->is(Op::kReshape)) return Layout::kNHWC;
  }
  return Layout::kPlain;
}

NodeInfo skip_info(const NodeInfo& info, const ref::SkipPart& part) {
  std::vector<Layout> layouts;
  std::vector<const Tensor*> constants;
  for (size_t i = 0; i < part.node->num_inputs(); ++i) {
    const size_t j = ref::kSkipInput + i;
    layouts.push_back(j < info.input_layouts.size() ? info.input_layouts[j] : Layout::kPlain);
    constants.push_back(i == 0 ? nullptr : info.constant(j));
  }
  return NodeInfo{*part.node, info.opset, std::move(layouts), info.num_threads,
                  std::move(constants)};
}

std::optional<ConvSpec> skip_spec(const NodeInfo& info, const ConvSpec& main, std::string* why) {
  const ref::SkipPart part = ref::skip_part(info.node);
  const NodeInfo si = skip_info(info, part);
  std::string skip_why;
  std::optional<ConvSpec> k = conv_spec(si, ConvOp::kConv, &skip_why);
  if (!k) return decline(why, "the skip convolution: ", skip_why);
  if (k->y_shape != main.y_shape || k->out_layout != main.out_layout) {
    return decline(why, "the skip convolution writes ", dims_str(k->y_shape), ", not the output's ",
                   dims_str(main.y_shape));
  }
  return k;
}

std::optional<ConvSpec> conv_spec(const NodeInfo& info, ConvOp op, std::string* why) {
  const Node& node = info.node;
  const bool transpose = op == ConvOp::kTranspose;
  const bool fused = op == ConvOp::kFused || op == ConvOp::kFusedPool || op == ConvOp::kFusedSplit;
  const size_t max_inputs = op == ConvOp::kFused ? 7 : op == ConvOp::kFusedPool ? 4 : 3;
  size_t outputs = 1;
  if (op == ConvOp::kFusedSplit) {
    try {
      outputs = node.attr_ints("split", {}).size();
    } catch (const Error& e) {
      return decline(why, "attributes: ", e.what());
    }
  }
  if (node.num_outputs() != outputs || outputs == 0 || node.num_inputs() < 2 ||
      node.num_inputs() > max_inputs) {
    return decline(why, node.num_inputs(), " inputs and ", node.num_outputs(), " outputs");
  }
  for (size_t i = 0; i < 2; ++i) {
    if (std::string r = not_static_f32(info, i); !r.empty()) return decline(why, r);
  }
  const Tensor* w = info.constant(1);
  if (!w || w->dtype() != DType::kFloat32 || w->layout() != Layout::kPlain) {
    return decline(why, "the weight ", input_label(info, 1), " is not a constant");
  }
  ConvSpec s;
  s.transpose = transpose;
  s.x_shape = *known_shape(info, 0);
  s.w_shape = w->shape();
  const size_t rank = s.x_shape.size();
  if (rank < 3 || rank > 5 || s.w_shape.size() != rank) {
    return decline(why, "input of rank ", rank,
                   " (runs 3-D to 5-D inputs with weights of the same rank)");
  }
  for (size_t j = 0; j < rank; ++j) {
    if (s.x_shape[j] < 1 || s.w_shape[j] < 1) return decline(why, "an empty input or weight");
  }
  s.in_layout = input_layout(info, 0);
  if (s.in_layout != Layout::kPlain && s.in_layout != Layout::kNHWC) {
    return decline(why, "input in layout ", layout_name(s.in_layout));
  }
  s.out_layout = Layout::kNHWC;
  try {
    s.group = node.attr_int("group", 1);
    const int64_t c = s.x_shape[1];
    if (s.group < 1 || c % s.group != 0) {
      return decline(why, "group ", s.group, " does not divide ", c, " channels");
    }
    int64_t m = 0;
    if (transpose) {
      if (s.w_shape[0] != c || s.w_shape[1] > ref::kMaxGeometryValue) {
        return decline(why, "weight ", dims_str(s.w_shape), " does not match ", c, " channels");
      }
      m = s.w_shape[1] * s.group;
    } else {
      m = s.w_shape[0];
      if (s.w_shape[1] * s.group != c || m % s.group != 0) {
        return decline(why, "weight ", dims_str(s.w_shape), " does not match ", c, " channels in ",
                       s.group, " groups");
      }
    }
    if (info.has_input(2)) {
      const Tensor* b = info.constant(2);
      if (!b || b->dtype() != DType::kFloat32 || b->shape() != Dims{m}) {
        return decline(why, "the bias ", input_label(info, 2), " is not a float32 constant of [", m,
                       "]");
      }
      s.bias = true;
    }
    const Dims kernel = tail(s.w_shape, 2);
    if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel) {
      return decline(why, "kernel_shape differs from the weight's ", dims_str(kernel));
    }
    s.y_shape = {s.x_shape[0], m};
    if (transpose) {
      if (!transpose_geometry(node, tail(s.x_shape, 2), kernel, s)) {
        return decline(why, "output_shape, pads or output_padding oneDNN cannot express");
      }
    } else {
      ref::WindowGeometry g = ref::window_geometry(node, tail(s.x_shape, 2), kernel, false);
      s.y_shape.insert(s.y_shape.end(), g.out.begin(), g.out.end());
      s.strides = g.strides;
      for (int64_t d : g.dilations) s.dilations.push_back(d - 1);
      s.pad_l = g.pad_begin;
      s.pad_r = g.pad_end;
    }
    if (rank == 3) {
      s.lift = true;
      s.strides.insert(s.strides.begin(), 1);
      s.dilations.insert(s.dilations.begin(), 0);
      s.pad_l.insert(s.pad_l.begin(), 0);
      s.pad_r.insert(s.pad_r.begin(), 0);
    }
  } catch (const Error& e) {
    return decline(why, "attributes: ", e.what());  // the reference kernel reports them
  }
  if (op == ConvOp::kFusedPool) {
    if (!pool_geometry(info, s)) return decline(why, "its pooling part is not a oneDNN max pool");
  } else if (op == ConvOp::kFusedSplit) {
    if (!split_geometry(info, s)) {
      return decline(why, "the split does not cut the 4-D output's channels into its outputs");
    }
  } else if (!output_shape_is(info, s.y_shape)) {
    return decline(why, "output shape differs from the computed ", dims_str(s.y_shape));
  }
  if (fused) {
    std::optional<ref::Activation> act = fused_activation(node, /*quantize=*/true);
    if (!act) return decline(why, "an activation oneDNN's post-ops do not compute exactly");
    s.act = *act;
    if (info.has_input(3)) {
      if (std::string r = not_static_f32(info, 3); !r.empty()) return decline(why, r);
      if (*known_shape(info, 3) != s.y_shape) {
        return decline(why, "the residual ", input_label(info, 3), " is not of the output's shape ",
                       dims_str(s.y_shape));
      }
      s.sum = true;
      s.sum_layout = input_layout(info, 3);
      if (s.sum_layout != s.out_layout && s.sum_layout != Layout::kPlain) {
        return decline(why, "the residual arrives in layout ", layout_name(s.sum_layout));
      }
      if (s.pool && s.x_shape.size() != 4) return decline(why, "a pooled residual of rank ", rank);
    }
    if (ref::has_skip_conv(node)) {
      if (s.sum) return decline(why, "both a residual Sum and a skip convolution");
      if (!skip_spec(info, s, why)) return std::nullopt;
      s.sum = true;
      s.sum_layout = s.out_layout;
      s.skip = true;
    }
  }
  if (!transpose && rank == 4 && s.w_shape[2] == 1 && s.w_shape[3] == 1) {
    bool unpadded = true, strided = false;
    for (size_t j = 0; j < 2; ++j) {
      unpadded = unpadded && s.pad_l[j] == 0 && s.pad_r[j] == 0;
      strided = strided || s.strides[j] > 1;
    }
    s.subsample = unpadded && strided;
    try {
      input_view(s);
    } catch (const dnnl::error&) {
      s.subsample = false;
    }
  }
  return s;
}

}  // namespace nnfuse::onednn
