// ConvBatchnormFusionPass: BatchNormalization(Conv(x, W, B)) == Conv(x, W', B') with, per
// output channel c, s = scale[c] / sqrt(var[c] + epsilon), W'[c] = W[c] * s and
// B'[c] = (B[c] - mean[c]) * s + bias[c] (epsilon inside the square root, as ONNX defines).
// BatchNormScaleShiftPass: a BatchNormalization no conv took == ScaleShift(x, s, bias - mean * s)
// (ai.nnfuse), one multiply-add per element with the statistics folded at compile time.
#include <cmath>

#include "passes/fusions/fusions.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Pat;

class ConvBatchnormFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"ConvBatchnormFusionPass",
                            "Folds BatchNormalization into the preceding Conv's weights and bias",
                            true, true};
    return i;
  }

  void run(Graph& g, PassContext& ctx) override {
    using namespace pattern;
    Pat conv = op("Conv", {any("x"), constant("w")}, false).named("conv");
    Pat bn =
        op("BatchNormalization",
           {conv, constant("scale"), constant("shift"), constant("mean"), constant("var")}, false)
            .named("bn");
    const std::string pass = info().name;
    rewrite_all(g, ctx, pass, {{"", bn}}, [&](const std::string&, const Match& m) -> std::string {
      Node* cn = m.node("conv");
      Node* bnn = m.node("bn");
      if (bnn->attr_int("training_mode", 0) != 0)
        return std::string("BatchNormalization is in training mode");
      for (size_t k = 1; k < bnn->num_outputs(); ++k) {
        if (bnn->output(k)) return std::string("BatchNormalization's running statistics are used");
      }
      const Tensor* w = constant_value(m.value("w"));
      const Tensor* b =
          cn->num_inputs() > 2 && cn->input(2) ? constant_value(cn->input(2)) : nullptr;
      if (cn->num_inputs() > 2 && cn->input(2) && !b)
        return std::string("the Conv bias is not a constant");
      if (w->dtype() != DType::kFloat32 || w->rank() < 3)
        return std::string("Conv weights are not float32");
      int64_t cout = w->dim(0);
      const Tensor* p[4] = {constant_value(m.value("scale")), constant_value(m.value("shift")),
                            constant_value(m.value("mean")), constant_value(m.value("var"))};
      for (const Tensor* t : p) {
        if (t->dtype() != DType::kFloat32 || t->numel() != cout) {
          return std::string(
              "BatchNormalization parameters do not have one float32 per output channel");
        }
      }
      if (b && (b->dtype() != DType::kFloat32 || b->numel() != cout)) {
        return std::string("the Conv bias does not have one float32 per output channel");
      }
      double eps = bnn->attr_float("epsilon", 1e-5f);
      Tensor w2 = w->clone();
      Tensor b2(DType::kFloat32, {cout});
      int64_t per = w->numel() / cout;
      for (int64_t c = 0; c < cout; ++c) {
        double s =
            p[0]->data<float>()[c] / std::sqrt(static_cast<double>(p[3]->data<float>()[c]) + eps);
        float* wc = w2.data<float>() + c * per;
        for (int64_t i = 0; i < per; ++i) wc[i] = static_cast<float>(wc[i] * s);
        double bias = b ? b->data<float>()[c] : 0.0;
        b2.data<float>()[c] =
            static_cast<float>((bias - p[2]->data<float>()[c]) * s + p[1]->data<float>()[c]);
      }
      Value* wv = add_constant(g, m.value("w")->name() + "_bn", std::move(w2));
      Value* bv = add_constant(g, bnn->name() + "_bias", std::move(b2));
      std::map<std::string, Attribute> attrs = cn->attrs();
      return apply_fusion(g, ctx, pass, m.nodes(), "Conv", "", {m.value("x"), wv, bv},
                          {bnn->output(0)}, attrs);
    });
  }
};

class BatchNormScaleShift : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"BatchNormScaleShiftPass",
                            "Turns a BatchNormalization no Conv absorbed into a per-channel scale "
                            "and shift, with a Relu, LeakyRelu or Clip after it",
                            true, true};
    return i;
  }

  void run(Graph& g, PassContext& ctx) override {
    using namespace pattern;
    Pat bn = op("BatchNormalization",
                {any("x"), constant("scale"), constant("shift"), constant("mean"), constant("var")},
                false)
                 .named("bn");
    const std::string pass = info().name;
    // The piecewise-linear activations the scale-shift kernels apply in the same pass over the
    // data (a pre-activation block's BN + ReLU is one kernel, not two).
    std::vector<ActivationPattern> pats;
    for (ActivationPattern& p : activation_patterns(bn)) {
      if (p.name == "Relu" || p.name == "LeakyRelu" || p.name == "Clip") pats.push_back(p);
    }
    pats.push_back({"", bn});
    rewrite_all(
        g, ctx, pass, pats, [&](const std::string& act_name, const Match& m) -> std::string {
          Node* n = m.node("bn");
          if (n->attr_int("training_mode", 0) != 0) {
            return std::string("BatchNormalization is in training mode");
          }
          for (size_t k = 1; k < n->num_outputs(); ++k) {
            if (n->output(k))
              return std::string("BatchNormalization's running statistics are used");
          }
          const Value* x = m.value("x");
          if (x->dtype() != DType::kFloat32) return std::string("the input is not float32");
          const Tensor* p[4] = {constant_value(m.value("scale")), constant_value(m.value("shift")),
                                constant_value(m.value("mean")), constant_value(m.value("var"))};
          const int64_t c = p[0]->numel();
          for (const Tensor* t : p) {
            if (t->dtype() != DType::kFloat32 || t->rank() != 1 || t->numel() != c) {
              return std::string("the parameters are not float32 vectors of one length");
            }
          }
          if (!x->shape().has_rank || x->shape().dims.size() < 2 ||
              (x->shape().dims[1].known() && x->shape().dims[1].value != c)) {
            return std::string("the input's dim 1 is not the parameters' length");
          }
          const double eps = n->attr_float("epsilon", 1e-5f);
          Tensor a(DType::kFloat32, {c}), b(DType::kFloat32, {c});
          for (int64_t i = 0; i < c; ++i) {
            const double s = p[0]->data<float>()[i] /
                             std::sqrt(static_cast<double>(p[3]->data<float>()[i]) + eps);
            a.data<float>()[i] = static_cast<float>(s);
            b.data<float>()[i] =
                static_cast<float>(p[1]->data<float>()[i] - p[2]->data<float>()[i] * s);
          }
          std::map<std::string, Attribute> attrs;
          if (!act_name.empty()) {
            std::string why;
            const auto act = activation_from_match(act_name, m, &why);
            if (!act) return why;
            set_activation_attrs(attrs, *act);
          }
          Value* av = add_constant(g, n->name() + "_scale", std::move(a));
          Value* bv = add_constant(g, n->name() + "_shift", std::move(b));
          return apply_fusion(g, ctx, pass, m.nodes(), "ScaleShift", kFusedDomain,
                              {m.value("x"), av, bv}, {m.root()->output(0)}, attrs);
        });
  }
};

}  // namespace

std::unique_ptr<Pass> make_conv_bn_pass() { return std::make_unique<ConvBatchnormFusion>(); }
std::unique_ptr<Pass> make_bn_scale_shift_pass() { return std::make_unique<BatchNormScaleShift>(); }

}  // namespace nnfuse
