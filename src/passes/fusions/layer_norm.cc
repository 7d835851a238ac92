// Normalization fusions for transformers, over the last axis (E elements per row):
//   LayerNormFusionPass:     (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma + beta
//                            == LayerNormalization(x, gamma, beta; axis = -1, epsilon = eps)
//   RMSNormFusionPass:       x / sqrt(mean(x^2) + eps) * gamma == RMSNorm(x, gamma; epsilon = eps)
// (SkipLayerNormFusionPass: skip_layer_norm.cc.)
// LayerNormalization is ONNX's op from opset 17; for older models it is written in ai.nnfuse
// with the same op type and contract, so the exported model stays valid ONNX. The fused ops
// compute in float32; a cast of the input to a wider type and back is absorbed.
#include <algorithm>
#include <cmath>

#include "ops/norm.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/norm_util.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using norm::is_float_type;
using pattern::Match;
using pattern::Pat;

constexpr DType kF32 = DType::kFloat32;

// `p`, or Cast(p) (any target type: which casts the fused node may absorb is decided after
// the match, from their types).
Pat cast_opt(const Pat& p, const std::string& name) {
  return pattern::any_of({pattern::op("Cast", {p}).named(name), p});
}

// x / s in the spellings exporters use: Div(x, s), Mul(x, Reciprocal(s)), Mul(x, Div(1, s))
// (PyTorch's rsqrt).
Pat divide(const Pat& x, const Pat& s) {
  using namespace pattern;
  return any_of({op("Div", {x, s}), op("Mul", {x, op("Reciprocal", {s})}),
                 op("Mul", {x, op("Div", {scalar(1.0f), s})})});
}

// The input of a normalization, possibly behind a Cast (to double, or to float32 in a float16
// model); named "xin", the Cast "cast_in".
Pat norm_input() {
  using namespace pattern;
  return any_of({op("Cast", {any()}).named("cast_in"), any()}).named("xin");
}

// "" when ReduceMean `rm` averages `x` over its last axis only, keeping dims; else why.
std::string last_axis_mean(const Node* rm, const Value* x) {
  if (rm->attr_int("keepdims", 1) != 1) return rm->describe() + " has keepdims=0";
  std::vector<int64_t> axes;
  if (rm->has_attr("axes")) {
    axes = rm->attr_ints("axes");
  } else if (rm->input(1)) {
    const Tensor* t = pattern::constant_value(rm->input(1));
    if (!t) return rm->describe() + "'s axes are not a constant";
    axes = t->to_int64_vector();
  }
  const int64_t rank = x->shape().has_rank ? static_cast<int64_t>(x->shape().dims.size()) : -1;
  if (axes.empty() && rm->attr_int("noop_with_empty_axes", 0) == 0 && rank == 1) return "";
  if (axes.size() == 1 && (axes[0] == -1 || (rank > 0 && axes[0] == rank - 1))) return "";
  std::string list;
  for (int64_t a : axes) {
    if (!list.empty()) list += ", ";
    list += std::to_string(a);
  }
  return rm->describe() + " averages over axes [" + list + "] of a rank-" +
         (rank < 0 ? std::string("?") : std::to_string(rank)) +
         " input, not over the last axis only";
}

// The guard: each matched ReduceMean of `names` (those bound) averages over the last axis.
Guard last_axis_means(std::vector<std::string> names) {
  return [names](const RuleMatch& m) -> std::string {
    for (const std::string& n : names) {
      if (std::string why = last_axis_mean(m.node(n), m["xin"]); !why.empty()) return why;
    }
    return "";
  };
}

// The fused node's boundaries: the nodes it replaces, its input and output. A Cast from float32
// at the input and one back to float32 at the output are a round trip through a wider type,
// absorbed (the fused op computes in float32); other boundary casts (a float16 model's) stay
// outside the fused node. Casts left inside must be to float32 or float64 (else `why`).
struct NormIO {
  std::vector<Node*> nodes;
  Value *x, *y;
  std::string why;
};
NormIO norm_io(const Match& m) {
  NormIO io{m.nodes(), m.value("xin"), m.root()->output(0), ""};
  auto drop = [&](Node* n) { io.nodes.erase(std::find(io.nodes.begin(), io.nodes.end(), n)); };
  if (Node* c = m.node("cast_in")) {
    if (c->input(0)->dtype() == kF32 && c->output(0)->dtype() != kF32) {
      io.x = c->input(0);
    } else {
      drop(c);
    }
  }
  Node* root = m.root();
  if (root->is(Op::kCast) && !(root->input(0)->dtype() != kF32 && io.y->dtype() == kF32)) {
    drop(root);
    io.y = root->input(0);
  }
  for (const Node* n : io.nodes) {
    if (n->is(Op::kCast) && !is_float_type(n->output(0)->dtype())) {
      io.why = n->describe() + " casts to " + dtype_name(n->output(0)->dtype()) +
               " inside the normalization, which the fused op computes in float32";
      return io;
    }
  }
  if (io.x->dtype() != kF32 || io.y->dtype() != kF32) {
    io.why = std::string("the normalization's input and output are ") + dtype_name(io.x->dtype()) +
             " and " + dtype_name(io.y->dtype()) + ", not float32";
  }
  return io;
}

// The guards both normalizations check, in order: the casts, the means, epsilon, the
// per-feature parameters.
std::vector<Guard> norm_guards(std::vector<std::string> means) {
  return {[](const RuleMatch& m) { return norm_io(m.match).why; }, last_axis_means(means),
          guard::scalar("eps", "epsilon"),
          guard::per_feature({"gamma", "beta"}, width::features("xin", {"gamma", "beta"}), "xin")};
}

// Variants of a normalization `norm` followed by an optional Mul gamma and (LayerNorm only)
// an optional Add beta, each possibly behind a Cast; largest first.
std::vector<ActivationPattern> with_affine(const Pat& norm, bool beta) {
  using namespace pattern;
  Pat n_c = cast_opt(norm, "cast_n");
  Pat gm = op("Mul", {n_c, any("gamma")});
  std::vector<ActivationPattern> v;
  if (beta)
    v.push_back(
        {"gamma_beta", cast_opt(op("Add", {cast_opt(gm, "cast_g"), any("beta")}), "cast_out")});
  v.push_back({"gamma", cast_opt(gm, "cast_out")});
  if (beta) v.push_back({"beta", cast_opt(op("Add", {n_c, any("beta")}), "cast_out")});
  v.push_back({"", cast_opt(norm, "cast_out")});
  return v;
}

Rule layer_norm() {
  using namespace pattern;
  Pat xin = norm_input();
  Pat mean = op("ReduceMean", {xin}, false).named("mean");
  // Older exporters compute x - mean twice: one Sub for the variance, one for the output.
  Pat d1 = op("Sub", {xin, mean});
  Pat d2 = op("Sub", {xin, mean});
  Pat sq = any_of({pow(through(d1), 2.0f), op("Mul", {d1, d1})});
  Pat var = op("ReduceMean", {sq}, false).named("var");
  Pat norm = divide(d2, sqrt(op("Add", {var, any("eps")})));
  return {.name = "LayerNormFusionPass",
          .description =
              "Fuses decomposed LayerNorm (ReduceMean, Sub, Pow, Sqrt, Div, Mul, Add) "
              "into LayerNormalization",
          .ops = {"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"},
          .patterns = with_affine(norm, true),
          .guards = norm_guards({"mean", "var"}),
          .rewrite = [](const RuleMatch& m) -> std::string {
            const NormIO io = norm_io(m.match);
            const int64_t e = norm::feature_count(io.x, {m["gamma"], m["beta"]});
            if (!m["gamma"] && e < 0) return "there is no gamma and the last dim is unknown";
            Value* gamma = m.feature("gamma", e, 1.0f, m.node("var")->name() + "_gamma_ones");
            const ops::LayerNorm ln{io.x, gamma, m.feature("beta", e), m.scalar("eps"),
                                    m.g.opset("") < 17};
            return m.fuse_nodes(io.nodes, ln.spec(), {io.y});
          }};
}

Rule rms_norm() {
  using namespace pattern;
  Pat xin = norm_input();
  Pat sq = any_of({pow(xin, 2.0f), op("Mul", {xin, xin})});
  Pat var = op("ReduceMean", {sq}, false).named("var");
  Pat norm = divide(xin, sqrt(op("Add", {var, any("eps")})));
  return {.name = "RMSNormFusionPass",
          .description = "Fuses x / sqrt(mean(x^2) + eps) * gamma into RMSNorm",
          .ops = {"Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Mul"},
          .patterns = with_affine(norm, false),
          .guards = norm_guards({"var"}),
          .rewrite = [](const RuleMatch& m) -> std::string {
            const NormIO io = norm_io(m.match);
            const int64_t e = norm::feature_count(io.x, {m["gamma"]});
            return m.fuse_nodes(io.nodes,
                                ops::RMSNorm{io.x, m.feature("gamma", e), m.scalar("eps")}.spec(),
                                {io.y});
          }};
}

}  // namespace

std::unique_ptr<Pass> make_layer_norm_pass() { return make_rule_pass(layer_norm()); }
std::unique_ptr<Pass> make_rms_norm_pass() { return make_rule_pass(rms_norm()); }

}  // namespace nnfuse
