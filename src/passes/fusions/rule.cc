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
  explicit RulePass(Rule rule)
      : rule_(std::move(rule)),
        info_{rule_.name, rule_.description, true, rule_.default_on, rule_.ops} {}
  const PassInfo& info() const override { return info_; }
  void run(Graph& g, PassContext& ctx) override {
    rewrite_all(g, ctx, rule_.name, rule_.patterns,
                [&](const std::string& variant, const pattern::Match& m) -> std::string {
                  try {
                    return rule_.rewrite(RuleMatch(g, ctx, rule_, variant, m));
                  } catch (const Error& e) {
                    return e.what();  // a guard that threw: the match is declined with it
                  }
                });
  }

 private:
  Rule rule_;
  PassInfo info_;
};

}  // namespace

std::unique_ptr<Pass> make_rule_pass(Rule rule) {
  return std::make_unique<RulePass>(std::move(rule));
}

}  // namespace nnfuse
