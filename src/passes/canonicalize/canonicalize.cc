#include "passes/canonicalize/canonicalize.h"

#include <algorithm>
#include <set>

#include "ir/error.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

namespace {

// Folding is skipped for results bigger than this: they are cheaper to compute than to store.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 22;

class ConstantFolding : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"ConstantFoldingPass",
                            "Evaluates nodes whose inputs are all constants once, at compile time",
                            false, true};
    return i;
  }
  void run(Graph& g, PassContext&) override {
    static const std::set<std::string> kNondeterministic = {"RandomNormal",     "RandomUniform",
                                                            "RandomNormalLike", "RandomUniformLike",
                                                            "Multinomial",      "Bernoulli"};
    for (Node* n : g.nodes()) {
      if (!is_default_domain(n->domain()) || kNondeterministic.count(n->op_type())) continue;
      bool all_const = true;
      for (Value* v : n->inputs()) all_const &= !v || v->is_constant();
      if (!all_const) continue;
      bool outputs_ok = n->num_outputs() > 0;
      for (Value* o : n->outputs()) outputs_ok &= o && !o->is_graph_output();
      if (!outputs_ok) continue;
      if (!ref_unsupported_reason(*n, g.opset()).empty()) continue;
      KernelContext ctx{*n, g.opset(), {}, std::vector<Tensor>(n->num_outputs())};
      for (Value* v : n->inputs()) ctx.inputs.push_back(v ? &v->constant() : nullptr);
      try {
        find_ref_kernel(n->op_type())->run(ctx);
      } catch (const Error&) {
        continue;  // leave it to run time, where the error is reported with its inputs
      }
      bool small = true;
      for (const Tensor& t : ctx.outputs) small &= t.defined() && t.numel() <= kMaxFoldedElements;
      if (!small) continue;
      std::vector<Value*> outs = n->outputs();
      g.remove_node(n);
      for (size_t k = 0; k < outs.size(); ++k) outs[k]->set_constant(std::move(ctx.outputs[k]));
    }
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

class IdentityElimination : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"IdentityEliminationPass",
                            "Removes Identity, inference-mode Dropout and 1x1 stride-1 pools",
                            false, true};
    return i;
  }
  void run(Graph& g, PassContext&) override {
    for (Node* n : g.nodes()) {
      if (!is_default_domain(n->domain())) continue;
      bool identity = n->op_type() == "Identity";
      if (n->op_type() == "Dropout") {
        // Inference Dropout is the identity unless training_mode is given or the mask is used.
        identity = !(n->num_inputs() > 2 && n->input(2)) &&
                   !(n->num_outputs() > 1 && n->output(1) && !n->output(1)->uses().empty());
        if (n->num_outputs() > 1 && n->output(1) && n->output(1)->is_graph_output()) {
          identity = false;
        }
      }
      if ((n->op_type() == "AveragePool" || n->op_type() == "MaxPool") && n->num_outputs() == 1) {
        identity = is_noop_pool(*n);
      }
      if (!identity || !n->input(0) || !n->output(0)) continue;
      Value* in = n->input(0);
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

class ShapeFolding : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"ShapeFoldingPass",
                            "Replaces Shape and Size of statically shaped values by constants",
                            false, true};
    return i;
  }
  void run(Graph& g, PassContext&) override {
    for (Node* n : g.nodes()) {
      if (!is_default_domain(n->domain()) || (n->op_type() != "Shape" && n->op_type() != "Size"))
        continue;
      Value* x = n->input(0);
      Value* out = n->output(0);
      if (!x || !out || out->is_graph_output() || !x->shape().fully_known()) continue;
      Dims d = x->shape().static_dims();
      Tensor t;
      if (n->op_type() == "Size") {
        t = Tensor::scalar<int64_t>(checked_numel(d));
      } else {
        int64_t r = static_cast<int64_t>(d.size());
        int64_t start = n->attr_int("start", 0), end = n->attr_int("end", r);
        if (start < 0) start += r;
        if (end < 0) end += r;
        start = std::clamp<int64_t>(start, 0, r);
        end = std::clamp<int64_t>(end, start, r);
        t = Tensor::from_vector<int64_t>({end - start}, Dims(d.begin() + start, d.begin() + end));
      }
      g.remove_node(n);
      out->set_constant(std::move(t));
    }
    g.remove_dead_values();
  }
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding_pass() { return std::make_unique<ConstantFolding>(); }
std::unique_ptr<Pass> make_identity_elimination_pass() {
  return std::make_unique<IdentityElimination>();
}
std::unique_ptr<Pass> make_shape_folding_pass() { return std::make_unique<ShapeFolding>(); }

}  // namespace nnfuse
