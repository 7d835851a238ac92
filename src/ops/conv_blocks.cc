#include "ops/conv_blocks.h"

#include <algorithm>

#include "ir/builder.h"
#include "ir/error.h"
#include "ir/saturate.h"
#include "ops/infer_util.h"

namespace nnfuse::ops {

namespace {

std::string infer_expand_depthwise(const Node& n, std::vector<OutputType>& out) {
  using namespace expand_depthwise;
  out.assign(1, {});
  out[0].dtype = like_input(n, kX).dtype;
  Shape expanded;
  if (std::string why = conv_output(input_shape(n, kX), input_shape(n, kExpandW),
                                    ConvAttrs::of(n, kExpandPrefix), &expanded);
      !why.empty()) {
    return why;
  }
  return conv_output(expanded, input_shape(n, kDepthwiseW), ConvAttrs::of(n, kDepthwisePrefix),
                     &out[0].shape);
}

std::string infer_squeeze_excite(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, like_input(n, squeeze_excite::kX));
  if (squeeze_excite::applies(n)) return "";
  const Shape& x = out[0].shape;
  if (!x.has_rank) return "";
  if (x.dims.size() != 4) return "X is not 4-D";
  const int64_t c2 = dim_of(input_shape(n, squeeze_excite::kExciteW), 0);
  out[0].shape = Shape{true, {x.dims[0], c2 >= 0 ? Dim{c2, ""} : Dim{}, Dim{1, ""}, Dim{1, ""}}};
  return "";
}

std::string infer_scale_shift(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, like_input(n, scale_shift::kX));
  if (n.num_inputs() <= scale_shift::kFirstPart || !out[0].shape.has_rank) return "";
  // The concatenation of the parts along dim 1.
  Shape& y = out[0].shape;
  if (y.dims.size() < 2) return "X is not of rank 2 or more";
  int64_t c = dim_of(y, 1);
  for (size_t i = scale_shift::kFirstPart; i < n.num_inputs(); ++i) {
    const int64_t ci = dim_of(input_shape(n, i), 1);
    c = c < 0 || ci < 0 ? -1 : c + ci;
  }
  y.dims[1] = c >= 0 ? Dim{c, ""} : Dim{};
  return "";
}

int64_t expand_depthwise_flops(const Node& n) {
  using namespace expand_depthwise;
  // The expansion sums C * kh * kw products per expanded element, the depthwise conv k * k per
  // output.
  const auto y = known_dims(n.output(0));
  const auto x = known_dims(n.input(kX));
  const auto w1 = known_dims(n.input(kExpandW));
  const auto w2 = known_dims(n.input(kDepthwiseW));
  if (!y || !x || !w1 || !w2 || x->size() != 4 || w1->size() != 4 || w2->size() != 4) return -1;
  const std::string prefix = kExpandPrefix;
  const Dims pads = n.attr_ints(prefix + "pads", {0, 0, 0, 0});
  const Dims strides = n.attr_ints(prefix + "strides", {1, 1});
  if (pads.size() != 4 || strides.size() != 2 || strides[0] < 1 || strides[1] < 1) return -1;
  auto extent = [](int64_t span, int64_t stride) { return span < 0 ? 0 : span / stride + 1; };
  const int64_t he = extent((*x)[2] + pads[0] + pads[2] - (*w1)[2], strides[0]);
  const int64_t we = extent((*x)[3] + pads[1] + pads[3] - (*w1)[3], strides[1]);
  const int64_t expanded = sat_mul(sat_mul((*x)[0], (*w1)[0]), sat_mul(he, we));
  return sat_add(sat_mul(sat_mul(2, expanded), sat_mul((*w1)[1], sat_mul((*w1)[2], (*w1)[3]))),
                 sat_mul(sat_mul(2, checked_numel(*y)), sat_mul((*w2)[2], (*w2)[3])));
}

int64_t squeeze_excite_flops(const Node& n) {
  using namespace squeeze_excite;
  // The pool adds every X value; each part sums `in` products per output; applied, every X value
  // is multiplied once more.
  const auto y = known_dims(n.output(0));
  const auto x = known_dims(n.input(kX));
  const auto w1 = known_dims(n.input(kSqueezeW));
  const auto w2 = known_dims(n.input(kExciteW));
  if (!y || !x || !w1 || !w2 || x->empty()) return -1;
  const int64_t images = (*x)[0];
  return sat_add(sat_mul(checked_numel(*x), applies(n) ? 2 : 1),
                 sat_mul(sat_mul(2, images), sat_add(checked_numel(*w1), checked_numel(*w2))));
}

// A ScaleShift of a concatenation (inputs 3 on are further parts) is a data movement.
OpClass scale_shift_class(const Node& n) {
  return n.num_inputs() > scale_shift::kFirstPart ? OpClass::kOpaque : OpClass::kBroadcast;
}

// The attributes of FusedConv parts under their prefixes.
std::vector<AttrSpec> part_specs(const std::vector<std::string>& prefixes) {
  using K = Attribute::Kind;
  static const std::pair<const char*, K> kPart[] = {{"auto_pad", K::kString},
                                                    {"dilations", K::kInts},
                                                    {"group", K::kInt},
                                                    {"kernel_shape", K::kInts},
                                                    {"pads", K::kInts},
                                                    {"strides", K::kInts},
                                                    {"activation", K::kString},
                                                    {"activation_alpha", K::kFloat},
                                                    {"activation_beta", K::kFloat}};
  std::vector<AttrSpec> r;
  for (const std::string& p : prefixes) {
    for (const auto& [name, kind] : kPart) r.push_back({p + name, kind});
  }
  return r;
}

}  // namespace

namespace expand_depthwise {

std::string expansion_attrs_reason(const Node& conv) {
  if (conv.attr_int("group", 1) != 1) return "the expansion is grouped";
  for (int64_t v : conv.attr_ints("dilations", {})) {
    if (v != 1) return "the expansion is dilated";
  }
  if (conv.attr_string("auto_pad", "NOTSET") != "NOTSET") return "the expansion uses auto_pad";
  const std::vector<int64_t> pads = conv.attr_ints("pads", {0, 0, 0, 0});
  const std::vector<int64_t> strides = conv.attr_ints("strides", {1, 1});
  if (pads.size() != 4 || std::any_of(pads.begin(), pads.end(), [](int64_t v) { return v < 0; }))
    return "the expansion does not have four non-negative pads";
  if (strides.size() != 2 || strides[0] < 1 || strides[1] < 1)
    return "the expansion does not have two positive strides";
  return "";
}

std::string fast_depthwise_reason(const Node& dw, const Dims& w) {
  const int64_t k = w.size() == 4 ? w[2] : -1;
  if (w.size() != 4 || w[3] != k || (k != 3 && k != 5)) {
    return "the depthwise kernel is not 3x3 or 5x5";
  }
  const std::vector<int64_t> s = dw.attr_ints("strides", {1, 1});
  if (s.size() != 2 || s[0] != s[1] || (s[0] != 1 && s[0] != 2)) {
    return "the depthwise strides are not 1 or 2 on both axes";
  }
  for (int64_t v : dw.attr_ints("dilations", {})) {
    if (v != 1) return "the depthwise conv is dilated";
  }
  if (dw.attr_string("auto_pad", "NOTSET") != "NOTSET") return "the depthwise conv uses auto_pad";
  const std::vector<int64_t> pads = dw.attr_ints("pads", {});
  if (pads.size() != 4 ||
      std::any_of(pads.begin(), pads.end(), [&](int64_t v) { return v != k / 2; })) {
    return "the depthwise convolution is not padded by " + std::to_string(k / 2) + " on every side";
  }
  return "";
}

}  // namespace expand_depthwise

ConvPart ConvPart::of(const Node& n, const std::string& prefix) {
  ConvPart p;
  p.conv = ConvAttrs::of(n, prefix);
  if (prefix.empty()) {
    if (!n.is(Op::kConv)) p.act = read_activation(n);
    return p;
  }
  const std::string name = n.attr_string(prefix + "activation", "");
  const auto kind = activation_kind(name);
  if (!kind) {
    fail(ErrorKind::kUnsupported, n.describe(), ": unknown ", prefix, "activation '", name, "'");
  }
  p.act = Activation::of(*kind);
  p.act.alpha = n.attr_float(prefix + "activation_alpha", p.act.alpha);
  p.act.beta = n.attr_float(prefix + "activation_beta", p.act.beta);
  return p;
}

void ConvPart::write(Attrs& attrs, const std::string& prefix) const {
  conv.write(attrs, prefix);
  Attrs a;
  act.write(a);
  for (auto& [name, value] : a) attrs[prefix + name] = value;
}

NodeSpec ExpandDepthwise::spec() const {
  NodeSpec s{Op::kExpandDepthwise, {x, w1, b1, w2, b2}, {}};
  expand.write(s.attrs, expand_depthwise::kExpandPrefix);
  depthwise.write(s.attrs, expand_depthwise::kDepthwisePrefix);
  return s;
}

SqueezeExcite SqueezeExcite::of(const Node& n) {
  using namespace squeeze_excite;
  SqueezeExcite s;
  s.x = optional_input(&n, kX);
  s.w1 = optional_input(&n, kSqueezeW);
  s.b1 = optional_input(&n, kSqueezeB);
  s.w2 = optional_input(&n, kExciteW);
  s.b2 = optional_input(&n, kExciteB);
  s.squeeze = ConvPart::of(n, kSqueezePrefix);
  s.excite = ConvPart::of(n, kExcitePrefix);
  s.apply = applies(n);
  return s;
}

NodeSpec SqueezeExcite::spec() const {
  NodeSpec s{Op::kSqueezeExcite, {x, w1, b1, w2, b2}, {}};
  squeeze.write(s.attrs, squeeze_excite::kSqueezePrefix);
  excite.write(s.attrs, squeeze_excite::kExcitePrefix);
  if (apply) s.attrs["apply"] = attr_int(1);
  return s;
}

NodeSpec ScaleShift::spec() const {
  NodeSpec s{Op::kScaleShift, {x, scale, shift}, {}};
  s.inputs.insert(s.inputs.end(), more_parts.begin(), more_parts.end());
  act.write(s.attrs);
  return s;
}

void append_conv_block_defs(std::vector<OpDef>& t) {
  using K = Attribute::Kind;
  t.push_back(
      {.op = Op::kExpandDepthwise,
       .summary = "FusedConv(FusedConv(X, W1, B1), W2, B2): an expansion (or stem) conv "
                  "and the depthwise conv after it",
       .inputs = {{"X"}, {"W1"}, {"B1", true}, {"W2"}, {"B2", true}},
       .outputs = {{"Y"}},
       .attrs = part_specs({expand_depthwise::kExpandPrefix, expand_depthwise::kDepthwisePrefix}),
       .traits = {.op_class = OpClass::kOpaque, .compute = true, .flops = expand_depthwise_flops},
       .infer = infer_expand_depthwise,
       .ort = {.kind = OrtForm::Kind::kLowering, .summary = "FusedConv, FusedConv"}});
  std::vector<AttrSpec> se =
      part_specs({squeeze_excite::kSqueezePrefix, squeeze_excite::kExcitePrefix});
  se.push_back({"apply", K::kInt, "0"});
  t.push_back(
      {.op = Op::kSqueezeExcite,
       .summary = "FusedConv(FusedConv(GlobalAveragePool(X), W1, B1), W2, B2), or X times "
                  "it with apply = 1",
       .inputs = {{"X"}, {"W1"}, {"B1", true}, {"W2"}, {"B2", true}},
       .outputs = {{"Y"}},
       .attrs = se,
       .traits = {.op_class = OpClass::kOpaque, .compute = true, .flops = squeeze_excite_flops},
       .infer = infer_squeeze_excite,
       .ort = {.kind = OrtForm::Kind::kLowering,
               .summary = "GlobalAveragePool, FusedConv, FusedConv (and Mul)"}});
  t.push_back({.op = Op::kScaleShift,
               .summary = "act(X * Scale[c] + Shift[c]) over dim 1; X the concatenation of the "
                          "parts along dim 1 when there are more",
               .inputs = {{"X"}, {"Scale"}, {"Shift"}, {"X2", true, true}},
               .outputs = {{"Y"}},
               .attrs = {{"activation", K::kString, ""},
                         {"activation_alpha", K::kFloat, "the activation's"},
                         {"activation_beta", K::kFloat, "the activation's"}},
               .traits = {.op_class = OpClass::kBroadcast,
                          .node_class = scale_shift_class,
                          .compute = true},
               .infer = infer_scale_shift,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "a depthwise 1x1 FusedConv, or BatchNormalization and the "
                                  "activation; of a concatenation, a Concat first"}});
}

}  // namespace nnfuse::ops
