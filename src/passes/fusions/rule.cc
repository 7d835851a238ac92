#include "passes/fusions/rule.h"

#include "ir/error.h"

namespace nnfuse {

const Tensor* RuleMatch::constant(const std::string& name) const {
  return pattern::constant_value(match.value(name));
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
                      return rule.rewrite(RuleMatch(g, ctx, rule, variant, m));
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
