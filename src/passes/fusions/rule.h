// One shape for a fusion rule, and the one driver that runs every rule.
//
// A rule is data: its name (the pass name the switch file, list-passes and fusion_result.json
// use), the op list the switch file's rules format names it by, its patterns (the exporter
// variants, tried in order at every node, latest node first), and a rewrite that checks its
// guards and builds the fused node, returning "" or the reason it declined:
//
//   Rule r{.name = "ConvActivationFusionPass", .description = "...", .ops = {"Conv", "Relu"},
//          .patterns = with_activations(conv),
//          .rewrite = [](const RuleMatch& m) {
//            auto attrs = m.node("conv")->attrs();
//            if (std::string why = m.activation(attrs); !why.empty()) return why;
//            return m.fuse("FusedConv", {m["x"], m["w"]}, attrs);
//          }};
//
// The driver matches to a fixed point, counts every match, records every declined match with
// its reason (an exception a rewrite throws becomes the reason), and gives each fused node its
// provenance and benefit (apply_fusion).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "passes/fusions/fusion_util.h"
#include "passes/pass.h"

namespace nnfuse {

struct Rule;

// What a rule's rewrite sees of one match.
class RuleMatch {
 public:
  RuleMatch(Graph& g, PassContext& ctx, const Rule& rule, const std::string& variant,
            const pattern::Match& m)
      : g(g), ctx(ctx), rule(rule), variant(variant), match(m) {}

  Graph& g;
  PassContext& ctx;
  const Rule& rule;
  const std::string& variant;  // the name of the pattern that matched
  const pattern::Match& match;

  Value* operator[](const std::string& name) const { return match.value(name); }
  Node* node(const std::string& name) const { return match.node(name); }
  Node* root() const { return match.root(); }
  // The constant bound to `name`, or nullptr.
  const Tensor* constant(const std::string& name) const;
  // Reads the epilogue activation the variant names (with_activations) into `attrs`
  // (activation, activation_alpha, activation_beta); "" or why its parameters are unusable.
  std::string activation(std::map<std::string, Attribute>& attrs) const;
  // Replaces the matched nodes by one node writing the root's output (or `outputs`), under the
  // rewriter's guards; "" when done, else the guard's reason.
  std::string fuse(const std::string& op_type, std::vector<Value*> inputs,
                   std::map<std::string, Attribute> attrs = {},
                   const std::string& domain = kFusedDomain,
                   std::vector<Value*> outputs = {}) const;
  // The same for `nodes` instead of the matched ones (a rewrite that leaves some out).
  std::string fuse_nodes(const std::vector<Node*>& nodes, const std::string& op_type,
                         std::vector<Value*> inputs, std::vector<Value*> outputs,
                         std::map<std::string, Attribute> attrs,
                         const std::string& domain = kFusedDomain) const;
};

struct Rule {
  std::string name;
  std::string description = {};
  std::vector<std::string> ops = {};  // for the switch file's rules format and list-passes
  std::vector<ActivationPattern> patterns;
  std::function<std::string(const RuleMatch&)> rewrite;
  // A structural condition the patterns cannot state (say, "some leaf is a Gather"): a match
  // it refuses is not one of this rule's, so it is neither counted nor declined.
  std::function<bool(const pattern::Match&)> applies = {};
  bool default_on = true;
};

// `base` followed by every epilogue activation the fused kernels apply (variant: the
// activation's name), and, with `bare`, `base` alone too (variant "").
std::vector<ActivationPattern> with_activations(const pattern::Pat& base, bool bare = false);

// The pass that runs `rule` on the driver.
std::unique_ptr<Pass> make_rule_pass(Rule rule);
// One pass of several stages, each rule run to its fixed point in turn (a rule that rewrites
// what the one before made); named, described and listed by the first.
std::unique_ptr<Pass> make_rule_pass(std::vector<Rule> stages);

}  // namespace nnfuse
