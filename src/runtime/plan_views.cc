#include "runtime/plan_views.h"

#include <vector>

#include "kernels/cpu/layout.h"
#include "runtime/plan_fold.h"

namespace nnfuse {

namespace {

// A reshape-like node: its output is its input's data under other dims, read plain. Both
// shapes static: the dims are checked now. Otherwise (a shape known only when the model runs)
// the run computes the output's dims from the inputs as the reference kernel would, and the
// output still shares the input's storage.
std::optional<ViewOf> reshape_view(const Node& n, const PlanValue& in) {
  if (n.is(Op::kDropout)) {
    if ((n.num_outputs() > 1 && n.output(1)) || (n.num_inputs() > 2 && n.input(2))) {
      return std::nullopt;
    }
  }
  const Value* out = n.output(0);
  if (!out || n.num_outputs() < 1) return std::nullopt;
  if (in.dtype != out->dtype() || dtype_size(in.dtype) == 0) return std::nullopt;
  if (in.static_shape && out->shape().fully_known() &&
      checked_numel(in.shape) != checked_numel(out->shape().static_dims())) {
    return std::nullopt;
  }
  return ViewOf{Layout::kPlain, in.layout != Layout::kPlain};
}

// True when perm holds each of 0 .. rank - 1 once.
bool is_permutation_of(const std::vector<int64_t>& perm, size_t rank) {
  if (perm.size() != rank) return false;
  std::vector<char> seen(rank, 0);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) return false;
    seen[static_cast<size_t>(p)] = 1;
  }
  return true;
}

// True when the permutation perm keeps the dims of extent other than 1 in their order.
bool keeps_storage_order(const Dims& shape, const std::vector<int64_t>& perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (shape[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

// A Transpose that moves only dims of extent 1 (the others keep their order) moves no bytes
// either: [L, 1, E] <-> [1, L, E], a batch-first attention's inputs at batch 1. It is a
// reshape of a plain tensor. (The output's static dims, checked against the permuted input's,
// are what the view reads.)
//
// A Transpose between the two storage orders of a tensor of rank 3 to 5 moves no bytes:
// [0, 2, 3, 1] of an NHWC [N, C, H, W] is the plain [N, H, W, C] it is stored as, and
// [0, 3, 1, 2] of a plain [N, H, W, C] is an NHWC [N, C, H, W] (ConvNeXt's permutes around its
// channels-last LayerNorm and MLP); likewise [0, 2, 1] between a 1-D conv's NWC output and the
// [N, T, C] sequence a transformer reads (wav2vec2, Conformer), and the 3-D forms. Such a
// Transpose is a view in the other layout.
std::optional<ViewOf> transpose_view(const Node& n, const PlanValue& in) {
  if (n.num_outputs() != 1 || n.num_inputs() != 1 || !n.output(0)) return std::nullopt;
  const Value* out = n.output(0);
  const size_t r = in.shape.size();
  if (!in.static_shape || !out->shape().fully_known() || in.dtype != out->dtype() || in.constant) {
    return std::nullopt;
  }
  std::vector<int64_t> perm;
  try {
    perm = n.attr_ints("perm", {});
  } catch (const Error&) {
    return std::nullopt;
  }
  if (perm.empty()) {  // the default: the dims reversed
    for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (!is_permutation_of(perm, r)) return std::nullopt;
  Dims want;
  for (int64_t p : perm) want.push_back(in.shape[static_cast<size_t>(p)]);
  if (out->shape().static_dims() != want) return std::nullopt;
  if (in.layout == Layout::kPlain && keeps_storage_order(in.shape, perm)) {
    return ViewOf{Layout::kPlain, false};
  }
  if (!channels_last_rank(r)) return std::nullopt;
  // Channels last ([0, 2, .., r - 1, 1]) and channels back to second ([0, r - 1, 1, .., r - 2]).
  std::vector<int64_t> to_last = {0}, to_second = {0, static_cast<int64_t>(r) - 1};
  for (size_t i = 2; i < r; ++i) to_last.push_back(static_cast<int64_t>(i));
  to_last.push_back(1);
  for (size_t i = 1; i + 1 < r; ++i) to_second.push_back(static_cast<int64_t>(i));
  if (in.layout == Layout::kNHWC && perm == to_last) return ViewOf{Layout::kPlain, false};
  if (in.layout == Layout::kPlain && perm == to_second) return ViewOf{Layout::kNHWC, false};
  return std::nullopt;
}

}  // namespace

std::optional<ViewOf> view_of(const Node& n, const PlanValue* in) {
  if (!in || n.num_inputs() == 0) return std::nullopt;
  if (is_view_op(n)) return reshape_view(n, *in);
  if (n.is(Op::kTranspose)) return transpose_view(n, *in);
  return std::nullopt;
}

}  // namespace nnfuse
