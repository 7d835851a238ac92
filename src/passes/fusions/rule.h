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
  // A new constant for the fused node (named after `stem`).
  Value* add_constant(const std::string& stem, Tensor t) const;
  // The result builder: a new node writing one value of `like`'s type and shape, its
  // provenance the match's nodes (for a rewrite into more than one node).
  Value* op(const std::string& op_type, const std::string& stem, const std::vector<Value*>& inputs,
            const Value* like, const std::map<std::string, Attribute>& attrs = {},
            const std::string& domain = kFusedDomain) const;
  // Whether `v` is read by a node outside the match or is a graph output (a value the fused
  // node must write as well).
  bool read_outside(const Value* v) const;
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

// A guard: "" when the match may be rewritten, else the reason it is declined with.
using Guard = std::function<std::string(const RuleMatch&)>;

struct Rule {
  std::string name;
  std::string description = {};
  std::vector<std::string> ops = {};  // for the switch file's rules format and list-passes
  std::vector<ActivationPattern> patterns;
  // Checked in order before the rewrite; the first that fails declines the match.
  std::vector<Guard> guards = {};
  std::function<std::string(const RuleMatch&)> rewrite;
  // A structural condition the patterns cannot state (say, "some leaf is a Gather"): a match
  // it refuses is not one of this rule's, so it is neither counted nor declined.
  std::function<bool(const pattern::Match&)> applies = {};
  bool default_on = true;
};

// The guards rules share; each names what it checks in its reason. `names` are the pattern's.
namespace guard {
// Each value is float32.
Guard float32(std::vector<std::string> names);
// None of the values is a constant (a residual, not a bias).
Guard not_constant(std::vector<std::string> names);
// The fused node (FusedConv, FusedMatMul) applies no epilogue activation yet.
Guard no_activation(std::string node);
// The value `a` (a residual) has exactly the static shape of `b`.
Guard same_shape(std::string a, std::string b);
// The node's output 0 is read by one node and is not a graph output.
Guard read_once(std::string node);
// The LayerNormalization can run inside a fused kernel (norm::layer_norm_reason), over the
// last axis of the value `input`.
Guard layer_norm(std::string node, std::string input);
}  // namespace guard

// For Rule::applies: some leaf of the tree() named `tree` binds `name`.
std::function<bool(const pattern::Match&)> some_leaf(std::string tree, std::string name);

// `base` followed by every epilogue activation the fused kernels apply (variant: the
// activation's name), and, with `bare`, `base` alone too (variant "").
std::vector<ActivationPattern> with_activations(const pattern::Pat& base, bool bare = false);

// The pass that runs `rule` on the driver.
std::unique_ptr<Pass> make_rule_pass(Rule rule);
// One pass of several stages, each rule run to its fixed point in turn (a rule that rewrites
// what the one before made); named, described and listed by the first.
std::unique_ptr<Pass> make_rule_pass(std::vector<Rule> stages);

}  // namespace nnfuse
