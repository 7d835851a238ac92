#include "passes/fusions/rule.h"

#include <algorithm>

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

Value* RuleMatch::op(const std::string& op_type, const std::string& stem,
                     const std::vector<Value*>& inputs, const Value* like,
                     const std::map<std::string, Attribute>& attrs,
                     const std::string& domain) const {
  Value* y = g.add_value(g.unique_value_name(stem), like->dtype(), like->shape());
  Node* n = g.add_node(op_type, g.unique_node_name(stem), inputs, {y}, domain);
  for (const auto& [k, a] : attrs) n->set_attr(k, a);
  n->set_provenance(original_names(match.nodes()), rule.name);
  return y;
}

Value* RuleMatch::add_constant(const std::string& stem, Tensor t) const {
  return pattern::add_constant(g, stem, std::move(t));
}

std::string RuleMatch::activation(std::map<std::string, Attribute>& attrs) const {
  std::string why;
  const auto a = activation_from_match(variant, match, &why);
  if (!a) return why;
  set_activation_attrs(attrs, *a);
  return "";
}

std::string RuleMatch::fuse(const std::string& op_type, std::vector<Value*> inputs,
                            std::map<std::string, Attribute> attrs, const std::string& domain,
                            std::vector<Value*> outputs) const {
  if (outputs.empty()) outputs = {match.root()->output(0)};
  return apply_fusion(g, ctx, rule.name, match.nodes(), op_type, domain, inputs, outputs,
                      std::move(attrs));
}

std::string RuleMatch::fuse_nodes(const std::vector<Node*>& nodes, const std::string& op_type,
                                  std::vector<Value*> inputs, std::vector<Value*> outputs,
                                  std::map<std::string, Attribute> attrs,
                                  const std::string& domain) const {
  return apply_fusion(g, ctx, rule.name, nodes, op_type, domain, inputs, outputs, std::move(attrs));
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

}  // namespace guard

std::function<bool(const pattern::Match&)> some_leaf(std::string tree, std::string name) {
  return [tree, name](const pattern::Match& m) {
    for (const pattern::Match& leaf : m.repeats(tree)) {
      if (leaf.value(name)) return true;
    }
    return false;
  };
}

namespace {

class RulePass : public Pass {
 public:
  explicit RulePass(std::vector<Rule> stages) : stages_(std::move(stages)) {
    const Rule& r = stages_.at(0);
    info_ = {r.name, r.description, true, r.default_on, r.ops};
  }
  const PassInfo& info() const override { return info_; }
  void run(Graph& g, PassContext& ctx) override {
    for (const Rule& rule : stages_) {
      rewrite_all(g, ctx, info_.name, rule.patterns, rule.applies,
                  [&](const std::string& variant, const pattern::Match& m) -> std::string {
                    try {
                      const RuleMatch rm(g, ctx, rule, variant, m);
                      for (const Guard& guard : rule.guards) {
                        if (std::string why = guard(rm); !why.empty()) return why;
                      }
                      std::string why = rule.rewrite(rm);
                      if (why.empty()) g.remove_dead_values();  // the constants replaced
                      return why;
                    } catch (const Error& e) {
                      return e.what();  // a guard that threw: the match is declined with it
                    }
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
