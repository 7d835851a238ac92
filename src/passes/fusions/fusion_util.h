// Shared pieces of the fusion passes: applying a rewrite with its guards and bookkeeping,
// and the activation patterns a fused kernel can take as an epilogue.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"
#include "ops/activation.h"
#include "passes/pass.h"
#include "pattern/pattern.h"

namespace nnfuse {

// Replaces `nodes` by one node (`spec`, a typed builder's; trailing null inputs dropped) when the
// guards allow it and records the fused node's benefit (intermediates no longer written and read
// back, kernels saved); returns "" then, or the guard's reason. The new node's provenance lists the
// original nodes, including those an earlier fusion had already absorbed.
std::string apply_fusion(Graph& g, PassContext& ctx, const std::string& pass,
                         const std::vector<Node*>& nodes, const ops::NodeSpec& spec,
                         const std::vector<Value*>& outputs);

// Adds a node (a typed builder's spec; trailing null inputs dropped) named `name` writing
// `outputs`, with the provenance `from` by `pass`.
Node* add_spec_node(Graph& g, const ops::NodeSpec& spec, const std::string& name,
                    const std::vector<Value*>& outputs, const std::vector<std::string>& from,
                    const std::string& pass);

// "" when `conv` (a Conv or FusedConv about to become part of a larger fused node) adds no
// residual (FusedConv's Sum or skip convolution) and its bias, if any, is a constant; else why
// not, naming the conv as `who`.
std::string conv_part_reason(const Node& conv, const std::string& who);

// Original node names behind `nodes` (expanding fused nodes' provenance).
std::vector<std::string> original_names(const std::vector<Node*>& nodes);

// Patterns of every supported activation applied to `x`, each named as the activation is
// (ops::activation_name: the variant a rule's rewrite reads it from); each entry's `match` has
// its root at the activation's last node. Callers try them in order.
struct ActivationPattern {
  std::string name;
  pattern::Pat match;
};
std::vector<ActivationPattern> activation_patterns(const pattern::Pat& x);

// The product of `factors` in any association (and, Mul being commutative, any order): every
// binary Mul tree over them. Factors that are the same Pat are interchangeable. For up to 4.
pattern::Pat product_of(const std::vector<pattern::Pat>& factors);
// GELU as exporters write it, rooted at its last node:
//   erf form:  0.5 * x * (1 + erf(x / sqrt(2)))   (or x * (1 / sqrt(2)))
//   tanh form: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//              (x^3 as Pow(x, 3) or x * x * x; also sqrt(2 / pi) * x * (1 + 0.044715 * x * x))
// the three factors 0.5, x and (1 + ...) multiplied in any association.
pattern::Pat gelu_erf_pattern(const pattern::Pat& x);
pattern::Pat gelu_tanh_pattern(const pattern::Pat& x);
// x * sigmoid(alpha * x) with alpha a constant named "swish_alpha" (SiLU, x * sigmoid(x), is
// a separate pattern).
pattern::Pat swish_pattern(const pattern::Pat& x);
// Reads the activation's parameters (alpha, Clip bounds, Swish's alpha: a Swish of alpha 1 is
// SiLU) from a match of the pattern of the variant `variant` (an activation's name; "": none);
// nullopt with `why` set when a parameter is not a usable constant.
std::optional<ops::Activation> activation_from_match(const std::string& variant,
                                                     const pattern::Match& m, std::string* why);

// Float32 matrices with the same number of rows side by side: [R, C1 + C2 + ...] (the packed
// weights of a horizontal fusion).
Tensor concat_columns(const std::vector<const Tensor*>& parts);

// A 1-D float32 tensor of per-channel constants folded in double (a BatchNorm's scale and shift,
// a GroupNorm's affine).
Tensor float_vector(const std::vector<double>& v);

// `parts` as the consecutive equal parts, in this order, of one tensor along its last axis:
// the outputs of one Split (all of them, each of the same static width) or Slices
// [i * W, (i + 1) * W). The tensor and the nodes that cut it; nullopt otherwise.
struct EqualParts {
  Value* whole = nullptr;
  std::vector<Node*> nodes;
};
std::optional<EqualParts> equal_parts(const std::vector<Value*>& parts);

// For passes that find their candidates by hand: scans the graph (restarting after every
// change) for nodes `select` picks, given as the nodes the candidate involves (empty: not a
// match); each pick is counted for `pass` and handed to `rewrite`, which returns "" when it
// changed the graph or why it declined (recorded; the node is not tried again).
void rewrite_each(Graph& g, PassContext& ctx, const std::string& pass,
                  const std::function<std::vector<Node*>(Node*)>& select,
                  const std::function<std::string(const std::vector<Node*>&)>& rewrite);

// The chain of `ops` starting at `first`, each node a consumer of the previous one's output;
// empty when there is none (or an op is unknown).
std::vector<Node*> chain_from(Node* first, const std::vector<Op>& ops);
// The ops of ONNX's default domain that `names` name (Op::kUnknown for a name nnfuse does not
// know).
std::vector<Op> onnx_ops_named(const std::vector<std::string>& names);
// Why the chain's inner values cannot stay inside one kernel ("" when they can): one is a graph
// output or is used outside the chain.
std::string chain_escape(const std::vector<Node*>& chain);

}  // namespace nnfuse

namespace nnfuse {

// Runs `patterns` over the graph (latest nodes first) until no more rewrites apply. Every
// match (of the first pattern that matches at a node) is counted for `pass` and handed to
// `rewrite`, which returns "" when it changed the graph (the scan then restarts, since nodes
// were removed) or the reason it declined, which is recorded (the node is not tried again).
// A match `applies` refuses (when given) is not one: it is neither counted nor handed on.
void rewrite_all(
    Graph& g, PassContext& ctx, const std::string& pass,
    const std::vector<ActivationPattern>& patterns,
    const std::function<bool(const pattern::Match&)>& applies,
    const std::function<std::string(const std::string& variant, const pattern::Match& m)>& rewrite);

}  // namespace nnfuse
