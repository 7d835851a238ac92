// SkipLayerNormFusionPass: LayerNormalization((a [+ bias]) + b)
//   == SkipLayerNorm(a, b, gamma, beta, bias) (ai.nnfuse), output 1 the sum itself when it has
//   other consumers (the next residual).
#include "passes/fusions/fusions.h"
#include "passes/fusions/norm_util.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using norm::feature_count;
using norm::feature_reason;
using norm::quoted;

constexpr DType kF32 = DType::kFloat32;

bool is_plain_add(const Node* n) {
  return n && n->op_type() == "Add" && is_default_domain(n->domain()) && n->num_inputs() == 2 &&
         n->input(0) && n->input(1);
}

bool same_dim(const Dim& a, const Dim& b) {
  return (a.known() && b.known() && a.value == b.value) || (!a.param.empty() && a.param == b.param);
}

// True when a tensor of shape `skip` provably broadcasts to shape `x` without growing it.
bool broadcasts_to(const Shape& skip, const Shape& x) {
  if (!skip.has_rank || !x.has_rank || skip.dims.size() > x.dims.size()) return false;
  const size_t off = x.dims.size() - skip.dims.size();
  for (size_t i = 0; i < skip.dims.size(); ++i) {
    const Dim& s = skip.dims[i];
    if (!same_dim(s, x.dims[off + i]) && !(s.known() && s.value == 1)) return false;
  }
  return true;
}

// "" when gamma and beta are one value per feature of the E-wide last axis of a rank-r sum.
std::string params_reason(const Node& ln, int64_t e, size_t r) {
  for (size_t i = 1; i < 3; ++i) {
    const Value* p = ln.input(i);
    if (!p) continue;
    const Shape& s = p->shape();
    bool ok = s.has_rank && s.dims.size() <= r && !s.dims.empty() && s.dims.back().known() &&
              s.dims.back().value == e;
    for (size_t d = 0; ok && d + 1 < s.dims.size(); ++d)
      ok = s.dims[d].known() && s.dims[d].value == 1;
    if (!ok) {
      return std::string(i == 1 ? "gamma " : "beta ") + quoted(p->name()) + " of shape " + s.str() +
             " is not one value per feature";
    }
  }
  return "";
}

// A bias Add on one operand of the sum, Add(h, bias) with bias a float32 constant of one value
// per feature used only here, is absorbed: the sum is then (h + bias) + other, as the kernel
// adds. Returns the bias (nullptr: none) and the operand it was on; ops[k] becomes h.
Value* absorb_bias(Value* ops[2], int& biased, int64_t e, const Value* sum,
                   std::vector<Node*>& nodes) {
  for (int k = 0; k < 2; ++k) {
    Node* b = ops[k]->producer();
    if (!is_plain_add(b) || ops[k]->uses().size() != 1 || ops[k]->is_graph_output()) continue;
    for (size_t j = 0; j < 2; ++j) {
      Value* c = b->input(j);
      Value* h = b->input(1 - j);
      const Tensor* t = pattern::constant_value(c);
      if (t && t->dtype() == kF32 && t->numel() == e && h->dtype() == kF32 &&
          !pattern::constant_value(h) && feature_reason(c, e, sum, "bias").empty()) {
        biased = k;
        ops[k] = h;
        nodes.insert(nodes.begin(), b);
        return c;
      }
    }
  }
  return nullptr;
}

Rule skip_layer_norm() {
  using namespace pattern;
  Pat add = op("Add", {any("a"), any("b")}).named("add");
  Pat ln =
      any_of({op("LayerNormalization", {add, any("gamma")}, false).named("ln"),
              op_in(kFusedDomain, "LayerNormalization", {add, any("gamma")}, false).named("ln")});
  return {.name = "SkipLayerNormFusionPass",
          .description =
              "Fuses a residual Add (and a bias Add) into the LayerNormalization after it "
              "as SkipLayerNorm",
          .ops = {"Add", "LayerNormalization"},
          .patterns = {{"", ln}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            Node* add = m.node("add");
            Node* ln = m.node("ln");
            Value* sum = add->output(0);
            const Shape& xs = sum->shape();
            if (std::string why = norm::layer_norm_reason(*ln, xs.has_rank ? xs.dims.size() : -1);
                !why.empty())
              return why;
            for (const Value* v : {m["a"], m["b"], sum, ln->output(0)}) {
              if (v->dtype() != kF32) return quoted(v->name()) + " is " + dtype_name(v->dtype());
            }
            for (const Value* v : {m["a"], m["b"]}) {
              if (pattern::constant_value(v)) {
                return add->describe() + " adds the constant " + quoted(v->name()) +
                       ", not a residual";
              }
            }
            const int64_t e = feature_count(sum, {});
            if (e < 0) return "the last dim of " + quoted(sum->name()) + " is unknown";
            if (std::string why = params_reason(*ln, e, xs.dims.size()); !why.empty()) return why;
            std::vector<Node*> nodes = {add, ln};
            Value* ops[2] = {m["a"], m["b"]};
            int biased = -1;
            Value* bias = absorb_bias(ops, biased, e, sum, nodes);
            // X is the operand of the sum's shape; Skip broadcasts to it.
            const int k = biased < 0 ? 0 : biased;
            const bool fits = broadcasts_to(ops[k]->shape(), xs) &&
                              broadcasts_to(xs, ops[k]->shape()) &&
                              broadcasts_to(ops[1 - k]->shape(), xs);
            const bool swapped = !fits && broadcasts_to(ops[1 - k]->shape(), xs) &&
                                 broadcasts_to(xs, ops[1 - k]->shape()) &&
                                 broadcasts_to(ops[k]->shape(), xs);
            if (!fits && !swapped) {
              return "cannot show that one operand of " + add->describe() + " (" +
                     ops[0]->shape().str() + ", " + ops[1]->shape().str() +
                     ") has the sum's shape and the other broadcasts to it";
            }
            Value* x = ops[fits ? k : 1 - k];
            std::vector<Value*> ins = {x, ops[fits ? 1 - k : k], ln->input(1), ln->input(2), bias};
            while (!ins.back()) ins.pop_back();
            std::vector<Value*> outs = {ln->output(0)};
            bool sum_used = sum->is_graph_output();
            for (const Use& u : sum->uses()) sum_used |= u.node != ln;
            if (sum_used) outs.push_back(sum);
            return m.fuse_nodes(nodes, "SkipLayerNorm", ins, outs, norm::epsilon_of(*ln));
          }};
}

}  // namespace

std::unique_ptr<Pass> make_skip_layer_norm_pass() { return make_rule_pass(skip_layer_norm()); }

}  // namespace nnfuse
