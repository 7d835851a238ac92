#include "runtime/concat_in_place.h"

#include "kernels/cpu/layout.h"
#include "runtime/plan_fold.h"

namespace nnfuse {

namespace {

// True when `v`, or a value that may become a view of it (through reshape-like ops and
// Transposes), is a graph output: storage the arena does not hold.
bool reaches_graph_output(const Value* v, int depth = 0) {
  if (v->is_graph_output()) return true;
  if (depth > 64) return true;
  for (const Use& u : v->uses()) {
    const Node& n = *u.node;
    if (!is_view_op(n) && !n.is(Op::kTranspose)) continue;
    for (const Value* o : n.outputs()) {
      if (o && reaches_graph_output(o, depth + 1)) return true;
    }
  }
  return false;
}

}  // namespace

void place_concat_inputs(std::vector<PlanValue>& values, std::vector<PlanStep>& steps,
                         const PlanProducers& producers, size_t concat) {
  PlanStep& step = steps[concat];
  const Node& n = *step.node;
  const int out = step.outputs.empty() ? -1 : step.outputs[0];
  if (out < 0) return;
  const PlanValue& ov = values[out];
  const size_t es = dtype_size(ov.dtype);
  if (!ov.static_shape || ov.shape.empty() || es == 0 || reaches_graph_output(ov.value)) return;
  const int64_t rank = static_cast<int64_t>(ov.shape.size());
  int64_t axis = 0;
  try {
    axis = n.attr_int("axis", 0);
  } catch (const Error&) {
    return;
  }
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return;
  const Dims stored = storage_dims(ov.shape, ov.layout);
  const size_t saxis = storage_axis(static_cast<size_t>(axis), ov.shape.size(), ov.layout);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < saxis; ++d) outer *= stored[d];
  for (size_t d = saxis + 1; d < stored.size(); ++d) inner *= stored[d];
  const bool ranges = outer == 1;
  if (!ranges && inner != 1) return;  // parts neither ranges nor rows of the last stored dim
  size_t offset = 0, placed = 0, empty = 0;
  for (int id : step.inputs) {
    if (id < 0) return;
    const PlanValue& iv = values[id];
    if (!iv.static_shape || iv.shape.size() != ov.shape.size()) return;
    const size_t at = offset;
    offset += static_cast<size_t>(iv.shape[static_cast<size_t>(axis)] * inner) * es;
    if (checked_numel(iv.shape) == 0) {
      ++empty;
      continue;
    }
    // One use (a use per input slot): not an input this Concat takes twice either.
    auto p = producers.find(id);
    if (p == producers.end()) continue;
    PlanStep& from = steps[p->second.first];
    if (from.kind != PlanStep::Kind::kKernel || !from.kernel || iv.alias_of >= 0 || iv.constant ||
        iv.graph_input || iv.layout != ov.layout || iv.dtype != ov.dtype ||
        iv.value->is_graph_output() || iv.value->uses().size() != 1) {
      continue;
    }
    const int64_t pitch = ranges ? 0 : stored[saxis];
    if (!ranges && !from.kernel->write_output_rows(p->second.second, pitch)) continue;
    PlanValue& slice = values[id];
    slice.alias_of = out;
    slice.slice = true;
    slice.slice_offset = at;
    slice.slice_pitch = pitch;
    ++placed;
  }
  if (placed > 0 && placed + empty == step.inputs.size()) {
    step.kind = PlanStep::Kind::kView;
    step.assembled = true;
    step.kernel.reset();
    step.kernel_name = "concat in place";
  }
}

}  // namespace nnfuse
