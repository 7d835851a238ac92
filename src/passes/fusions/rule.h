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
//            ops::FusedConv c = ops::FusedConv::of(*m.node("conv"));
//            if (std::string why = m.activation(&c.act); !why.empty()) return why;
//            return m.fuse(c.spec());
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

#include "ops/activation.h"
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
  // A new constant for the fused node (named after `stem`). Constants and nodes a rewrite adds
  // are removed again when it declines, so a rewrite may build before its last check.
  Value* add_constant(const std::string& stem, Tensor t) const;
  // The per-feature parameter `name` (guard::per_feature) as a float32 [n] value: itself when
  // it is one (or a runtime value), else a new constant; nullptr when the pattern left it unbound.
  Value* feature(const std::string& name, int64_t n) const;
  // The same, but when unbound a new constant of n copies of `fill` (a gamma of ones) named
  // after `stem`.
  Value* feature(const std::string& name, int64_t n, float fill, const std::string& stem) const;
  // Its n values as a float32 [n] tensor; n copies of `fill` when unbound.
  Tensor feature_values(const std::string& name, int64_t n, float fill) const;
  // The constant scalar `name` (guard::scalar) as a float.
  float scalar(const std::string& name) const;
  // The values of `names` (bound ones), then those of `if_read` that are read outside the match:
  // the outputs of a fused node that also writes an intermediate someone else reads.
  std::vector<Value*> outputs(const std::vector<std::string>& names,
                              const std::vector<std::string>& if_read = {}) const;
  // The result builder: a new node (a typed builder's spec, ops/*.h) writing one value of
  // `like`'s type and shape, its provenance the match's nodes (for a rewrite into more than one
  // node).
  Value* op(const ops::NodeSpec& spec, const std::string& stem, const Value* like) const;
  // The same with the type and shape given and the provenance of `from` (a node made from some
  // of the matched nodes, as a horizontal fusion makes). Trailing null inputs are dropped.
  Value* op(const ops::NodeSpec& spec, const std::string& stem, DType dtype, const Shape& shape,
            const std::vector<Node*>& from) const;
  // A fusion whose result feeds a node of the match instead of replacing its outputs: the node
  // `consumer` becomes `spec` (its inputs and attributes; the op stays), the `replaced` nodes
  // are removed, and `made` (by op(), in their place) is counted and reported as this rule's
  // fused node. Returns "".
  std::string rewire(Node* consumer, const ops::NodeSpec& spec, const Node* made,
                     const std::vector<Node*>& replaced) const;
  // Whether `v` is read by a node outside the match or is a graph output (a value the fused
  // node must write as well).
  bool read_outside(const Value* v) const;
  // The epilogue activation the variant names (with_activations) into `act`; "" or why its
  // parameters are unusable.
  std::string activation(ops::Activation* act) const;
  // Replaces the matched nodes by one node (a typed builder's spec) writing the root's output (or
  // `outputs`), under the rewriter's guards; "" when done, else the guard's reason. Trailing null
  // inputs (optional inputs left out) are dropped.
  std::string fuse(const ops::NodeSpec& spec, std::vector<Value*> outputs = {}) const;
  // The same for `nodes` instead of the matched ones (a rewrite that leaves some out).
  std::string fuse_nodes(const std::vector<Node*>& nodes, const ops::NodeSpec& spec,
                         std::vector<Value*> outputs) const;

  // What the rewrite added (for the driver to remove when it declines).
  mutable std::vector<Value*> added;
  mutable std::vector<Node*> made;
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

// The number of features of a per-feature parameter, read from a match (-1: unknown).
using Width = std::function<int64_t(const RuleMatch&)>;
namespace width {
// The last dim of the value `x`, else the length of the first bound constant among `params`
// with more than one element.
Width features(std::string x, std::vector<std::string> params = {});
// Dim 1 of the constant matrix `w`: a dense layer's output channels.
Width columns(std::string w);
}  // namespace width

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
// Each of `names` the match binds is a per-feature parameter (gamma, beta, a bias) with
// `width` values: a float32 constant [n] or [1, ..., n] (or [1], broadcast), of rank at most
// that of the value `of` when one is named (so applying it does not grow that value); with
// `runtime`, also a float32 runtime value of static shape [1, ..., n].
Guard per_feature(std::vector<std::string> names, Width width, std::string of = "",
                  bool runtime = false);
// The value is a float32 constant matrix (a dense layer's weight).
Guard matrix(std::string name);
// The value is a float constant with one element (`what` names it in the reason).
Guard scalar(std::string name, std::string what);
// Output `index` of the node is unused (an optional output the fused node does not write).
Guard unused_output(std::string node, size_t index);
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
