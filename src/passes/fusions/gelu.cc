// GeluFusionPass: the exported forms of GELU and Swish that no dense layer took as its
// epilogue (MatMulBiasAddFusionPass runs first) become one node each:
//   0.5 * x * (1 + erf(x / sqrt(2)))                        == Gelu(x, approximate="none")
//   0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) == Gelu(x, approximate="tanh")
//   x * sigmoid(alpha * x), x * sigmoid(x)                  == Swish(x, alpha)
// in domain ai.nnfuse (Gelu has the semantics of ONNX's opset-20 Gelu). The factors of each
// product may come in any order and association (see fusion_util.h).
#include <cmath>

#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

using pattern::Match;
using pattern::Pat;

// "" when the matched activation keeps x's shape (no constant of the pattern broadcasts it to
// a larger one), else the reason.
std::string keeps_shape(const RuleMatch& m) {
  const Shape& a = m["x"]->shape();
  const Shape& b = m.root()->output(0)->shape();
  if (a.has_rank && b.has_rank) {
    bool same = a.dims.size() == b.dims.size();
    for (size_t i = 0; same && i < a.dims.size(); ++i) {
      same = !a.dims[i].known() || !b.dims[i].known() || a.dims[i].value == b.dims[i].value;
    }
    if (same) return "";
    return "the output " + b.str() + " is not of the input's shape " + a.str() +
           " (a constant broadcasts it)";
  }
  // Ranks unknown: only constants of rank 0 cannot grow the shape.
  for (const Node* n : m.match.nodes()) {
    for (const Value* in : n->inputs()) {
      const Tensor* t = in ? pattern::constant_value(in) : nullptr;
      if (t && t->rank() > 0) {
        return "the shapes are unknown and constant '" + in->name() + "' may broadcast x";
      }
    }
  }
  return "";
}

// "" when the activation is float32 or float64 and keeps its input's type.
std::string float_type_reason(const RuleMatch& m) {
  const DType t = m.root()->output(0)->dtype(), in = m["x"]->dtype();
  if ((t == DType::kFloat32 || t == DType::kFloat64) && in == t) return "";
  return std::string("the activation is ") + dtype_name(t) + ", not float32 or float64 (input " +
         dtype_name(in) + ")";
}

Rule gelu() {
  using namespace pattern;
  using K = ops::ActivationKind;
  Pat x = any("x");
  return {.name = "GeluFusionPass",
          .description =
              "Fuses GELU (erf and tanh forms) and x * sigmoid(alpha * x) into one "
              "Gelu or Swish node",
          .ops = {"Div", "Erf", "Add", "Mul", "Mul"},
          .patterns = {{ops::activation_name(K::kGelu), gelu_erf_pattern(x)},
                       {ops::activation_name(K::kGeluTanh), gelu_tanh_pattern(x)},
                       {ops::activation_name(K::kSiLU), x * sigmoid(x)},
                       {ops::activation_name(K::kSwish), swish_pattern(x)}},
          .guards = {float_type_reason, keeps_shape},
          .rewrite = [](const RuleMatch& m) -> std::string {
            Value* in = m["x"];
            std::string why;
            const auto a = activation_from_match(m.variant, m.match, &why);
            if (!a) return why;
            if (a->kind == K::kGelu || a->kind == K::kGeluTanh) {
              return m.fuse(ops::GeluBuilder{in, a->kind == K::kGeluTanh}.spec());
            }
            return m.fuse(ops::SwishBuilder{in, a->kind == K::kSiLU ? 1.0f : a->alpha}.spec());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_gelu_pass() { return make_rule_pass(gelu()); }

}  // namespace nnfuse
