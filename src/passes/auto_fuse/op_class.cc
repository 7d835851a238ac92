#include "passes/auto_fuse/op_class.h"

#include <set>
#include <vector>

namespace nnfuse {

namespace {

bool is_last(int64_t axis, int64_t rank) { return axis == rank - 1 || axis == -1; }

}  // namespace

bool is_last_axis_reduction(const Node& node, int64_t opset) {
  if (ops::op_class(node) != OpClass::kReduction) return false;
  const Value* x = node.input(0);
  if (!x || !x->shape().has_rank) return false;
  const int64_t rank = static_cast<int64_t>(x->shape().dims.size());
  if (rank == 0) return false;
  const Op op = node.op();
  if (op == Op::kSoftmax || op == Op::kLogSoftmax || op == Op::kHardmax) {
    return is_last(node.attr_int("axis", opset >= 13 ? -1 : 1), rank);
  }
  if (op == Op::kArgMax || op == Op::kArgMin) return is_last(node.attr_int("axis", 0), rank);
  // Reduce*: axes from the constant second input (ReduceSum from opset 13, all from 18) or
  // the attribute; empty axes reduce every axis unless noop_with_empty_axes.
  std::vector<int64_t> axes;
  if (const Value* a = node.input(1)) {
    if (!a->is_constant()) return false;
    axes = a->constant().to_int64_vector();
  } else {
    axes = node.attr_ints("axes", {});
  }
  if (axes.empty()) return rank == 1 && node.attr_int("noop_with_empty_axes", 0) == 0;
  std::set<int64_t> distinct;
  for (int64_t a : axes) distinct.insert(a < 0 ? a + rank : a);
  return distinct.size() == 1 && *distinct.begin() == rank - 1;
}

}  // namespace nnfuse
