// GroupNorm: PyTorch's GroupNorm export and InstanceNormalization into one GroupNorm node
// (ai.nnfuse), with the activation after it (a diffusion UNet's GroupNorm - SiLU) as its
// epilogue.
//
//   Reshape(x [N, C, ...] -> [N, G, ...]) - InstanceNormalization(scale s, bias b of [G]) -
//   Reshape(-> x's shape) [- Mul(gamma [C, 1, ..])] [- Add(beta [C, 1, ..])] [- act]
//     == GroupNorm(x, s[g(c)] * gamma[c], b[g(c)] * gamma[c] + beta[c]) {num_groups = G}
//
// since normalizing the [N, G, ...] view per (n, g) normalizes each group of C / G consecutive
// channels with the spatial positions. The view's normalization written out as mean and variance
// (LayerNormFusionPass makes it a LayerNormalization over the view's last axis, gamma 1) is the
// same. InstanceNormalization(x, s, b) [- act] alone is
// GroupNorm with G = C (the kernels run it channels-last and in parallel, where the reference
// InstanceNormalization is the only kernel of that op).
//
// The norm's input may be x + v with v one value per (image, channel) made [N or 1, C, 1, ..]
// by Unsqueezes or a Reshape of t [N or 1, C] or of a Linear of it, Gemm(t, W, b): a diffusion
// UNet's time embedding added to a ResBlock's first conv. It becomes GroupNorm's inputs T (t),
// TW (W as [K, C]) and TB (b), computed inside the norm, which never writes x + v; a SiLU of
// t before the Gemm (read by nothing else) goes in too, as t_activation.
#include <algorithm>
#include <optional>

#include "ops/norm.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

using pattern::Pat;

// The values of a constant that broadcasts along dim 1 of a tensor of shape `x` (one value per
// channel, or one for all, in a shape of rank at most x's whose other dims are 1), as C
// doubles; nullopt when it is not one.
std::optional<std::vector<double>> channel_values(const Tensor* t, const Dims& x) {
  if (!t || t->dtype() != DType::kFloat32 || t->rank() > static_cast<int64_t>(x.size())) {
    return std::nullopt;
  }
  const int64_t c = x[1], off = static_cast<int64_t>(x.size()) - t->rank();
  for (int64_t d = 0; d < t->rank(); ++d) {
    if (t->dim(d) != 1 && !(d + off == 1 && t->dim(d) == c)) return std::nullopt;
  }
  std::vector<double> v(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) v[j] = t->data<float>()[t->numel() == 1 ? 0 : j];
  return v;
}

// x: float32 of static shape [N, C, spatial...].
std::string static_input(const RuleMatch& m) {
  const Value* x = m["x"];
  if (x->dtype() != DType::kFloat32) return "the input is not float32";
  if (!x->shape().fully_known() || x->shape().static_dims().size() < 3) {
    return "the input has no static shape of rank 3 or more";
  }
  return "";
}

// The Reshapes view x as [N, G, ...] and back to x's shape; "" or why not.
std::string group_view(const RuleMatch& m) {
  if (!m.node("r1")) return "";
  const Dims x = m["x"]->shape().static_dims();
  const Shape& v = m.node("r1")->output(0)->shape();
  const Shape& back = m.node("r2")->output(0)->shape();
  if (!v.fully_known() || !back.fully_known() || back.static_dims() != x) {
    return "the Reshapes' shapes are not static, or the second does not restore the input's";
  }
  const Dims g = v.static_dims();
  if (g.size() < 3 || g[0] != x[0] || g[1] < 1 || x[1] % g[1] != 0) {
    return "the first Reshape " + dims_str(g) + " is not [N, G, ...] with G dividing the " +
           std::to_string(x[1]) + " channels";
  }
  return "";
}

// A value of rank 3 or more whose dims after the second are 1: one value per (image, channel).
bool per_channel_shape(const Value& v) {
  if (!v.shape().fully_known() || v.shape().static_dims().size() < 3) return false;
  const Dims d = v.shape().static_dims();
  return std::all_of(d.begin() + 2, d.end(), [](int64_t k) { return k == 1; });
}

// Read by one node and not a graph output.
bool read_once(const Value& v) { return v.uses().size() == 1 && !v.is_graph_output(); }

// x, or x + (t, or Gemm(t, W, b), made [.., C, 1, ..]), t possibly SiLU(ts) = ts * Sigmoid(ts)
// read by the Gemm alone (diffusers' ResnetBlock2D: the SiLU of the time embedding, then its
// dense layer), which the norm then computes too.
pattern::Pat group_norm_input() {
  using namespace pattern;
  Pat silu = (any("ts") * sigmoid(any("ts")).where(read_once, "the Sigmoid is read elsewhere"))
                 .where(read_once, "the SiLU is read elsewhere")
                 .named("tsilu");
  Pat gemm_in = any_of({silu, any("t")});
  Pat t = any_of({op("Gemm", {gemm_in, constant("tw"), constant("tb")}).named("gemm"),
                  op("Gemm", {gemm_in, constant("tw")}).named("gemm"), any("t")});
  Pat v = any_of({op("Unsqueeze", {op("Unsqueeze", {t}, false)}, false),
                  op("Reshape", {t, constant()})})
              .where(per_channel_shape, "one value per image and channel");
  return any_of({(any("x") + v).named("tadd"), any("x")});
}

// The addend's inputs T, TW ([K, C]) and TB of GroupNorm, or why they do not fit x (none
// without an addend).
std::string addend_inputs(const RuleMatch& m, const Dims& x, ops::GroupNorm& gn) {
  if (!m.node("tadd")) return "";
  const Dims v = m.node("tadd")->output(0)->shape().static_dims();
  Value* t = m.node("tsilu") ? m["ts"] : m["t"];
  if (v != x || !t->shape().fully_known() || t->dtype() != DType::kFloat32) {
    return "the addend of the norm's input is not float32 of static shape";
  }
  const Dims td = t->shape().static_dims();
  const int64_t rows = td.empty() ? 0 : td[0], c = x[1];
  if ((rows != 1 && rows != x[0]) || checked_numel(td) % rows != 0) {
    return "the addend " + dims_str(td) + " has not 1 or N rows";
  }
  gn.t = t;
  const Node* gemm = m.node("gemm");
  if (!gemm) return checked_numel(td) == rows * c ? "" : "the addend is not one value a channel";
  const Tensor* w = m.constant("tw");
  const Tensor* b = m.constant("tb");
  if (gemm->attr_float("alpha", 1.0f) != 1.0f || gemm->attr_float("beta", 1.0f) != 1.0f ||
      gemm->attr_int("transA", 0) != 0 || w->dtype() != DType::kFloat32 || w->rank() != 2 ||
      td.size() != 2 || (b && (b->dtype() != DType::kFloat32 || b->numel() != c))) {
    return "the addend's Gemm is not t x W + b with float32 W and b of [C]";
  }
  const bool trans = gemm->attr_int("transB", 0) != 0;
  const int64_t k = td[1];
  if (w->dim(trans ? 1 : 0) != k || w->dim(trans ? 0 : 1) != c) {
    return "the addend's Gemm weight " + dims_str(w->shape()) + " does not map " +
           std::to_string(k) + " features to " + std::to_string(c) + " channels";
  }
  Tensor kc(DType::kFloat32, {k, c});
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < c; ++j) {
      kc.data<float>()[p * c + j] = w->data<float>()[trans ? j * k + p : p * c + j];
    }
  }
  gn.tw = m.add_constant(gemm->name() + "_kc", std::move(kc));
  if (b) gn.tb = m.add_constant(gemm->name() + "_bias", b->reshaped({c}));
  return "";
}

// The per-group scale s and bias b of the normalization: InstanceNormalization's [G] scale and
// bias; 1 and 0 for a LayerNormalization over the last axis of the [N, G, ...] view with a
// gamma of ones and no beta (or zeros), which the decomposed export has. "" or why not.
std::string group_affine(const RuleMatch& m, int64_t g, std::optional<std::vector<double>>& s,
                         std::optional<std::vector<double>>& b) {
  const Node& n = *m.node("in");
  if (n.is(Op::kInstanceNormalization)) {
    s = channel_values(m.constant("s"), {1, g});
    b = channel_values(m.constant("b"), {1, g});
    if (!s || !b || m.constant("s")->numel() != g || m.constant("b")->numel() != g) {
      return "the InstanceNormalization's scale and bias are not float32 of [" + std::to_string(g) +
             "]";
    }
    return "";
  }
  const int64_t rank = static_cast<int64_t>(n.input(0)->shape().dims.size());
  const int64_t axis = n.attr_int("axis", -1);
  auto all = [](const Tensor* t, float v) {
    if (!t || t->dtype() != DType::kFloat32) return false;
    for (int64_t i = 0; i < t->numel(); ++i) {
      if (t->data<float>()[i] != v) return false;
    }
    return true;
  };
  const Tensor* beta =
      n.num_inputs() > 2 && n.input(2) ? pattern::constant_value(n.input(2)) : nullptr;
  if ((axis != -1 && axis != rank - 1) || !all(m.constant("s"), 1.0f) ||
      (n.num_inputs() > 2 && n.input(2) && !all(beta, 0.0f)) || n.num_outputs() > 1) {
    return "the LayerNormalization of the group view is not over its last axis with a gamma of "
           "ones and no beta";
  }
  s = std::vector<double>(static_cast<size_t>(g), 1.0);
  b = std::vector<double>(static_cast<size_t>(g), 0.0);
  return "";
}

Rule group_norm() {
  using namespace pattern;
  Pat r1 = op("Reshape", {group_norm_input(), constant()}).named("r1");
  // The per-group normalization: InstanceNormalization, or the LayerNormalization (either
  // domain) LayerNormFusionPass made of the decomposed mean / variance export.
  Pat in =
      any_of({op("InstanceNormalization", {r1, constant("s"), constant("b")}).named("in"),
              op("LayerNormalization", {r1, constant("s")}, false).named("in"),
              op_in(kFusedDomain, "LayerNormalization", {r1, constant("s")}, false).named("in")});
  Pat view = op("Reshape", {in, constant()}).named("r2");
  Pat instance =
      op("InstanceNormalization", {group_norm_input(), constant("s"), constant("b")}).named("in");
  std::vector<ActivationPattern> patterns;
  for (const Pat& p : {view * constant("gamma") + constant("beta"), view * constant("gamma"),
                       view + constant("beta"), view, instance}) {
    for (ActivationPattern& a : with_activations(p, true)) patterns.push_back(std::move(a));
  }
  return {.name = "GroupNormFusionPass",
          .description =
              "Fuses GroupNorm (Reshape, InstanceNormalization or the decomposed mean and "
              "variance, Reshape, Mul, Add) and InstanceNormalization, with the activation "
              "after them, into one GroupNorm",
          .ops = {"Reshape", "InstanceNormalization", "Reshape", "Mul", "Add"},
          .patterns = std::move(patterns),
          .guards = {static_input, group_view},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Dims x = m["x"]->shape().static_dims();
            const int64_t c = x[1];
            const int64_t g = m.node("r1") ? m.node("r1")->output(0)->shape().static_dims()[1] : c;
            std::optional<std::vector<double>> s, b;
            if (std::string why = group_affine(m, g, s, b); !why.empty()) return why;
            std::vector<double> gamma(static_cast<size_t>(c), 1.0), beta(static_cast<size_t>(c));
            for (const char* name : {"gamma", "beta"}) {
              if (!m[name]) continue;
              std::optional<std::vector<double>> v = channel_values(m.constant(name), x);
              if (!v) return std::string(name) + " is not a float32 per-channel constant";
              (name[0] == 'g' ? gamma : beta) = *v;
            }
            // y = (xhat * s[g] + b[g]) * gamma[c] + beta[c]
            std::vector<double> scale(gamma.size()), shift(beta.size());
            for (int64_t j = 0; j < c; ++j) {
              const int64_t k = j / (c / g);
              scale[j] = (*s)[k] * gamma[j];
              shift[j] = (*b)[k] * gamma[j] + beta[j];
            }
            ops::GroupNorm gn;
            if (std::string why = addend_inputs(m, x, gn); !why.empty()) return why;
            gn.num_groups = g;
            gn.epsilon = m.node("in")->attr_float("epsilon", 1e-5f);
            gn.t_silu = m.node("tsilu") != nullptr;
            if (std::string why = m.activation(&gn.act); !why.empty()) return why;
            const std::string& n = m.node("in")->name();
            gn.x = m["x"];
            gn.gamma = m.add_constant(n + "_gamma", float_vector(scale));
            gn.beta = m.add_constant(n + "_beta", float_vector(shift));
            return m.fuse(gn.spec());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_group_norm_pass() { return make_rule_pass(group_norm()); }

}  // namespace nnfuse
