// QKVProjectionFusionPass: the Q, K and V projections of one attention, three FusedMatMul (or
// MatMul) of the same input with constant weights, become one FusedMatMul with the weights (and
// biases) concatenated, feeding the attention (AttentionFusionPass, attention.cc) in packed
// form: MultiHeadAttention(qkv; qkv_packed = 1).
#include "passes/fusions/fusions.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::constant_value;

struct Projection {
  Node* node = nullptr;
  const Tensor* w = nullptr;
  const Tensor* b = nullptr;  // nullptr: no bias
};

std::optional<Projection> projection(Value* v, Value* input) {
  Node* n = v ? v->producer() : nullptr;
  if (!n || v->uses().size() != 1 || v->is_graph_output()) return std::nullopt;
  const bool fused = n->op_type() == "FusedMatMul" && n->domain() == kFusedDomain;
  const bool plain = n->op_type() == "MatMul" && n->domain().empty();
  if (!fused && !plain) return std::nullopt;
  if (n->input(0) != input) return std::nullopt;
  if (fused && !n->attr_string("activation", "").empty()) return std::nullopt;
  Projection p{n, constant_value(n->input(1)), nullptr};
  if (!p.w || p.w->rank() != 2 || p.w->dtype() != DType::kFloat32) return std::nullopt;
  if (fused && n->num_inputs() > 2 && n->input(2)) {
    p.b = constant_value(n->input(2));
    if (!p.b || p.b->rank() != 1 || p.b->dim(0) != p.w->dim(1)) return std::nullopt;
  }
  return p;
}

Tensor concat_columns(const std::vector<const Tensor*>& parts) {
  const int64_t rows = parts[0]->dim(0);
  int64_t cols = 0;
  for (const Tensor* t : parts) cols += t->dim(1);
  Tensor r(DType::kFloat32, {rows, cols});
  float* d = r.data<float>();
  int64_t at = 0;
  for (const Tensor* t : parts) {
    const float* s = t->data<float>();
    const int64_t c = t->dim(1);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < c; ++j) d[i * cols + at + j] = s[i * c + j];
    }
    at += c;
  }
  return r;
}

Tensor concat_bias(const std::vector<Projection>& ps) {
  int64_t n = 0;
  for (const Projection& p : ps) n += p.w->dim(1);
  Tensor r(DType::kFloat32, {n});
  float* d = r.data<float>();
  for (const Projection& p : ps) {
    const int64_t c = p.w->dim(1);
    for (int64_t j = 0; j < c; ++j) *d++ = p.b ? p.b->data<float>()[j] : 0.0f;
  }
  return r;
}

class QKVProjectionFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"QKVProjectionFusionPass",
                            "Fuses an attention's Q, K and V projections of one input into one "
                            "MatMul with concatenated weights",
                            true,
                            true,
                            {"MatMul", "MatMul", "MatMul"}};
    return i;
  }

  void run(Graph& g, PassContext& ctx) override {
    const std::string pass = info().name;
    for (Node* mha : g.nodes()) {
      if (mha->op_type() != "MultiHeadAttention" || mha->domain() != kFusedDomain ||
          mha->attr_int("qkv_packed", 0) != 0 || mha->num_inputs() < 3) {
        continue;
      }
      Node* qn = mha->input(0)->producer();
      if (!qn) continue;
      Value* x = qn->input(0);
      std::vector<Projection> ps;
      for (size_t i = 0; i < 3; ++i) {
        auto p = projection(mha->input(i), x);
        if (p) ps.push_back(*p);
      }
      if (ps.size() != 3) continue;  // not three projections of one input: no match
      ctx.matched(pass);
      std::vector<Node*> proj = {ps[0].node, ps[1].node, ps[2].node};
      if (ps[0].w->dim(0) != ps[1].w->dim(0) || ps[0].w->dim(0) != ps[2].w->dim(0) ||
          mha->input(0) == mha->input(1) || mha->input(1) == mha->input(2)) {
        ctx.rejected(pass, original_names(proj), "the projections do not share their shape");
        continue;
      }
      const Tensor w = concat_columns({ps[0].w, ps[1].w, ps[2].w});
      const Tensor b = concat_bias(ps);
      Value* wv = pattern::add_constant(g, ps[0].node->input(1)->name() + "_qkv", w);
      Value* bv = pattern::add_constant(g, ps[0].node->name() + "_qkv_bias", b);
      Shape shape = mha->input(0)->shape();
      if (shape.has_rank && !shape.dims.empty()) {
        shape.dims.back() = Dim{w.dim(1), ""};
      }
      Value* qkv =
          g.add_value(g.unique_value_name(ps[0].node->name() + "_qkv"), DType::kFloat32, shape);
      Node* fused = g.add_node("FusedMatMul", g.unique_node_name(ps[0].node->name() + "_qkv"),
                               {x, wv, bv}, {qkv}, kFusedDomain);
      fused->set_provenance(original_names(proj), pass);
      for (size_t i = 0; i < 3; ++i) mha->set_input(i, i == 0 ? qkv : nullptr);
      mha->set_attr("qkv_packed", attr_int(1));
      for (Node* n : proj) g.remove_node(n);
      g.remove_dead_values();
      g.topological_sort();
      ctx.applied(pass);
      ctx.report.fused.push_back({fused->name(), pass, fused->fused_from(), 0, 2});
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_qkv_projection_pass() { return std::make_unique<QKVProjectionFusion>(); }

}  // namespace nnfuse
