// QKVProjectionFusionPass: the Q, K and V projections of one attention, three FusedMatMul (or
// MatMul) of the same input with constant weights, become one FusedMatMul with the weights (and
// biases) concatenated, feeding the attention (AttentionFusionPass, attention.cc) in packed
// form: MultiHeadAttention(qkv; qkv_packed = 1).
#include <algorithm>

#include "ops/attention.h"
#include "ops/dense.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::constant_value;

// A projection of x for one of Q, K, V: MatMul(x, w) or an activation-free FusedMatMul(x, w[, b])
// with w a float32 [K, N] constant and b a [N] constant, its output read by the attention only.
pattern::Pat projection(const pattern::Pat& x, const std::string& i) {
  using namespace pattern;
  Pat w = constant("w" + i).where(
      [](const Value& v) {
        const Tensor* t = constant_value(&v);
        return t->rank() == 2 && t->dtype() == DType::kFloat32;
      },
      "a float32 matrix");
  auto bias_ok = [](const Node& n) {
    if (!n.attr_string("activation", "").empty()) return false;
    if (n.num_inputs() < 3 || !n.input(2)) return true;
    const Tensor* w = constant_value(n.input(1));
    const Tensor* b = constant_value(n.input(2));
    return w && w->rank() == 2 && b && b->rank() == 1 && b->dim(0) == w->dim(1);
  };
  Pat fused = op_in(kFusedDomain, "FusedMatMul", {x, w}, false)
                  .where_node(bias_ok, "no activation, a constant [N] bias")
                  .named("p" + i);
  return any_of({fused, op("MatMul", {x, w}).named("p" + i)})
      .where([](const Value& v) { return v.uses().size() == 1 && !v.is_graph_output(); },
             "read by the attention only");
}

// The biases side by side ([N] zeros for a projection without one).
Tensor concat_bias(const std::vector<Node*>& ps) {
  std::vector<const Tensor*> parts;
  int64_t n = 0;
  for (const Node* p : ps) {
    n += constant_value(p->input(1))->dim(1);
    parts.push_back(p->num_inputs() > 2 && p->input(2) ? constant_value(p->input(2)) : nullptr);
  }
  Tensor r(DType::kFloat32, {n});
  float* d = r.data<float>();
  for (size_t i = 0; i < ps.size(); ++i) {
    const int64_t c = constant_value(ps[i]->input(1))->dim(1);
    for (int64_t j = 0; j < c; ++j) *d++ = parts[i] ? parts[i]->data<float>()[j] : 0.0f;
  }
  return r;
}

bool has_bias(const std::vector<Node*>& ps) {
  return std::any_of(ps.begin(), ps.end(),
                     [](const Node* p) { return p->num_inputs() > 2 && p->input(2); });
}

// "" when the three projections read inputs of one width and are distinct.
std::string same_projections(const RuleMatch& m) {
  const int64_t k = m.constant("w0")->dim(0);
  const Node* mha = m.root();
  if (m.constant("w1")->dim(0) != k || m.constant("w2")->dim(0) != k ||
      mha->input(0) == mha->input(1) || mha->input(1) == mha->input(2)) {
    return "the projections do not share their shape";
  }
  return "";
}

Rule qkv_projection() {
  using namespace pattern;
  Pat x = any("x");
  Pat mha = op_in(kFusedDomain, "MultiHeadAttention",
                  {projection(x, "0"), projection(x, "1"), projection(x, "2")}, false)
                .where_node([](const Node& n) { return n.attr_int("qkv_packed", 0) == 0; },
                            "Q, K and V given apart");
  return {.name = "QKVProjectionFusionPass",
          .description =
              "Fuses an attention's Q, K and V projections of one input into one MatMul "
              "with concatenated weights",
          .ops = {"MatMul", "MatMul", "MatMul"},
          .patterns = {{"", mha}},
          .guards = {same_projections},
          .rewrite = [](const RuleMatch& m) -> std::string {
            // One projection in place of three, its output the attention's packed input.
            const std::vector<Node*> proj = {m.node("p0"), m.node("p1"), m.node("p2")};
            const Tensor w = concat_columns({m.constant("w0"), m.constant("w1"), m.constant("w2")});
            const std::string stem = proj[0]->name() + "_qkv";
            Shape shape = m["x"]->shape();
            if (shape.has_rank && !shape.dims.empty()) shape.dims.back() = Dim{w.dim(1), ""};
            const ops::FusedMatMul packed{
                m["x"],
                m.add_constant(proj[0]->input(1)->name() + "_qkv", w),
                has_bias(proj) ? m.add_constant(stem + "_bias", concat_bias(proj)) : nullptr,
                {}};
            Value* qkv = m.op(packed.spec(), stem, DType::kFloat32, shape, proj);
            ops::MultiHeadAttention mha = ops::MultiHeadAttention::of(*m.root());
            mha.q = qkv;
            mha.k = mha.v = nullptr;
            mha.qkv_packed = true;
            return m.rewire(m.root(), mha.spec(), qkv->producer(), proj);
          }};
}

}  // namespace

std::unique_ptr<Pass> make_qkv_projection_pass() { return make_rule_pass(qkv_projection()); }

}  // namespace nnfuse
