// MatMulSkipLayerNormFusionPass: a transformer's output projection, residual and LayerNorm
//   SkipLayerNorm(FusedMatMul(a, W, b), r, gamma, beta, bias2)   (either input order)
//   == FusedMatMulLayerNorm(a, W, b + bias2, r, gamma, beta; epsilon)
// The product runs with the residual as a sum post-op and each row is normalized right after,
// in the same kernel. Only an activation-free FusedMatMul of a constant 2-D weight qualifies,
// with a residual of exactly the product's shape and the normalized sum not needed elsewhere.
//
// LayerNormMatMulFusionPass (CANN's LayerNormMatMul), a pre-LN block's LayerNorm into the
// dense layer that reads it:
//   FusedMatMul(LayerNormalization(x, gamma, beta), W, b, act)
//   == FusedLayerNormMatMul(x, W, b, gamma, beta; epsilon, act)
// It pays only where the dense layer is the LayerNorm's sole reader: then the normalized rows
// never go through the activation arena. In a post-LN block (BERT) the LayerNorm's output is
// also the next residual, so it must be written anyway and the match is declined.
#include "passes/fusions/fusions.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::constant_value;

// A constant per-feature vector of n floats ([n] or [1, ..., n]) as a [n] tensor.
std::optional<Tensor> feature_vector(const Value* v, int64_t n) {
  const Tensor* t = constant_value(v);
  if (!t || t->dtype() != DType::kFloat32 || t->numel() != n || t->rank() < 1) return std::nullopt;
  return t->reshaped({n});
}

class MatMulSkipLayerNormFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"MatMulSkipLayerNormFusionPass",
                            "Fuses a dense layer with the residual Add and LayerNorm after it",
                            true,
                            true,
                            {"MatMul", "Add", "Add", "LayerNormalization"}};
    return i;
  }

  void run(Graph& g, PassContext& ctx) override {
    // A SkipLayerNorm with a FusedMatMul on either input: [matmul, skip layer norm].
    auto select = [](Node* ln) -> std::vector<Node*> {
      if (ln->op_type() != "SkipLayerNorm" || ln->domain() != kFusedDomain) return {};
      for (size_t i = 0; i < 2; ++i) {
        Node* p = ln->input(i)->producer();
        if (p && p->op_type() == "FusedMatMul" && p->domain() == kFusedDomain) return {p, ln};
      }
      return {};
    };
    rewrite_each(g, ctx, info().name, select, [&](const std::vector<Node*>& n) {
      Node* mm = n[0];
      Node* ln = n[1];
      Value* res = ln->input(ln->input(0)->producer() == mm ? 1 : 0);
      return fuse(g, ctx, ln, mm, res);
    });
  }

 private:
  std::string fuse(Graph& g, PassContext& ctx, Node* ln, Node* mm, Value* res) {
    if (ln->num_outputs() > 1 && ln->output(1) && !ln->output(1)->uses().empty()) {
      return "the residual sum is used elsewhere (pre-LayerNorm block)";
    }
    if (ln->num_outputs() > 1 && ln->output(1) && ln->output(1)->is_graph_output()) {
      return "the residual sum is a graph output";
    }
    if (!mm->attr_string("activation", "").empty()) return "the MatMul has an activation";
    const Value* y = mm->output(0);
    const Tensor* w = constant_value(mm->input(1));
    if (!w || w->rank() != 2 || w->dtype() != DType::kFloat32) {
      return "the MatMul's weight is not a constant float32 matrix";
    }
    if (!y->shape().fully_known() || res->shape() != y->shape() ||
        res->dtype() != DType::kFloat32) {
      return "the residual " + res->shape().str() + " is not of the product's shape " +
             y->shape().str();
    }
    const int64_t n = w->dim(1);
    std::optional<Tensor> bias = Tensor(DType::kFloat32, {n});
    for (int64_t j = 0; j < n; ++j) bias->data<float>()[j] = 0.0f;
    if (mm->num_inputs() > 2 && mm->input(2)) bias = feature_vector(mm->input(2), n);
    std::optional<Tensor> gamma = feature_vector(ln->input(2), n);
    std::optional<Tensor> beta;
    if (ln->num_inputs() > 3 && ln->input(3)) {
      beta = feature_vector(ln->input(3), n);
      if (!beta) return std::string("beta is not a constant of [N]");
    }
    if (!bias || !gamma) return std::string("the bias or gamma is not a constant of [N]");
    if (ln->num_inputs() > 4 && ln->input(4)) {
      std::optional<Tensor> b2 = feature_vector(ln->input(4), n);
      if (!b2) return std::string("the LayerNorm's bias is not a constant of [N]");
      Tensor sum = bias->clone();
      for (int64_t j = 0; j < n; ++j) sum.data<float>()[j] += b2->data<float>()[j];
      bias = sum;
    }
    std::map<std::string, Attribute> attrs;
    attrs["epsilon"] = attr_float(ln->attr_float("epsilon", 1e-5f));
    Value* bv = pattern::add_constant(g, mm->name() + "_bias", *bias);
    Value* gv = pattern::add_constant(g, ln->name() + "_gamma", *gamma);
    Value* betav = beta ? pattern::add_constant(g, ln->name() + "_beta", *beta) : nullptr;
    std::vector<Value*> ins = {mm->input(0), mm->input(1), bv, res, gv};
    if (betav) ins.push_back(betav);
    const std::string why = apply_fusion(g, ctx, info().name, {mm, ln}, "FusedMatMulLayerNorm",
                                         kFusedDomain, ins, {ln->output(0)}, attrs);
    g.remove_dead_values();
    return why;
  }
};

class LayerNormMatMulFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"LayerNormMatMulFusionPass",
                            "Fuses a LayerNorm into the dense layer that is its only reader",
                            true,
                            true,
                            {"LayerNormalization", "MatMul"}};
    return i;
  }

  void run(Graph& g, PassContext& ctx) override {
    // A LayerNormalization read by a FusedMatMul as its A: [layer norm, matmul].
    auto select = [](Node* ln) -> std::vector<Node*> {
      if (ln->op_type() != "LayerNormalization") return {};
      for (const Use& u : ln->output(0)->uses()) {
        if (u.input_index == 0 && u.node->op_type() == "FusedMatMul" &&
            u.node->domain() == kFusedDomain) {
          return {ln, u.node};
        }
      }
      return {};
    };
    rewrite_each(g, ctx, info().name, select,
                 [&](const std::vector<Node*>& n) { return fuse(g, ctx, n[0], n[1]); });
  }

 private:
  std::string fuse(Graph& g, PassContext& ctx, Node* ln, Node* mm) {
    Value* y = ln->output(0);
    if (y->uses().size() != 1 || y->is_graph_output()) {
      return std::string(
          "does not pay: the LayerNorm's output is also read elsewhere (a post-LN residual), so "
          "it is written anyway");
    }
    for (size_t k = 1; k < ln->num_outputs(); ++k) {
      if (ln->output(k) && !ln->output(k)->uses().empty()) {
        return std::string("the LayerNorm's mean or inverse deviation is used");
      }
    }
    const Value* x = ln->input(0);
    const int64_t rank = x->shape().has_rank ? static_cast<int64_t>(x->shape().dims.size()) : 0;
    const int64_t axis = ln->attr_int("axis", -1);
    if (rank < 2 || (axis != -1 && axis != rank - 1) || ln->attr_int("stash_type", 1) != 1) {
      return std::string("the LayerNorm is not over the last axis of a matrix");
    }
    if (x->dtype() != DType::kFloat32 || !x->shape().dims.back().known()) {
      return std::string("the LayerNorm's input is not float32 with a known last dim");
    }
    const int64_t k = x->shape().dims.back().value;
    std::optional<Tensor> gamma = feature_vector(ln->input(1), k);
    std::optional<Tensor> beta;
    if (ln->num_inputs() > 2 && ln->input(2)) beta = feature_vector(ln->input(2), k);
    if (!gamma || (ln->num_inputs() > 2 && ln->input(2) && !beta)) {
      return std::string("gamma or beta is not a constant of [K]");
    }
    std::map<std::string, Attribute> attrs = mm->attrs();
    attrs["epsilon"] = attr_float(ln->attr_float("epsilon", 1e-5f));
    Value* gv = pattern::add_constant(g, ln->name() + "_gamma", *gamma);
    Value* bv = beta ? pattern::add_constant(g, ln->name() + "_beta", *beta) : nullptr;
    Value* bias = mm->num_inputs() > 2 ? mm->input(2) : nullptr;
    std::vector<Value*> ins = {ln->input(0), mm->input(1), bias, gv};
    if (bv) ins.push_back(bv);
    const std::string why = apply_fusion(g, ctx, info().name, {ln, mm}, "FusedLayerNormMatMul",
                                         kFusedDomain, ins, {mm->output(0)}, attrs);
    g.remove_dead_values();
    return why;
  }
};

}  // namespace

std::unique_ptr<Pass> make_layer_norm_matmul_pass() {
  return std::make_unique<LayerNormMatMulFusion>();
}

std::unique_ptr<Pass> make_matmul_layer_norm_pass() {
  return std::make_unique<MatMulSkipLayerNormFusion>();
}

}  // namespace nnfuse
