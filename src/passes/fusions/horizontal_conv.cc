// HorizontalConvFusionPass: 1x1 convolutions that read the same input with the same geometry
// and activation (an inception block's branch openings) become one FusedConvSplit (ai.nnfuse,
// kernels/ref/fused.cc): their weights and biases concatenated along the output channels, one
// product of the input against all of them, and its channels cut into the convs' outputs. The
// input is read once instead of once per conv, and the narrow products (16 or 32 outputs) run
// inside a wide one, where the GEMM kernels are efficient. GoogLeNet's and Inception-v3's blocks
// open with three such convs each.
#include <algorithm>
#include <map>

#include "ops/conv.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

using pattern::constant_value;

constexpr const char* kSharedAttrs[] = {
    "strides",  "pads",       "dilations",        "group",
    "auto_pad", "activation", "activation_alpha", "activation_beta"};

// A float32 1x1 conv of X (input 0) with constant weights and bias and no residual, of a known
// 4-D output: what the fused product computes.
bool is_product(const Node& n, const Value* x) {
  if ((!n.is(Op::kConv) && !n.is(Op::kFusedConv)) || n.num_inputs() < 2 || n.num_inputs() > 3 ||
      n.input(0) != x || n.num_outputs() != 1) {
    return false;
  }
  const Tensor* w = constant_value(n.input(1));
  if (!w || w->dtype() != DType::kFloat32 || w->rank() != 4 || w->dim(2) != 1 || w->dim(3) != 1) {
    return false;
  }
  if (n.num_inputs() == 3 && n.input(2)) {
    const Tensor* b = constant_value(n.input(2));
    if (!b || b->dtype() != DType::kFloat32 || b->numel() != w->dim(0)) return false;
  }
  if (n.attr_int("group", 1) != 1) return false;
  const Value* y = n.output(0);
  return y && y->shape().fully_known() && y->shape().dims.size() == 4;
}

bool same_value(const Attribute& x, const Attribute& y) {
  return x.kind == y.kind && x.f == y.f && x.i == y.i && x.s == y.s && x.floats == y.floats &&
         x.ints == y.ints;
}

// Whether a and b compute with one geometry and activation.
bool same_form(const Node& a, const Node& b) {
  if (a.op() != b.op()) return false;
  for (const char* k : kSharedAttrs) {
    const Attribute* x = a.find_attr(k);
    const Attribute* y = b.find_attr(k);
    if ((x == nullptr) != (y == nullptr) || (x && !same_value(*x, *y))) return false;
  }
  return true;
}

// The 1x1 convs of n's input that compute as n does (n among them).
std::vector<Node*> siblings(const Node& n) {
  const Value* x = n.input(0);
  std::vector<Node*> r;
  if (!x || !is_product(n, x)) return r;
  for (const Use& u : x->uses()) {
    if (u.input_index != 0 || std::find(r.begin(), r.end(), u.node) != r.end()) continue;
    if (u.node == &n || (is_product(*u.node, x) && same_form(n, *u.node))) r.push_back(u.node);
  }
  return r;
}

// The weights [sum of M, C, 1, 1] and biases (zeros where a conv has none) side by side.
Tensor concat_outputs(const std::vector<Node*>& convs, bool bias) {
  int64_t m = 0, per = 0;
  for (const Node* c : convs) {
    const Tensor* w = constant_value(c->input(1));
    m += w->dim(0);
    per = w->numel() / w->dim(0);
  }
  Tensor r(DType::kFloat32, bias ? Dims{m} : Dims{m, per, 1, 1});
  float* d = r.data<float>();
  for (const Node* c : convs) {
    const Tensor* w = constant_value(c->input(1));
    const Tensor* b = c->num_inputs() > 2 && c->input(2) ? constant_value(c->input(2)) : nullptr;
    const int64_t n = bias ? w->dim(0) : w->numel();
    if (bias && !b) {
      std::fill(d, d + n, 0.0f);
    } else {
      std::copy_n((bias ? b : w)->data<float>(), n, d);
    }
    d += n;
  }
  return r;
}

// The root's sibling convs (graph order) as one FusedConvSplit, or why not.
std::string fuse_siblings(const RuleMatch& m) {
  const Node* root = m.node("conv");
  std::vector<Node*> convs = siblings(*root);
  if (convs.size() < 2) return "no other 1x1 conv of the same input and form";
  // In the graph's order, so the parts keep the model's order of the branches.
  std::map<const Node*, size_t> order;
  for (const Node* node : m.g.nodes()) order.emplace(node, order.size());
  std::sort(convs.begin(), convs.end(),
            [&](const Node* a, const Node* b) { return order[a] < order[b]; });
  if (m["x"]->dtype() != DType::kFloat32) return "the input is not float32";
  const ops::FusedConv form = ops::FusedConv::of(*root);
  std::vector<int64_t> split;
  std::vector<Value*> outs;
  bool bias = false;
  for (const Node* c : convs) {
    split.push_back(constant_value(c->input(1))->dim(0));
    outs.push_back(c->output(0));
    bias = bias || (c->num_inputs() > 2 && c->input(2));
  }
  const std::string stem = root->name() + "_horizontal";
  Value* w = m.add_constant(stem + "_w", concat_outputs(convs, false));
  Value* b = bias ? m.add_constant(stem + "_b", concat_outputs(convs, true)) : nullptr;
  return m.fuse_nodes(convs, ops::FusedConvSplit{m["x"], w, b, form.conv, form.act, split}.spec(),
                      outs);
}

Rule horizontal_conv() {
  using namespace pattern;
  auto shared = [](const Node& n) { return siblings(n).size() >= 2; };
  const char* why = "another 1x1 conv of the same input and form";
  Pat conv =
      any_of({op_in(kFusedDomain, "FusedConv", {any("x"), constant("w")}, false)
                  .where_node(shared, why)
                  .named("conv"),
              op("Conv", {any("x"), constant("w")}, false).where_node(shared, why).named("conv")});
  return {.name = "HorizontalConvFusionPass",
          .description =
              "Fuses 1x1 convolutions of one input (the same geometry and activation) "
              "into one product with concatenated weights, its channels split into "
              "their outputs",
          .ops = {"Conv", "Conv"},
          .patterns = {{"", conv}},
          .rewrite = fuse_siblings};
}

}  // namespace

std::unique_ptr<Pass> make_horizontal_conv_pass() { return make_rule_pass(horizontal_conv()); }

}  // namespace nnfuse
