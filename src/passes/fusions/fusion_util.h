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
#include "passes/pass.h"
#include "pattern/pattern.h"

namespace nnfuse {

// Replaces `nodes` by one node when the guards allow it and records the fused node's benefit
// (intermediates no longer written and read back, kernels saved); returns "" then, or the
// guard's reason. The new node's provenance lists the original nodes, including those an
// earlier fusion had already absorbed.
std::string apply_fusion(Graph& g, PassContext& ctx, const std::string& pass,
                         const std::vector<Node*>& nodes, const std::string& op_type,
                         const std::string& domain, const std::vector<Value*>& inputs,
                         const std::vector<Value*>& outputs,
                         std::map<std::string, Attribute> attrs);

// A LayerNormalization node: the ONNX op (opset 17+) or nnfuse's (kFusedDomain, earlier opsets).
bool is_layer_norm(const Node& n);

// "" when `conv` (a Conv or FusedConv about to become part of a larger fused node) adds no
// residual (FusedConv's Sum or skip convolution) and its bias, if any, is a constant; else why
// not, naming the conv as `who`.
std::string conv_part_reason(const Node& conv, const std::string& who);

// Original node names behind `nodes` (expanding fused nodes' provenance).
std::vector<std::string> original_names(const std::vector<Node*>& nodes);

// An activation a fused kernel applies as its epilogue.
struct Activation {
  std::string name;  // as FusedConv's `activation` attribute: Relu, Clip, SiLU, Gelu, ...
  float alpha = 0, beta = 0;
};

// Patterns of every supported activation applied to `x`; each entry's `match` has its root at
// the activation's last node. Callers try them in order.
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
// named SiLU) from a match of its pattern (name "": no activation);
// nullopt with `why` set when a parameter is not a usable constant.
std::optional<Activation> activation_from_match(const std::string& name, const pattern::Match& m,
                                                std::string* why);
// Sets activation, activation_alpha and activation_beta on a fused node's attributes.
void set_activation_attrs(std::map<std::string, Attribute>& attrs, const Activation& a);

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

// The chain of `ops` (default domain) starting at `first`, each node a consumer of the
// previous one's output; empty when there is none.
std::vector<Node*> chain_from(Node* first, const std::vector<std::string>& ops);
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
