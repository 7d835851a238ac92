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
#include "passes/fusions/norm_util.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using norm::feature_tensor;
using pattern::constant_value;

bool fused_matmul(const Node& n) {
  return n.op_type() == "FusedMatMul" && n.domain() == kFusedDomain;
}

Rule matmul_skip_layer_norm() {
  using namespace pattern;
  Pat mm = op_in(kFusedDomain, "FusedMatMul", {any("a")}, false).named("mm");
  auto sln = [](std::vector<Pat> in) { return op_in(kFusedDomain, "SkipLayerNorm", in, false); };
  Pat ln = any_of({sln({mm, any("res")}), sln({any("res"), mm})}).named("ln");
  return {.name = "MatMulSkipLayerNormFusionPass",
          .description = "Fuses a dense layer with the residual Add and LayerNorm after it",
          .ops = {"MatMul", "Add", "Add", "LayerNormalization"},
          .patterns = {{"", ln}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            Node* ln = m.root();
            Node* mm = m.node("mm");
            Value* res = m["res"];
            const Value* sum = ln->num_outputs() > 1 ? ln->output(1) : nullptr;
            if (sum && !sum->uses().empty())
              return "the residual sum is used elsewhere (pre-LayerNorm block)";
            if (sum && sum->is_graph_output()) return "the residual sum is a graph output";
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
            std::optional<Tensor> bias = Tensor(DType::kFloat32, {n});  // zeros
            if (mm->num_inputs() > 2 && mm->input(2)) bias = feature_tensor(mm->input(2), n);
            std::optional<Tensor> gamma = feature_tensor(ln->input(2), n), beta, b2;
            if (ln->num_inputs() > 3 && ln->input(3) && !(beta = feature_tensor(ln->input(3), n))) {
              return "beta is not a constant of [N]";
            }
            if (!bias || !gamma) return "the bias or gamma is not a constant of [N]";
            if (ln->num_inputs() > 4 && ln->input(4)) {
              if (!(b2 = feature_tensor(ln->input(4), n)))
                return "the LayerNorm's bias is not a constant of [N]";
              for (int64_t j = 0; j < n; ++j) bias->data<float>()[j] += b2->data<float>()[j];
            }
            std::vector<Value*> ins = {mm->input(0), mm->input(1),
                                       pattern::add_constant(m.g, mm->name() + "_bias", *bias), res,
                                       pattern::add_constant(m.g, ln->name() + "_gamma", *gamma)};
            if (beta) ins.push_back(pattern::add_constant(m.g, ln->name() + "_beta", *beta));
            const std::string why = m.fuse("FusedMatMulLayerNorm", ins, norm::epsilon_of(*ln));
            m.g.remove_dead_values();
            return why;
          }};
}

// A LayerNormalization read by a FusedMatMul as its A (the first such reader).
Node* matmul_reader(const Value& y) {
  for (const Use& u : y.uses()) {
    if (u.input_index == 0 && fused_matmul(*u.node)) return u.node;
  }
  return nullptr;
}

Rule layer_norm_matmul() {
  using namespace pattern;
  auto ln_of = [](const std::string& domain) {
    return op_in(domain, "LayerNormalization", {any("x"), any("gamma")}, false)
        .named("ln")
        .where([](const Value& y) { return matmul_reader(y) != nullptr; }, "read by a FusedMatMul");
  };
  return {.name = "LayerNormMatMulFusionPass",
          .description = "Fuses a LayerNorm into the dense layer that is its only reader",
          .ops = {"LayerNormalization", "MatMul"},
          .patterns = {{"", any_of({ln_of(""), ln_of(kFusedDomain)})}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            Node* ln = m.node("ln");
            Node* mm = matmul_reader(*ln->output(0));
            Value* y = ln->output(0);
            if (y->uses().size() != 1 || y->is_graph_output()) {
              return "does not pay: the LayerNorm's output is also read elsewhere (a post-LN "
                     "residual), "
                     "so it is written anyway";
            }
            const Shape& xs = m["x"]->shape();
            const int64_t rank = xs.has_rank ? static_cast<int64_t>(xs.dims.size()) : 0;
            if (std::string why = norm::layer_norm_reason(*ln, rank); !why.empty()) return why;
            if (rank < 2) return "the LayerNorm is not over the last axis of a matrix";
            if (m["x"]->dtype() != DType::kFloat32 || !xs.dims.back().known()) {
              return "the LayerNorm's input is not float32 with a known last dim";
            }
            const int64_t k = xs.dims.back().value;
            Value* b = ln->num_inputs() > 2 ? ln->input(2) : nullptr;
            std::optional<Tensor> gamma = feature_tensor(m["gamma"], k),
                                  beta = feature_tensor(b, k);
            if (!gamma || (b && !beta)) return "gamma or beta is not a constant of [K]";
            std::map<std::string, Attribute> attrs = mm->attrs();
            attrs["epsilon"] = attr_float(ln->attr_float("epsilon", 1e-5f));
            std::vector<Value*> ins = {m["x"], mm->input(1),
                                       mm->num_inputs() > 2 ? mm->input(2) : nullptr,
                                       pattern::add_constant(m.g, ln->name() + "_gamma", *gamma)};
            if (beta) ins.push_back(pattern::add_constant(m.g, ln->name() + "_beta", *beta));
            const std::string why =
                m.fuse_nodes({ln, mm}, "FusedLayerNormMatMul", ins, {mm->output(0)}, attrs);
            m.g.remove_dead_values();
            return why;
          }};
}

}  // namespace

std::unique_ptr<Pass> make_layer_norm_matmul_pass() { return make_rule_pass(layer_norm_matmul()); }

std::unique_ptr<Pass> make_matmul_layer_norm_pass() {
  return make_rule_pass(matmul_skip_layer_norm());
}

}  // namespace nnfuse
