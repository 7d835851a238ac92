// Gather(Transpose(x, perm), i, axis) with a scalar index == Transpose(Gather(x, i, perm[axis]),
// perm'): the element is picked before the transpose, which then moves one slice instead of the
// whole tensor, and is left out where perm' keeps the order. Recurrent taggers and encoders
// exported from PyTorch do this to take their last step (`out[:, -1]` after the batch-first
// Transpose of the RNN's output).
#include <numeric>

#include "ir/builder.h"
#include "ops/onnx_ops.h"
#include "passes/canonicalize/canonicalize.h"
#include "pattern/pattern.h"

namespace nnfuse {

namespace {

class TransposeGather : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"TransposeGatherPass",
                            "Gathers one element of a transposed tensor before the Transpose",
                            false, true};
    return i;
  }
  void run(Graph& g, PassContext&) const override {
    for (Node* n : g.nodes()) {
      if (g.contains(n)) rewrite(g, n);
    }
    g.remove_dead_values();
  }

 private:
  static void rewrite(Graph& g, Node* gather) {
    if (!gather->is(Op::kGather) || gather->num_inputs() != 2 || gather->num_outputs() != 1 ||
        !gather->output(0)) {
      return;
    }
    Value* t_out = gather->input(0);
    Node* tr = t_out ? t_out->producer() : nullptr;
    const Tensor* index = pattern::constant_value(gather->input(1));
    if (!tr || !tr->is(Op::kTranspose) || t_out->uses().size() != 1 || t_out->is_graph_output() ||
        !index || index->rank() != 0 || !tr->input(0) || !tr->input(0)->shape().has_rank) {
      return;
    }
    Value* x = tr->input(0);
    const int64_t r = static_cast<int64_t>(x->shape().dims.size());
    std::vector<int64_t> perm = tr->attr_ints("perm");
    if (perm.empty()) {
      perm.resize(static_cast<size_t>(r));
      std::iota(perm.rbegin(), perm.rend(), 0);
    }
    if (static_cast<int64_t>(perm.size()) != r) return;
    int64_t axis = gather->attr_int("axis", 0);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) return;
    const int64_t src_axis = perm[static_cast<size_t>(axis)];
    // The gathered slice's dims in x's order, and the order the output wants them in.
    std::vector<int64_t> rest;
    for (int64_t p : perm) {
      if (p != src_axis) rest.push_back(p < src_axis ? p : p - 1);
    }
    bool identity = true;
    for (size_t k = 0; k < rest.size(); ++k)
      identity = identity && rest[k] == static_cast<int64_t>(k);

    Value* y = gather->output(0);
    const std::string name = gather->name();
    Value* index_v = gather->input(1);
    Shape picked_shape;
    if (x->shape().has_rank) {
      picked_shape.has_rank = true;
      for (int64_t d = 0; d < r; ++d) {
        if (d != src_axis) picked_shape.dims.push_back(x->shape().dims[static_cast<size_t>(d)]);
      }
    }
    // The node of `spec` (a typed builder's) writing `out`, in place of `old` when given.
    auto make = [&](const ops::NodeSpec& spec, Node* old, const std::string& node_name,
                    Value* out) {
      Node* n =
          old ? g.replace_node(old, std::string(op_name(spec.op)), node_name, spec.inputs, {out})
              : g.add_node(std::string(op_name(spec.op)), node_name, spec.inputs, {out});
      for (const auto& [k, a] : spec.attrs) n->set_attr(k, a);
    };
    const ops::NodeSpec pick = ops::Gather{x, index_v, src_axis}.spec();
    if (identity) {
      make(pick, gather, name, y);
    } else {
      Value* picked =
          g.add_value(g.unique_value_name(y->name() + "/picked"), x->dtype(), picked_shape);
      make(pick, gather, name, picked);
      make(ops::Transpose{picked, rest}.spec(), nullptr, g.unique_node_name(tr->name()), y);
    }
    g.remove_node(tr);
    g.ensure_sorted();
  }
};

}  // namespace

std::unique_ptr<Pass> make_transpose_gather_pass() { return std::make_unique<TransposeGather>(); }

}  // namespace nnfuse
