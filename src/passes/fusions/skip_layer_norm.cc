// SkipLayerNormFusionPass: LayerNormalization((a [+ bias]) + b)
//   == SkipLayerNorm(a, b, gamma, beta, bias) (ai.nnfuse), output 1 the sum itself when it has
//   other consumers (the next residual).
#include "ir/error.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/norm_util.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using norm::feature_count;
using norm::feature_reason;
using norm::quoted;

constexpr DType kF32 = DType::kFloat32;

template <typename F>
std::string guarded(F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    return e.what();
  }
}

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

class SkipLayerNormFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"SkipLayerNormFusionPass",
                            "Fuses a residual Add (and a bias Add) into the LayerNormalization "
                            "after it as SkipLayerNorm",
                            true,
                            true,
                            {"Add", "LayerNormalization"}};
    return i;
  }

  void run(Graph& g, PassContext& ctx) override {
    using namespace pattern;
    Pat ln = any("ln").where_node(
        [](const Node& n) {
          return is_layer_norm(n) && n.num_inputs() >= 2 && is_plain_add(n.input(0)->producer());
        },
        "a LayerNormalization of an Add");
    const std::string pass = info().name;
    rewrite_all(g, ctx, pass, {{"", ln}}, [&](const std::string&, const Match& m) -> std::string {
      return guarded([&] { return rewrite(g, ctx, pass, m.value("ln")->producer()); });
    });
  }

 private:
  static std::string rewrite(Graph& g, PassContext& ctx, const std::string& pass, Node* ln) {
    Node* add = ln->input(0)->producer();
    for (size_t k = 1; k < ln->num_outputs(); ++k) {
      if (ln->output(k) && (!ln->output(k)->uses().empty() || ln->output(k)->is_graph_output())) {
        return ln->describe() + "'s Mean and InvStdDev outputs are used";
      }
    }
    if (ln->attr_int("stash_type", 1) != 1) return ln->describe() + " has stash_type != 1";
    const Shape& xs = add->output(0)->shape();
    const int64_t axis = ln->attr_int("axis", -1);
    if (axis != -1 && !(xs.has_rank && axis == static_cast<int64_t>(xs.dims.size()) - 1)) {
      return ln->describe() + " normalizes from axis " + std::to_string(axis) +
             ", not over the last axis only";
    }
    for (const Value* v : {add->input(0), add->input(1), add->output(0), ln->output(0)}) {
      if (v->dtype() != kF32) return quoted(v->name()) + " is " + dtype_name(v->dtype());
    }
    for (const Value* v : {add->input(0), add->input(1)}) {
      if (pattern::constant_value(v)) {
        return add->describe() + " adds the constant " + quoted(v->name()) + ", not a residual";
      }
    }
    const int64_t e = feature_count(add->output(0), {});
    if (e < 0)
      return std::string("the last dim of ") + quoted(add->output(0)->name()) + " is unknown";
    for (size_t i = 1; i < 3; ++i) {
      const Value* p = ln->input(i);
      if (!p) continue;
      const Shape& s = p->shape();
      bool ok = s.has_rank && s.dims.size() <= xs.dims.size() && !s.dims.empty() &&
                s.dims.back().known() && s.dims.back().value == e;
      for (size_t d = 0; ok && d + 1 < s.dims.size(); ++d)
        ok = s.dims[d].known() && s.dims[d].value == 1;
      if (!ok) {
        return std::string(i == 1 ? "gamma " : "beta ") + quoted(p->name()) + " of shape " +
               s.str() + " is not one value per feature";
      }
    }
    // A bias Add on one operand, Add(h, bias) with bias a float32 constant of one value per
    // feature used only here, is absorbed: the sum is then (h + bias) + other, as the kernel
    // adds.
    std::vector<Node*> nodes = {add, ln};
    Value* ops[2] = {add->input(0), add->input(1)};
    Value* bias = nullptr;
    int biased = -1;
    for (int k = 0; k < 2 && !bias; ++k) {
      Node* b = ops[k]->producer();
      if (!is_plain_add(b) || ops[k]->uses().size() != 1 || ops[k]->is_graph_output()) continue;
      for (size_t j = 0; j < 2 && !bias; ++j) {
        Value* c = b->input(j);
        Value* h = b->input(1 - j);
        const Tensor* t = pattern::constant_value(c);
        if (t && t->dtype() == kF32 && t->numel() == e && h->dtype() == kF32 &&
            !pattern::constant_value(h) && feature_reason(c, e, add->output(0), "bias").empty()) {
          bias = c;
          biased = k;
          ops[k] = h;
          nodes.insert(nodes.begin(), b);
        }
      }
    }
    // X is the operand of the sum's shape; Skip broadcasts to it.
    Value* x = nullptr;
    Value* skip = nullptr;
    for (int k : {biased < 0 ? 0 : biased, biased < 0 ? 1 : 1 - biased}) {
      if (!x && broadcasts_to(ops[k]->shape(), xs) && broadcasts_to(xs, ops[k]->shape()) &&
          broadcasts_to(ops[1 - k]->shape(), xs)) {
        x = ops[k];
        skip = ops[1 - k];
      }
    }
    if (!x) {
      return std::string("cannot show that one operand of ") + add->describe() + " (" +
             ops[0]->shape().str() + ", " + ops[1]->shape().str() +
             ") has the sum's shape and the other broadcasts to it";
    }
    std::vector<Value*> ins = {x, skip, ln->input(1), ln->input(2), bias};
    while (!ins.back()) ins.pop_back();
    std::vector<Value*> outs = {ln->output(0)};
    Value* sum = add->output(0);
    bool sum_used = sum->is_graph_output();
    for (const Use& u : sum->uses()) sum_used |= u.node != ln;
    if (sum_used) outs.push_back(sum);
    return apply_fusion(g, ctx, pass, nodes, "SkipLayerNorm", kFusedDomain, ins, outs,
                        {{"epsilon", attr_float(ln->attr_float("epsilon", 1e-5f))}});
  }
};

}  // namespace

std::unique_ptr<Pass> make_skip_layer_norm_pass() {
  return std::make_unique<SkipLayerNormFusion>();
}

}  // namespace nnfuse
