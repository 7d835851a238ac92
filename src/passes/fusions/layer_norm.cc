// Normalization fusions for transformers, over the last axis (E elements per row):
//   LayerNormFusionPass:     (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma + beta
//                            == LayerNormalization(x, gamma, beta; axis = -1, epsilon = eps)
//   RMSNormFusionPass:       x / sqrt(mean(x^2) + eps) * gamma == RMSNorm(x, gamma; epsilon = eps)
//   SkipLayerNormFusionPass: LayerNormalization((a [+ bias]) + b)
//                            == SkipLayerNorm(a, b, gamma, beta, bias), output 1 the sum itself
// LayerNormalization is ONNX's op from opset 17; for older models it is written in ai.nnfuse
// with the same op type and contract, so the exported model stays valid ONNX. The fused ops
// compute in float32; a cast of the input to a wider type and back is absorbed.
#include <algorithm>
#include <cmath>

#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Match;
using pattern::Pat;

constexpr DType kF32 = DType::kFloat32;

bool is_float_type(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }

std::string quoted(const std::string& s) { return std::string("'") + s + "'"; }

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

// The fused node's boundaries. A Cast from float32 at the input and one back to float32 at
// the output are a round trip through a wider type, absorbed (the fused op computes in
// float32); other boundary casts (a float16 model's) stay outside the fused node. Casts left
// inside must be to float32 or float64.
std::string trim_casts(const Match& m, std::vector<Node*>& nodes, Value** x, Value** y) {
  auto drop = [&](Node* n) { nodes.erase(std::find(nodes.begin(), nodes.end(), n)); };
  *x = m.value("xin");
  *y = m.root()->output(0);
  if (Node* c = m.node("cast_in")) {
    if (c->input(0)->dtype() == kF32 && c->output(0)->dtype() != kF32) {
      *x = c->input(0);
    } else {
      drop(c);
    }
  }
  Node* root = m.root();
  if (root->op_type() == "Cast" && !(root->input(0)->dtype() != kF32 && (*y)->dtype() == kF32)) {
    drop(root);
    *y = root->input(0);
  }
  for (const Node* n : nodes) {
    if (n->op_type() == "Cast" && !is_float_type(n->output(0)->dtype())) {
      return n->describe() + " casts to " + dtype_name(n->output(0)->dtype()) +
             " inside the normalization, which the fused op computes in float32";
    }
  }
  if ((*x)->dtype() != kF32 || (*y)->dtype() != kF32) {
    return std::string("the normalization's input and output are ") + dtype_name((*x)->dtype()) +
           " and " + dtype_name((*y)->dtype()) + ", not float32";
  }
  return "";
}

// The epsilon added to the variance: a float constant with one element.
std::string read_epsilon(const Match& m, float* eps) {
  const Value* v = m.value("eps");
  const Tensor* t = pattern::constant_value(v);
  if (!t) return std::string("epsilon ") + quoted(v->name()) + " is not a constant";
  if (t->numel() != 1 || !is_float_type(t->dtype())) {
    return std::string("epsilon ") + quoted(v->name()) + " is not one float (" +
           dtype_name(t->dtype()) + dims_str(t->shape()) + ")";
  }
  *eps = static_cast<float>(t->double_at(0));
  return "";
}

// The length E of the normalized last axis: x's last dim, else the length of a per-feature
// parameter; -1 when neither tells.
int64_t feature_count(const Value* x, const std::vector<const Value*>& params) {
  const Shape& s = x->shape();
  if (s.has_rank && !s.dims.empty() && s.dims.back().known()) return s.dims.back().value;
  for (const Value* p : params) {
    const Tensor* t = p ? pattern::constant_value(p) : nullptr;
    if (t && t->numel() > 1) return t->numel();
  }
  return -1;
}

// "" when `v` is a per-feature parameter (gamma, beta, bias) of x's last axis: a float
// constant with E elements (or one, repeated) whose dims before the last are 1, of rank at
// most x's (so multiplying or adding it does not grow x's shape); else why.
std::string feature_reason(const Value* v, int64_t e, const Value* x, const char* what) {
  const Tensor* t = pattern::constant_value(v);
  if (!t) return std::string(what) + " " + quoted(v->name()) + " is not a constant";
  if (!is_float_type(t->dtype())) {
    return std::string(what) + " " + quoted(v->name()) + " is " + dtype_name(t->dtype());
  }
  bool leading_ones = true;
  for (int64_t i = 0; i + 1 < t->rank(); ++i) leading_ones &= t->dim(i) == 1;
  const bool rank_ok =
      x->shape().has_rank && t->rank() <= static_cast<int64_t>(x->shape().dims.size());
  if (e < 0 || !leading_ones || !rank_ok || (t->numel() != e && t->numel() != 1)) {
    return std::string(what) + " " + quoted(v->name()) + " of shape " + dims_str(t->shape()) +
           " is not one value per feature of the last axis (" +
           (e < 0 ? std::string("?") : std::to_string(e)) + ")";
  }
  return "";
}

// A parameter accepted by feature_reason as a float32 [E] value: `v` itself when it is one
// already, else a new constant.
Value* feature_vector(Graph& g, Value* v, int64_t e) {
  const Tensor* t = pattern::constant_value(v);
  if (t->dtype() == kF32 && t->numel() == e && t->rank() == 1) return v;
  Tensor f(kF32, {e});
  for (int64_t i = 0; i < e; ++i) {
    f.data<float>()[i] = static_cast<float>(t->double_at(i % t->numel()));
  }
  return pattern::add_constant(g, v->name() + "_f32", std::move(f));
}

Value* ones(Graph& g, const std::string& stem, int64_t e) {
  Tensor t(kF32, {e});
  std::fill(t.data<float>(), t.data<float>() + e, 1.0f);
  return pattern::add_constant(g, stem + "_ones", std::move(t));
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

template <typename F>
std::string guarded(F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    return e.what();
  }
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
          .rewrite = [](const RuleMatch& rm) -> std::string {
            const Match& m = rm.match;
            std::vector<Node*> nodes = m.nodes();
            Value *x, *y;
            std::string why = trim_casts(m, nodes, &x, &y);
            for (const char* r : {"mean", "var"}) {
              if (why.empty()) why = last_axis_mean(m.node(r), m.value("xin"));
            }
            float eps = 0;
            if (why.empty()) why = read_epsilon(m, &eps);
            Value* gv = m.value("gamma");
            Value* bv = m.value("beta");
            const int64_t e = feature_count(x, {gv, bv});
            if (why.empty() && gv) why = feature_reason(gv, e, x, "gamma");
            if (why.empty() && bv) why = feature_reason(bv, e, x, "beta");
            if (why.empty() && !gv && e < 0) why = "there is no gamma and the last dim is unknown";
            // Constants are made only for a fusion that happens.
            if (why.empty()) why = pattern::check_replaceable(rm.g, nodes, {y});
            if (!why.empty()) return why;
            std::vector<Value*> ins = {x, gv ? feature_vector(rm.g, gv, e)
                                             : ones(rm.g, m.node("var")->name() + "_gamma", e)};
            if (bv) ins.push_back(feature_vector(rm.g, bv, e));
            return rm.fuse_nodes(nodes, "LayerNormalization", ins, {y},
                                 {{"axis", attr_int(-1)}, {"epsilon", attr_float(eps)}},
                                 rm.g.opset("") >= 17 ? "" : kFusedDomain);
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
          .rewrite = [](const RuleMatch& rm) -> std::string {
            const Match& m = rm.match;
            std::vector<Node*> nodes = m.nodes();
            Value *x, *y;
            std::string why = trim_casts(m, nodes, &x, &y);
            if (why.empty()) why = last_axis_mean(m.node("var"), m.value("xin"));
            float eps = 0;
            if (why.empty()) why = read_epsilon(m, &eps);
            Value* gv = m.value("gamma");
            const int64_t e = feature_count(x, {gv});
            if (why.empty() && gv) why = feature_reason(gv, e, x, "gamma");
            if (why.empty()) why = pattern::check_replaceable(rm.g, nodes, {y});
            if (!why.empty()) return why;
            std::vector<Value*> ins = {x};
            if (gv) ins.push_back(feature_vector(rm.g, gv, e));
            return rm.fuse_nodes(nodes, "RMSNorm", ins, {y}, {{"epsilon", attr_float(eps)}});
          }};
}

bool is_plain_add(const Node* n) {
  return n && n->op_type() == "Add" && is_default_domain(n->domain()) && n->num_inputs() == 2 &&
         n->input(0) && n->input(1);
}

bool same_dim(const Dim& a, const Dim& b) {
  return (a.known() && b.known() && a.value == b.value) || (!a.param.empty() && a.param == b.param);
}

// True when a tensor of shape `skip` provably broadcasts to shape `x` without growing it.
bool broadcasts_to(const Shape& skip, const Shape& x) {
  if (!skip.has_rank || !x.has_rank || skip.dims.size() > x.dims.size()) return false;
  const size_t off = x.dims.size() - skip.dims.size();
  for (size_t i = 0; i < skip.dims.size(); ++i) {
    const Dim& s = skip.dims[i];
    if (!same_dim(s, x.dims[off + i]) && !(s.known() && s.value == 1)) return false;
  }
  return true;
}

class SkipLayerNormFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"SkipLayerNormFusionPass",
                            "Fuses a residual Add (and a bias Add) into the LayerNormalization "
                            "after it as SkipLayerNorm",
                            true,
                            true,
                            {"Add", "LayerNormalization"}};
    return i;
  }

  void run(Graph& g, PassContext& ctx) override {
    using namespace pattern;
    Pat ln = any("ln").where_node(
        [](const Node& n) {
          return is_layer_norm(n) && n.num_inputs() >= 2 && is_plain_add(n.input(0)->producer());
        },
        "a LayerNormalization of an Add");
    const std::string pass = info().name;
    rewrite_all(g, ctx, pass, {{"", ln}}, [&](const std::string&, const Match& m) -> std::string {
      return guarded([&] { return rewrite(g, ctx, pass, m.value("ln")->producer()); });
    });
  }

 private:
  static std::string rewrite(Graph& g, PassContext& ctx, const std::string& pass, Node* ln) {
    Node* add = ln->input(0)->producer();
    for (size_t k = 1; k < ln->num_outputs(); ++k) {
      if (ln->output(k) && (!ln->output(k)->uses().empty() || ln->output(k)->is_graph_output())) {
        return ln->describe() + "'s Mean and InvStdDev outputs are used";
      }
    }
    if (ln->attr_int("stash_type", 1) != 1) return ln->describe() + " has stash_type != 1";
    const Shape& xs = add->output(0)->shape();
    const int64_t axis = ln->attr_int("axis", -1);
    if (axis != -1 && !(xs.has_rank && axis == static_cast<int64_t>(xs.dims.size()) - 1)) {
      return ln->describe() + " normalizes from axis " + std::to_string(axis) +
             ", not over the last axis only";
    }
    for (const Value* v : {add->input(0), add->input(1), add->output(0), ln->output(0)}) {
      if (v->dtype() != kF32) return quoted(v->name()) + " is " + dtype_name(v->dtype());
    }
    for (const Value* v : {add->input(0), add->input(1)}) {
      if (pattern::constant_value(v)) {
        return add->describe() + " adds the constant " + quoted(v->name()) + ", not a residual";
      }
    }
    const int64_t e = feature_count(add->output(0), {});
    if (e < 0)
      return std::string("the last dim of ") + quoted(add->output(0)->name()) + " is unknown";
    for (size_t i = 1; i < 3; ++i) {
      const Value* p = ln->input(i);
      if (!p) continue;
      const Shape& s = p->shape();
      bool ok = s.has_rank && s.dims.size() <= xs.dims.size() && !s.dims.empty() &&
                s.dims.back().known() && s.dims.back().value == e;
      for (size_t d = 0; ok && d + 1 < s.dims.size(); ++d)
        ok = s.dims[d].known() && s.dims[d].value == 1;
      if (!ok) {
        return std::string(i == 1 ? "gamma " : "beta ") + quoted(p->name()) + " of shape " +
               s.str() + " is not one value per feature";
      }
    }
    // A bias Add on one operand, Add(h, bias) with bias a float32 constant of one value per
    // feature used only here, is absorbed: the sum is then (h + bias) + other, as the kernel
    // adds.
    std::vector<Node*> nodes = {add, ln};
    Value* ops[2] = {add->input(0), add->input(1)};
    Value* bias = nullptr;
    int biased = -1;
    for (int k = 0; k < 2 && !bias; ++k) {
      Node* b = ops[k]->producer();
      if (!is_plain_add(b) || ops[k]->uses().size() != 1 || ops[k]->is_graph_output()) continue;
      for (size_t j = 0; j < 2 && !bias; ++j) {
        Value* c = b->input(j);
        Value* h = b->input(1 - j);
        const Tensor* t = pattern::constant_value(c);
        if (t && t->dtype() == kF32 && t->numel() == e && h->dtype() == kF32 &&
            !pattern::constant_value(h) && feature_reason(c, e, add->output(0), "bias").empty()) {
          bias = c;
          biased = k;
          ops[k] = h;
          nodes.insert(nodes.begin(), b);
        }
      }
    }
    // X is the operand of the sum's shape; Skip broadcasts to it.
    Value* x = nullptr;
    Value* skip = nullptr;
    for (int k : {biased < 0 ? 0 : biased, biased < 0 ? 1 : 1 - biased}) {
      if (!x && broadcasts_to(ops[k]->shape(), xs) && broadcasts_to(xs, ops[k]->shape()) &&
          broadcasts_to(ops[1 - k]->shape(), xs)) {
        x = ops[k];
        skip = ops[1 - k];
      }
    }
    if (!x) {
      return std::string("cannot show that one operand of ") + add->describe() + " (" +
             ops[0]->shape().str() + ", " + ops[1]->shape().str() +
             ") has the sum's shape and the other broadcasts to it";
    }
    std::vector<Value*> ins = {x, skip, ln->input(1), ln->input(2), bias};
    while (!ins.back()) ins.pop_back();
    std::vector<Value*> outs = {ln->output(0)};
    Value* sum = add->output(0);
    bool sum_used = sum->is_graph_output();
    for (const Use& u : sum->uses()) sum_used |= u.node != ln;
    if (sum_used) outs.push_back(sum);
    return apply_fusion(g, ctx, pass, nodes, "SkipLayerNorm", kFusedDomain, ins, outs,
                        {{"epsilon", attr_float(ln->attr_float("epsilon", 1e-5f))}});
  }
};

}  // namespace

std::unique_ptr<Pass> make_layer_norm_pass() { return make_rule_pass(layer_norm()); }
std::unique_ptr<Pass> make_rms_norm_pass() { return make_rule_pass(rms_norm()); }
std::unique_ptr<Pass> make_skip_layer_norm_pass() {
  return std::make_unique<SkipLayerNormFusion>();
}

}  // namespace nnfuse
