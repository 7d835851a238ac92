#include "passes/canonicalize/canonicalize.h"

#include <algorithm>
#include <set>

#include "ir/error.h"
#include "kernels/ref/ref_kernels.h"
#include "pattern/pattern.h"
#include "shape/shape_inference.h"

namespace nnfuse {

namespace {

class ConstantFolding : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"ConstantFoldingPass",
                            "Evaluates nodes whose inputs are all constants once, at compile time",
                            false, true};
    return i;
  }
  void run(Graph& g, PassContext&) const override {
    for (Node* n : g.nodes()) shape::fold_constant(g, n);
    g.remove_dead_values();
  }
};

// A 1x1 window with stride 1 and no padding or dilation copies its input (exporters emit it
// for AdaptiveAvgPool2d to the input's own size).
bool is_noop_pool(const Node& n) {
  auto all = [](const std::vector<int64_t>& v, int64_t x) {
    for (int64_t e : v) {
      if (e != x) return false;
    }
    return true;
  };
  std::vector<int64_t> k = n.attr_ints("kernel_shape");
  return !k.empty() && all(k, 1) && all(n.attr_ints("strides"), 1) && all(n.attr_ints("pads"), 0) &&
         all(n.attr_ints("dilations"), 1) && n.attr_int("ceil_mode", 0) == 0 &&
         n.attr_string("auto_pad", "NOTSET") != "SAME_LOWER";
}

// A Pad whose pads are all 0 copies its input, whatever its mode (exporters emit one before
// an AveragePool without padding). The pads are the attribute below opset 11, else input 1.
bool is_noop_pad(const Node& n) {
  if (n.num_outputs() != 1) return false;
  std::vector<int64_t> pads;
  if (n.has_attr("pads")) {
    pads = n.attr_ints("pads");
  } else {
    const Tensor* t = n.num_inputs() > 1 ? pattern::constant_value(n.input(1)) : nullptr;
    if (!t || (t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32)) return false;
    pads = t->to_int64_vector();
  }
  return !pads.empty() && std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
}

// For Mul(x, 1), Mul(1, x) and Div(x, 1) with the 1 a float constant of one element whose rank
// does not exceed x's (so nothing broadcasts): the input that passes through (exactly, for
// every float value), else -1. Exporters write them for alpha = beta = 1 (baddbmm).
int unit_scale_input(const Node& n) {
  if ((!n.is(Op::kMul) && !n.is(Op::kDiv)) || n.num_inputs() != 2) return -1;
  for (int c = n.is(Op::kDiv) ? 1 : 0; c < 2; ++c) {
    const Tensor* t = pattern::constant_value(n.input(static_cast<size_t>(c)));
    const Value* x = n.input(static_cast<size_t>(1 - c));
    if (!t || !x || t->numel() != 1 || !dtype_is_float(t->dtype()) || t->double_at(0) != 1.0 ||
        t->dtype() != x->dtype() || !x->shape().has_rank ||
        t->rank() > static_cast<int64_t>(x->shape().dims.size())) {
      continue;
    }
    return 1 - c;
  }
  return -1;
}

class IdentityElimination : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"IdentityEliminationPass",
                            "Removes Identity, inference-mode Dropout, 1x1 stride-1 pools, "
                            "zero Pads, scalings by 1 and Casts to the input's own type",
                            false, true};
    return i;
  }
  void run(Graph& g, PassContext&) const override {
    for (Node* n : g.nodes()) {
      if (!is_default_domain(n->domain())) continue;
      bool identity = n->is(Op::kIdentity);
      if (n->is(Op::kDropout)) {
        // Dropout is the identity unless it drops: training_mode true (or not a constant)
        // with a ratio that is not a constant 0; or when the mask is used.
        bool training = false;
        if (n->num_inputs() > 2 && n->input(2)) {
          const Tensor* t = pattern::constant_value(n->input(2));
          training = !t || t->numel() != 1 || t->dtype() != DType::kBool || t->data<bool>()[0];
        }
        if (training && n->num_inputs() > 1 && n->input(1)) {
          const Tensor* r = pattern::constant_value(n->input(1));
          if (r && r->numel() == 1 &&
              (r->dtype() == DType::kFloat32 || r->dtype() == DType::kFloat64) &&
              r->double_at(0) == 0.0) {
            training = false;  // a training-mode Dropout of ratio 0 keeps every element
          }
        }
        identity =
            !training && !(n->num_outputs() > 1 && n->output(1) && !n->output(1)->uses().empty());
        if (n->num_outputs() > 1 && n->output(1) && n->output(1)->is_graph_output()) {
          identity = false;
        }
      }
      if ((n->is(Op::kAveragePool) || n->is(Op::kMaxPool)) && n->num_outputs() == 1) {
        identity = is_noop_pool(*n);
      }
      if (n->is(Op::kPad)) identity = is_noop_pad(*n);
      // A Cast to the type its input already has (x.float() on a float tensor).
      if (n->is(Op::kCast) && n->num_inputs() == 1 && n->input(0) && n->has_attr("to")) {
        const DType from = n->input(0)->dtype();
        const Attribute* to = n->find_attr("to");
        identity = from != DType::kUndefined && to && to->kind == Attribute::Kind::kInt &&
                   static_cast<int64_t>(dtype_to_onnx(from)) == to->i;
      }
      int data = 0;  // the input that passes through
      if (n->is(Op::kMul) || n->is(Op::kDiv)) {
        data = unit_scale_input(*n);
        identity = data >= 0;
      }
      if (!identity || !n->input(static_cast<size_t>(data)) || !n->output(0)) continue;
      Value* in = n->input(static_cast<size_t>(data));
      Value* out = n->output(0);
      // A graph output keeps its name: only remove the node when its input is an internal
      // value that the output can stand in for... which would rename it; so keep those.
      if (out->is_graph_output()) continue;
      g.replace_all_uses(out, in);
      g.remove_node(n);
    }
    g.remove_dead_values();
  }
};

// Shape folding and shape inference in one sweep (src/shape/): each Shape or Size of a value
// whose shape became static, and each node whose inputs became constants, folds; every other
// node's outputs are inferred again from what its inputs now say.
class ShapeFolding : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"ShapeFoldingPass",
                            "Folds Shape/Size and constant shape arithmetic, inferring static "
                            "shapes on the way",
                            false, true};
    return i;
  }
  void run(Graph& g, PassContext&) const override { shape::infer_and_fold(g); }
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding_pass() { return std::make_unique<ConstantFolding>(); }
std::unique_ptr<Pass> make_identity_elimination_pass() {
  return std::make_unique<IdentityElimination>();
}
std::unique_ptr<Pass> make_shape_folding_pass() { return std::make_unique<ShapeFolding>(); }

}  // namespace nnfuse
