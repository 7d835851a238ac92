// ConvBatchnormFusionPass: BatchNormalization(Conv(x, W, B)) == Conv(x, W', B') with, per
// output channel c, s = scale[c] / sqrt(var[c] + epsilon), W'[c] = W[c] * s and
// B'[c] = (B[c] - mean[c]) * s + bias[c] (epsilon inside the square root, as ONNX defines).
// BatchNormScaleShiftPass: a BatchNormalization no conv took == ScaleShift(x, s, bias - mean * s)
// (ai.nnfuse), one multiply-add per element with the statistics folded at compile time.
// ConcatScaleShiftFusionPass: ScaleShift(Concat(x1, ..., xn, axis 1)), the Concat read by
// nothing else == ScaleShift(x1, s, t, x2, ..., xn): each part scaled as it is written.
#include <cmath>
#include <optional>
#include <utility>

#include "ops/conv_blocks.h"
#include "ops/onnx_ops.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Pat;

// "" when the BatchNormalization is an inference one whose statistics nothing else reads.
std::string inference_bn(const RuleMatch& m) {
  const Node& bn = *m.node("bn");
  if (bn.attr_int("training_mode", 0) != 0) return "BatchNormalization is in training mode";
  for (size_t k = 1; k < bn.num_outputs(); ++k) {
    if (bn.output(k)) return "BatchNormalization's running statistics are used";
  }
  return "";
}

// Per channel, s = scale / sqrt(var + epsilon) and t = shift - mean * s: the BatchNormalization
// as y = x * s + t. nullopt when the parameters are not float32 vectors of `c` elements.
struct Folded {
  std::vector<double> s, t, mean, shift;
};
std::optional<Folded> fold_bn(const RuleMatch& m, int64_t c) {
  const Tensor* p[4] = {m.constant("scale"), m.constant("shift"), m.constant("mean"),
                        m.constant("var")};
  for (const Tensor* t : p) {
    if (t->dtype() != DType::kFloat32 || t->rank() != 1 || t->numel() != c) return std::nullopt;
  }
  const double eps = m.node("bn")->attr_float("epsilon", 1e-5f);
  Folded f;
  for (int64_t i = 0; i < c; ++i) {
    const double s =
        p[0]->data<float>()[i] / std::sqrt(static_cast<double>(p[3]->data<float>()[i]) + eps);
    f.s.push_back(s);
    f.t.push_back(p[1]->data<float>()[i] - p[2]->data<float>()[i] * s);
    f.mean.push_back(p[2]->data<float>()[i]);
    f.shift.push_back(p[1]->data<float>()[i]);
  }
  return f;
}

// The Conv's bias, a constant (nullptr: none).
const Tensor* conv_bias(const RuleMatch& m) {
  const Node* cn = m.node("conv");
  return cn->num_inputs() > 2 && cn->input(2) ? pattern::constant_value(cn->input(2)) : nullptr;
}

// "" when the Conv's weights and bias and the BatchNormalization's parameters are float32 with
// one value per output channel.
std::string conv_params(const RuleMatch& m) {
  const Node* cn = m.node("conv");
  const Tensor* w = m.constant("w");
  const Tensor* b = conv_bias(m);
  if (cn->num_inputs() > 2 && cn->input(2) && !b) return "the Conv bias is not a constant";
  if (w->dtype() != DType::kFloat32 || w->rank() < 3) return "Conv weights are not float32";
  if (!fold_bn(m, w->dim(0))) {
    return "BatchNormalization parameters do not have one float32 per output channel";
  }
  if (b && (b->dtype() != DType::kFloat32 || b->numel() != w->dim(0))) {
    return "the Conv bias does not have one float32 per output channel";
  }
  return "";
}

// "" when the parameters are float32 vectors of the length of the input's dim 1.
std::string bn_channels(const RuleMatch& m) {
  const Shape& x = m["x"]->shape();
  const int64_t c = m.constant("scale")->numel();
  if (!fold_bn(m, c)) return "the parameters are not float32 vectors of one length";
  if (!x.has_rank || x.dims.size() < 2 || (x.dims[1].known() && x.dims[1].value != c)) {
    return "the input's dim 1 is not the parameters' length";
  }
  return "";
}

pattern::Pat bn_of(const pattern::Pat& x) {
  using namespace pattern;
  return op("BatchNormalization",
            {x, constant("scale"), constant("shift"), constant("mean"), constant("var")}, false)
      .named("bn");
}

// The conv's weights and bias with the BatchNormalization folded in, per output channel c:
// W'[c] = W[c] * s[c], B'[c] = (B[c] - mean[c]) * s[c] + shift[c] (B 0 when absent).
std::pair<Tensor, Tensor> fold_into_conv(const Tensor& w, const Tensor* b, const Folded& f) {
  const int64_t cout = w.dim(0), per = w.numel() / cout;
  Tensor w2 = w.clone();
  Tensor b2(DType::kFloat32, {cout});
  for (int64_t c = 0; c < cout; ++c) {
    float* wc = w2.data<float>() + c * per;
    for (int64_t i = 0; i < per; ++i) wc[i] = static_cast<float>(wc[i] * f.s[c]);
    b2.data<float>()[c] =
        static_cast<float>(((b ? b->data<float>()[c] : 0.0) - f.mean[c]) * f.s[c] + f.shift[c]);
  }
  return {std::move(w2), std::move(b2)};
}

Rule conv_bn() {
  using namespace pattern;
  return {.name = "ConvBatchnormFusionPass",
          .description = "Folds BatchNormalization into the preceding Conv's weights and bias",
          .ops = {"Conv", "BatchNormalization"},
          .patterns = {{"", bn_of(op("Conv", {any("x"), constant("w")}, false).named("conv"))}},
          .guards = {inference_bn, conv_params},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Tensor* w = m.constant("w");
            auto [w2, b2] = fold_into_conv(*w, conv_bias(m), *fold_bn(m, w->dim(0)));
            Value* wv = m.add_constant(m["w"]->name() + "_bn", std::move(w2));
            Value* bv = m.add_constant(m.node("bn")->name() + "_bias", std::move(b2));
            return m.fuse(ops::Conv{m["x"], wv, bv, ops::ConvAttrs::of(*m.node("conv"))}.spec());
          }};
}

// The piecewise-linear activations the scale-shift kernels apply in the same pass over the data
// (a pre-activation block's BN + ReLU is one kernel, not two), and none.
std::vector<ActivationPattern> bn_epilogues(const pattern::Pat& bn) {
  std::vector<ActivationPattern> pats;
  using K = ops::ActivationKind;
  for (ActivationPattern& p : activation_patterns(bn)) {
    const auto k = ops::activation_kind(p.name);
    if (k == K::kRelu || k == K::kLeakyRelu || k == K::kClip) pats.push_back(p);
  }
  pats.push_back({"", bn});
  return pats;
}

Rule bn_scale_shift() {
  return {.name = "BatchNormScaleShiftPass",
          .description =
              "Turns a BatchNormalization no Conv absorbed into a per-channel scale "
              "and shift, with a Relu, LeakyRelu or Clip after it",
          .ops = {"BatchNormalization"},
          .patterns = bn_epilogues(bn_of(pattern::any("x"))),
          .guards = {inference_bn, guard::float32({"x"}), bn_channels},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const auto f = fold_bn(m, m.constant("scale")->numel());
            ops::ScaleShift ss;
            if (std::string why = m.activation(&ss.act); !why.empty()) return why;
            const std::string& n = m.node("bn")->name();
            ss.x = m["x"];
            ss.scale = m.add_constant(n + "_scale", float_vector(f->s));
            ss.shift = m.add_constant(n + "_shift", float_vector(f->t));
            return m.fuse(ss.spec());
          }};
}

// "" when the Concat joins float32 tensors of one rank along dim 1 (channels).
std::string channel_concat(const RuleMatch& m) {
  const Node& c = *m.node("concat");
  const Shape& y = c.output(0)->shape();
  if (!y.has_rank || y.dims.size() < 2) return "the Concat's output has no known rank of 2 or more";
  const int64_t rank = static_cast<int64_t>(y.dims.size()), axis = c.attr_int("axis", 0);
  if (axis != 1 && axis != 1 - rank) return "the Concat is along axis " + std::to_string(axis);
  for (const Value* v : c.inputs()) {
    if (!v || v->dtype() != DType::kFloat32 || !v->shape().has_rank ||
        v->shape().dims.size() != y.dims.size()) {
      return "a part of the Concat is not float32 of rank " + std::to_string(rank);
    }
  }
  return "";
}

Rule concat_scale_shift() {
  return {.name = "ConcatScaleShiftFusionPass",
          .description =
              "Applies a ScaleShift (a pre-activation BatchNormalization and its "
              "activation) to a channel Concat as the parts are written: one kernel, "
              "the Concat never materialized (DenseNet's layers)",
          .ops = {"Concat", "BatchNormalization"},
          .patterns = {{"", pattern::op_in(kFusedDomain, "ScaleShift",
                                           {pattern::op_any_inputs("Concat").named("concat"),
                                            pattern::constant("s"), pattern::constant("t")})
                                .named("ss")}},
          .guards = {guard::read_once("concat"), channel_concat},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const std::vector<Value*>& parts = m.node("concat")->inputs();
            const ops::ScaleShift ss{parts[0],
                                     m["s"],
                                     m["t"],
                                     {parts.begin() + 1, parts.end()},
                                     ops::read_activation(*m.node("ss"))};
            return m.fuse(ss.spec());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_conv_bn_pass() { return make_rule_pass(conv_bn()); }
std::unique_ptr<Pass> make_bn_scale_shift_pass() { return make_rule_pass(bn_scale_shift()); }
std::unique_ptr<Pass> make_concat_scale_shift_pass() {
  return make_rule_pass(concat_scale_shift());
}

}  // namespace nnfuse
