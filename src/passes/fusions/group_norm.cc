// GroupNorm: PyTorch's GroupNorm export and InstanceNormalization into one GroupNorm node
// (ai.nnfuse), with the activation after it (a diffusion UNet's GroupNorm - SiLU) as its
// epilogue.
//
//   Reshape(x [N, C, ...] -> [N, G, ...]) - InstanceNormalization(scale s, bias b of [G]) -
//   Reshape(-> x's shape) [- Mul(gamma [C, 1, ..]) [- Add(beta [C, 1, ..])]] [- act]
//     == GroupNorm(x, s[g(c)] * gamma[c], b[g(c)] * gamma[c] + beta[c]) {num_groups = G}
//
// since normalizing the [N, G, ...] view per (n, g) normalizes each group of C / G consecutive
// channels with the spatial positions. InstanceNormalization(x, s, b) [- act] alone is
// GroupNorm with G = C (the kernels run it channels-last and in parallel, where the reference
// InstanceNormalization is the only kernel of that op).
#include <optional>

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

Tensor floats(const std::vector<double>& v) {
  Tensor t(DType::kFloat32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = static_cast<float>(v[i]);
  return t;
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

Rule group_norm() {
  using namespace pattern;
  Pat r1 = op("Reshape", {any("x"), constant()}).named("r1");
  Pat in = op("InstanceNormalization", {r1, constant("s"), constant("b")}).named("in");
  Pat view = op("Reshape", {in, constant()}).named("r2");
  Pat instance = op("InstanceNormalization", {any("x"), constant("s"), constant("b")}).named("in");
  std::vector<ActivationPattern> patterns;
  for (const Pat& p :
       {view * constant("gamma") + constant("beta"), view * constant("gamma"), view, instance}) {
    for (ActivationPattern& a : with_activations(p, true)) patterns.push_back(std::move(a));
  }
  return {.name = "GroupNormFusionPass",
          .description =
              "Fuses GroupNorm (Reshape, InstanceNormalization, Reshape, Mul, Add) and "
              "InstanceNormalization, with the activation after them, into one GroupNorm",
          .ops = {"Reshape", "InstanceNormalization", "Reshape", "Mul", "Add"},
          .patterns = std::move(patterns),
          .guards = {static_input, group_view},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Dims x = m["x"]->shape().static_dims();
            const int64_t c = x[1];
            const int64_t g = m.node("r1") ? m.node("r1")->output(0)->shape().static_dims()[1] : c;
            const std::optional<std::vector<double>> s = channel_values(m.constant("s"), {1, g});
            const std::optional<std::vector<double>> b = channel_values(m.constant("b"), {1, g});
            if (!s || !b || m.constant("s")->numel() != g || m.constant("b")->numel() != g) {
              return "the InstanceNormalization's scale and bias are not float32 of [" +
                     std::to_string(g) + "]";
            }
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
            std::map<std::string, Attribute> attrs = {
                {"num_groups", attr_int(g)},
                {"epsilon", attr_float(m.node("in")->attr_float("epsilon", 1e-5f))}};
            if (std::string why = m.activation(attrs); !why.empty()) return why;
            const std::string& n = m.node("in")->name();
            return m.fuse("GroupNorm",
                          {m["x"], m.add_constant(n + "_gamma", floats(scale)),
                           m.add_constant(n + "_beta", floats(shift))},
                          attrs);
          }};
}

}  // namespace

std::unique_ptr<Pass> make_group_norm_pass() { return make_rule_pass(group_norm()); }

}  // namespace nnfuse
