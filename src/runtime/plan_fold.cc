#include "runtime/plan_fold.h"

#include <set>
#include <vector>

#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

bool is_view_op(Op op) {
  static const std::set<Op> kViews = {Op::kReshape,   Op::kFlatten,  Op::kSqueeze,
                                      Op::kUnsqueeze, Op::kIdentity, Op::kDropout};
  return kViews.count(op) != 0;
}

bool is_view_op(const Node& n) { return is_view_op(n.op()); }

FoldedValues fold_constants(const Graph& g) {
  FoldedValues folded;
  for (const Node* n : g.nodes()) {
    if (!n->domain().empty() || n->num_outputs() != 1 || !n->output(0)) continue;
    // Omitted inputs count as constants.
    bool constant_inputs = true;
    for (const Value* v : n->inputs()) {
      constant_inputs = constant_inputs && (!v || v->is_constant() || folded.count(v) != 0);
    }
    if (!n->is(Op::kConstant) && !(is_view_op(*n) && constant_inputs && n->num_inputs() > 0)) {
      continue;
    }
    KernelContext ctx{*n, g.opset(), {}, std::vector<Tensor>(1)};
    for (const Value* v : n->inputs()) {
      auto it = v ? folded.find(v) : folded.end();
      ctx.inputs.push_back(!v ? nullptr : it != folded.end() ? &it->second : &v->constant());
    }
    find_ref_kernel(n->op_type())->run(ctx);
    folded[n->output(0)] = std::move(ctx.outputs[0]);
  }
  return folded;
}

}  // namespace nnfuse
