// Folding: what is known at compile time becomes a constant.
#include <algorithm>
#include <set>

#include "ir/error.h"
#include "kernels/ref/ref_kernels.h"
#include "shape/shape_inference.h"

namespace nnfuse::shape {

bool fold_shape_of(Graph& g, Node* n) {
  if (!n->is(Op::kShape) && !n->is(Op::kSize)) return false;
  Value* x = n->input(0);
  Value* out = n->output(0);
  if (!x || !out || out->is_graph_output() || !x->shape().fully_known()) return false;
  Dims d = x->shape().static_dims();
  Tensor t;
  if (n->is(Op::kSize)) {
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
  return true;
}

bool fold_constant(Graph& g, Node* n) {
  static const std::set<Op> kNondeterministic = {Op::kRandomNormal,     Op::kRandomUniform,
                                                 Op::kRandomNormalLike, Op::kRandomUniformLike,
                                                 Op::kMultinomial,      Op::kBernoulli};
  if (!is_default_domain(n->domain()) || kNondeterministic.count(n->op())) return false;
  for (Value* v : n->inputs()) {
    if (v && !v->is_constant()) return false;
  }
  if (n->num_outputs() == 0) return false;
  for (Value* o : n->outputs()) {
    if (!o || o->is_graph_output()) return false;
  }
  if (!ref_unsupported_reason(*n, g.opset()).empty()) return false;
  // Nothing too large to keep as a constant is computed to find that out: an output the shape
  // inference knows is checked first, and the ops whose output size comes from their input values
  // fold only where it knows it (ConstantOfShape of [2^31] would allocate 8 GiB to be dropped).
  static const std::set<Op> kSizedByValues = {
      Op::kConstantOfShape, Op::kExpand, Op::kTile,    Op::kRange,         Op::kPad,   Op::kResize,
      Op::kUpsample,        Op::kOneHot, Op::kEyeLike, Op::kCenterCropPad, Op::kCol2Im};
  for (const Value* o : n->outputs()) {
    if (o->shape().fully_known()) {
      const Dims d = o->shape().static_dims();
      int64_t numel = 1;
      for (int64_t e : d) {
        if (e != 0 && numel > kMaxFoldedElements / e) return false;
        numel *= e;
      }
      if (numel > kMaxFoldedElements) return false;
    } else if (kSizedByValues.count(n->op())) {
      return false;
    }
  }
  KernelContext ctx{*n, g.opset(), {}, std::vector<Tensor>(n->num_outputs())};
  for (Value* v : n->inputs()) ctx.inputs.push_back(v ? &v->constant() : nullptr);
  try {
    find_ref_kernel(n->op_type())->run(ctx);
  } catch (const Error&) {
    return false;  // left to run time, where the error is reported with its inputs
  }
  for (const Tensor& t : ctx.outputs) {
    if (!t.defined() || t.numel() > kMaxFoldedElements) return false;
  }
  std::vector<Value*> outs = n->outputs();
  const std::vector<Value*> ins = n->inputs();
  g.remove_node(n);
  for (size_t k = 0; k < outs.size(); ++k) outs[k]->set_constant(std::move(ctx.outputs[k]));
  // Inputs nothing else reads go now, not when the sweep ends: a model with quantized weights
  // folds each DequantizeLinear into float weights four times its size, and the 8-bit
  // originals of all of them stayed beside those until the end (25 of a QDQ ResNet-50's 147 MiB
  // peak).
  for (Value* v : ins) g.remove_if_dead(v);
  return true;
}

}  // namespace nnfuse::shape
