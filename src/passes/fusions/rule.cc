#include "passes/fusions/rule.h"

#include <algorithm>
#include <optional>

#include "ir/error.h"
#include "passes/fusions/norm_util.h"
#include "pattern/rewriter.h"

namespace nnfuse {

const Tensor* RuleMatch::constant(const std::string& name) const {
  return pattern::constant_value(match.value(name));
}

bool RuleMatch::read_outside(const Value* v) const {
  if (v->is_graph_output()) return true;
  const std::vector<Node*>& inside = match.nodes();
  for (const Use& u : v->uses()) {
    if (std::find(inside.begin(), inside.end(), u.node) == inside.end()) return true;
  }
  return false;
}

Value* RuleMatch::op(const ops::NodeSpec& spec, const std::string& stem, const Value* like) const {
  return op(spec, stem, like->dtype(), like->shape(), match.nodes());
}

Value* RuleMatch::op(const ops::NodeSpec& spec, const std::string& stem, DType dtype,
                     const Shape& shape, const std::vector<Node*>& from) const {
  std::vector<Value*> inputs = spec.inputs;
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  Value* y = g.add_value(g.unique_value_name(stem), dtype, shape);
  Node* n = g.add_node(std::string(op_name(spec.op)), g.unique_node_name(stem), inputs, {y},
                       ops::spec_domain(spec));
  made.push_back(n);
  for (const auto& [k, a] : spec.attrs) n->set_attr(k, a);
  n->set_provenance(original_names(from), rule.name);
  return y;
}

std::string RuleMatch::rewire(Node* consumer, const ops::NodeSpec& spec, const Node* fused,
                              const std::vector<Node*>& replaced) const {
  for (size_t i = 0; i < spec.inputs.size() && i < consumer->num_inputs(); ++i) {
    consumer->set_input(i, spec.inputs[i]);
  }
  for (const auto& [k, a] : spec.attrs) consumer->set_attr(k, a);
  for (Node* n : replaced) g.remove_node(n);
  g.topological_sort();
  ctx.applied(rule.name);
  ctx.report.fused.push_back(
      {fused->name(), rule.name, fused->fused_from(), 0, static_cast<int>(replaced.size()) - 1});
  return "";
}

Value* RuleMatch::add_constant(const std::string& stem, Tensor t) const {
  Value* v = pattern::add_constant(g, stem, std::move(t));
  added.push_back(v);
  return v;
}

Value* RuleMatch::feature(const std::string& name, int64_t n) const {
  Value* v = match.value(name);
  const Tensor* t = v ? pattern::constant_value(v) : nullptr;
  if (!t || (t->dtype() == DType::kFloat32 && t->rank() == 1 && t->numel() == n)) return v;
  return add_constant(v->name() + "_f32", feature_values(name, n, 0.0f));
}

Value* RuleMatch::feature(const std::string& name, int64_t n, float fill,
                          const std::string& stem) const {
  return match.value(name) ? feature(name, n) : add_constant(stem, feature_values(name, n, fill));
}

Tensor RuleMatch::feature_values(const std::string& name, int64_t n, float fill) const {
  const Tensor* t = constant(name);
  Tensor f(DType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) {
    f.data<float>()[i] = t ? static_cast<float>(t->double_at(i % t->numel())) : fill;
  }
  return f;
}

float RuleMatch::scalar(const std::string& name) const {
  return static_cast<float>(constant(name)->double_at(0));
}

std::vector<Value*> RuleMatch::outputs(const std::vector<std::string>& names,
                                       const std::vector<std::string>& if_read) const {
  std::vector<Value*> r;
  for (const std::string& n : names) {
    if (Value* v = match.value(n)) r.push_back(v);
  }
  for (const std::string& n : if_read) {
    if (Value* v = match.value(n); v && read_outside(v)) r.push_back(v);
  }
  return r;
}

std::string RuleMatch::activation(ops::Activation* act) const {
  std::string why;
  const auto a = activation_from_match(variant, match, &why);
  if (!a) return why;
  *act = *a;
  return "";
}

std::string RuleMatch::fuse(const ops::NodeSpec& spec, std::vector<Value*> outputs) const {
  if (outputs.empty()) outputs = {match.root()->output(0)};
  return fuse_nodes(match.nodes(), spec, std::move(outputs));
}

std::string RuleMatch::fuse_nodes(const std::vector<Node*>& nodes, const ops::NodeSpec& spec,
                                  std::vector<Value*> outputs) const {
  return apply_fusion(g, ctx, rule.name, nodes, spec, outputs);
}

std::vector<ActivationPattern> with_activations(const pattern::Pat& base, bool bare) {
  std::vector<ActivationPattern> p = activation_patterns(base);
  if (bare) p.push_back({"", base});
  return p;
}

namespace guard {

using norm::quoted;

Guard float32(std::vector<std::string> names) {
  return [names](const RuleMatch& m) -> std::string {
    for (const std::string& n : names) {
      const Value* v = m[n];
      if (v && v->dtype() != DType::kFloat32) {
        return quoted(v->name()) + " is " + dtype_name(v->dtype()) + ", not float32";
      }
    }
    return "";
  };
}

Guard not_constant(std::vector<std::string> names) {
  return [names](const RuleMatch& m) -> std::string {
    for (const std::string& n : names) {
      const Value* v = m[n];
      if (v && pattern::constant_value(v)) {
        return quoted(v->name()) + " is a constant, not a residual";
      }
    }
    return "";
  };
}

Guard no_activation(std::string node) {
  return [node](const RuleMatch& m) -> std::string {
    const Node* n = m.node(node);
    if (n && !n->attr_string("activation", "").empty()) {
      return n->describe() + " already applies the activation " + n->attr_string("activation", "");
    }
    return "";
  };
}

Guard same_shape(std::string a, std::string b) {
  return [a, b](const RuleMatch& m) -> std::string {
    const Shape &sa = m[a]->shape(), &sb = m[b]->shape();
    if (sb.fully_known() && sa == sb) return "";
    return quoted(m[a]->name()) + " " + sa.str() + " is not of the shape of " +
           quoted(m[b]->name()) + " " + sb.str() + " (broadcasting Adds are not fused)";
  };
}

Guard read_once(std::string node) {
  return [node](const RuleMatch& m) -> std::string {
    const Value* y = m.node(node)->output(0);
    if (y->uses().size() != 1 || y->is_graph_output()) {
      return "does not pay: " + quoted(y->name()) +
             " is also read elsewhere, so it is written anyway";
    }
    return "";
  };
}

Guard layer_norm(std::string node, std::string input) {
  return [node, input](const RuleMatch& m) -> std::string {
    const Shape& s = m[input]->shape();
    return norm::layer_norm_reason(*m.node(node),
                                   s.has_rank ? static_cast<int64_t>(s.dims.size()) : -1);
  };
}

Guard per_feature(std::vector<std::string> names, Width width, std::string of, bool runtime) {
  return [names, width, of, runtime](const RuleMatch& m) -> std::string {
    const Value* x = of.empty() ? nullptr : m[of];
    const int64_t rank =
        x && x->shape().has_rank ? static_cast<int64_t>(x->shape().dims.size()) : -1;
    std::optional<int64_t> width_of;  // read once, for the first bound parameter
    for (const std::string& name : names) {
      const Value* v = m[name];
      if (!v) continue;
      if (!width_of) width_of = width(m);
      const int64_t n = *width_of;
      const Tensor* t = pattern::constant_value(v);
      const Shape s = t ? Shape::of(t->shape()) : v->shape();
      bool ok = n > 0 && s.fully_known() && !s.dims.empty() &&
                (!x || (rank >= 0 && static_cast<int64_t>(s.dims.size()) <= rank));
      if (ok) {
        const Dims d = s.static_dims();
        for (size_t i = 0; i + 1 < d.size(); ++i) ok &= d[i] == 1;
        ok &= d.back() == n || (t && d.back() == 1);
      }
      if (!t && !runtime) return name + " " + quoted(v->name()) + " is not a constant";
      if (v->dtype() != DType::kFloat32 && !(t && norm::is_float_type(v->dtype()))) {
        return name + " " + quoted(v->name()) + " is " + dtype_name(v->dtype()) + ", not float32";
      }
      if (!ok) {
        return name + " " + quoted(v->name()) + " of shape " + s.str() +
               " is not one value per feature (" + (n < 0 ? std::string("?") : std::to_string(n)) +
               ")";
      }
    }
    return "";
  };
}

Guard matrix(std::string name) {
  return [name](const RuleMatch& m) -> std::string {
    const Tensor* t = m.constant(name);
    if (t && t->rank() == 2 && t->dtype() == DType::kFloat32) return "";
    return quoted(m[name]->name()) + " is not a constant float32 matrix";
  };
}

Guard scalar(std::string name, std::string what) {
  return [name, what](const RuleMatch& m) -> std::string {
    const Tensor* t = m.constant(name);
    if (t && t->numel() == 1 && norm::is_float_type(t->dtype())) return "";
    return what + " " + quoted(m[name]->name()) +
           (t ? " is not one float (" + std::string(dtype_name(t->dtype())) + dims_str(t->shape()) +
                    ")"
              : " is not a constant");
  };
}

Guard unused_output(std::string node, size_t index) {
  return [node, index](const RuleMatch& m) -> std::string {
    const Value* v = optional_output(m.node(node), index);
    if (!v || (v->uses().empty() && !v->is_graph_output())) return "";
    return m.node(node)->describe() + "'s output " + quoted(v->name()) + " is read elsewhere";
  };
}

}  // namespace guard

namespace width {

Width features(std::string x, std::vector<std::string> params) {
  return [x, params](const RuleMatch& m) {
    std::vector<const Value*> ps;
    for (const std::string& p : params) ps.push_back(m[p]);
    return norm::feature_count(m[x], ps);
  };
}

Width columns(std::string w) {
  return [w](const RuleMatch& m) -> int64_t {
    const Tensor* t = m.constant(w);
    return t && t->rank() == 2 ? t->dim(1) : -1;
  };
}

}  // namespace width

std::function<bool(const pattern::Match&)> some_leaf(std::string tree, std::string name) {
  return [tree, name](const pattern::Match& m) {
    for (const pattern::Match& leaf : m.repeats(tree)) {
      if (leaf.value(name)) return true;
    }
    return false;
  };
}

namespace {

// Removes what a declined rewrite added: its nodes (made by RuleMatch::op), their outputs and
// its constants.
void undo(Graph& g, const std::vector<Node*>& made, const std::vector<Value*>& constants) {
  std::vector<Value*> values = constants;
  for (auto it = made.rbegin(); it != made.rend(); ++it) {
    for (Value* v : (*it)->outputs()) values.push_back(v);
    g.remove_node(*it);
  }
  for (Value* v : values) g.remove_if_dead(v);
}

class RulePass : public Pass {
 public:
  explicit RulePass(std::vector<Rule> stages) : stages_(std::move(stages)) {
    const Rule& r = stages_.at(0);
    info_ = {r.name, r.description, true, r.default_on, r.ops};
  }
  const PassInfo& info() const override { return info_; }
  void run(Graph& g, PassContext& ctx) const override {
    for (const Rule& rule : stages_) {
      rewrite_all(g, ctx, info_.name, rule.patterns, rule.applies,
                  [&](const std::string& variant, const pattern::Match& m) -> std::string {
                    const RuleMatch rm(g, ctx, rule, variant, m);
                    std::string why;
                    try {  // a guard or rewrite that throws declines the match with the message
                      for (const Guard& guard : rule.guards) {
                        if (why = guard(rm); !why.empty()) return why;  // guards add nothing
                      }
                      why = rule.rewrite(rm);
                    } catch (const Error& e) {
                      why = e.what();
                    }
                    if (why.empty()) {
                      g.remove_dead_values();  // the constants replaced
                    } else {
                      undo(g, rm.made, rm.added);
                    }
                    return why;
                  });
    }
  }

 private:
  std::vector<Rule> stages_;
  PassInfo info_;
};

}  // namespace

std::unique_ptr<Pass> make_rule_pass(Rule rule) {
  std::vector<Rule> stages;
  stages.push_back(std::move(rule));
  return make_rule_pass(std::move(stages));
}

std::unique_ptr<Pass> make_rule_pass(std::vector<Rule> stages) {
  if (stages.empty()) fail(ErrorKind::kInternal, "a rule pass without rules");
  return std::make_unique<RulePass>(std::move(stages));
}

}  // namespace nnfuse
