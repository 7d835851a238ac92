#include "runtime/buffer_plan.h"

#include <algorithm>

#include "ir/error.h"

namespace nnfuse {

BufferPlan plan_buffers(std::vector<PlanValue>& values, std::vector<PlanStep>& steps,
                        const std::vector<int>& outputs, bool use_arena) {
  BufferPlan bp;
  const int nv = static_cast<int>(values.size());
  const int64_t ns = static_cast<int64_t>(steps.size());
  std::vector<int64_t> produced(nv, -1), last(nv, -1);
  for (int64_t s = 0; s < ns; ++s) {
    for (int id : steps[s].inputs) {
      if (id >= 0) last[id] = s;
    }
    for (int id : steps[s].outputs) {
      if (id >= 0) produced[id] = s;
    }
  }
  for (int id : outputs) last[id] = ns;  // outputs live to the end
  for (int id = 0; id < nv; ++id) {
    if (last[id] < produced[id]) last[id] = produced[id];
    bp.total_activation_bytes +=
        (produced[id] >= 0 && values[id].static_shape && !values[id].slice &&
         (steps[produced[id]].kind != PlanStep::Kind::kView || steps[produced[id]].assembled))
            ? static_cast<size_t>(checked_numel(values[id].shape)) * dtype_size(values[id].dtype)
            : 0;
  }

  // A group (a root and its aliases) can live in the arena when its root is produced by a
  // kernel with a static shape and no member is a graph output. Each group's members, last
  // reader and whether it holds a graph output are kept as in-place aliasing joins groups, so
  // planning stays linear in the number of values.
  std::vector<int> root_of(nv);
  std::vector<std::vector<int>> group(nv);
  std::vector<int64_t> group_last(nv, -1), group_first(nv, -1);
  std::vector<char> group_output(nv, 0), group_sliced(nv, 0);
  for (int id = 0; id < nv; ++id) {
    int r = id;
    while (values[r].alias_of >= 0) r = values[r].alias_of;
    root_of[id] = r;
    group[r].push_back(id);
    group_last[r] = std::max(group_last[r], last[id]);
    group_output[r] |= values[id].graph_output ? 1 : 0;
    group_sliced[r] |= values[id].slice ? 1 : 0;
    // Concat in place: the parts are written before the Concat's step.
    if (produced[id] >= 0 && (group_first[r] < 0 || produced[id] < group_first[r])) {
      group_first[r] = produced[id];
    }
  }
  auto plannable = [&](int r) {
    const PlanValue& v = values[r];
    return use_arena && v.alias_of < 0 && v.static_shape && !v.constant && !v.graph_input &&
           produced[r] >= 0 && dtype_size(v.dtype) != 0 && !group_output[r];
  };

  // In place: an output may take its input's storage when that input's group is plannable,
  // the sizes match, and nothing reads the group after this step.
  for (int64_t s = 0; s < ns && use_arena; ++s) {
    PlanStep& st = steps[s];
    if (st.kind != PlanStep::Kind::kKernel) continue;
    for (size_t k = 0; k < st.outputs.size(); ++k) {
      int out = st.outputs[k], i = st.in_place[k];
      if (out < 0 || i < 0 || static_cast<size_t>(i) >= st.inputs.size() || st.inputs[i] < 0)
        continue;
      int in = st.inputs[i];
      const PlanValue& ov = values[out];
      const PlanValue& iv = values[in];
      // A part of a Concat in place has its place already; storage shared from a part would
      // start at the Concat's.
      if (ov.alias_of >= 0 || iv.slice) continue;
      if (!ov.static_shape || ov.graph_output || !iv.static_shape || ov.dtype != iv.dtype ||
          checked_numel(ov.shape) != checked_numel(iv.shape) || ov.layout != iv.layout) {
        continue;
      }
      const int r = root_of[in];
      if (!plannable(r)) continue;
      bool dead = group_last[r] <= s;
      // The same input feeding this step twice (x * x) is fine; another input aliasing the
      // group is not, since the kernel may read it after writing.
      for (size_t j = 0; j < st.inputs.size(); ++j) {
        if (static_cast<int>(j) != i && st.inputs[j] >= 0 && root_of[st.inputs[j]] == r &&
            st.inputs[j] != in) {
          dead = false;
        }
      }
      if (!dead) continue;
      const int o = root_of[out];
      // A graph output (or a view of one) is not arena storage, which the parts need.
      if (group_sliced[r] && group_output[o]) continue;
      // `out` (a root: it is produced here and has aliased nothing yet) joins r's group with
      // the views of it.
      values[out].alias_of = r;
      for (int m : group[o]) {
        root_of[m] = r;
        group[r].push_back(m);
      }
      group[o].clear();
      group_last[r] = std::max(group_last[r], group_last[o]);
      group_first[r] = std::min(group_first[r], group_first[o]);
      group_output[r] |= group_output[o];
      group_sliced[r] |= group_sliced[o];
    }
  }

  for (int r = 0; r < nv; ++r) {
    if (!plannable(r)) continue;
    BufferRequest req;
    req.bytes = static_cast<size_t>(checked_numel(values[r].shape)) * dtype_size(values[r].dtype);
    req.first = group_first[r];
    req.last = std::max(produced[r], group_last[r]);
    values[r].buffer = static_cast<int64_t>(bp.buffers.size());
    bp.buffers.push_back(req);
  }
  for (int id = 0; id < nv; ++id) {
    if (values[id].slice && values[root_of[id]].buffer < 0) {
      fail(ErrorKind::kInternal, "the Concat in place of '", values[id].name,
           "' has no planned storage");
    }
  }
  bp.memory = plan_memory(bp.buffers);
  check_memory_plan(bp.buffers, bp.memory);
  for (const PlanStep& st : steps) {
    if (st.kernel) bp.scratch_bytes = std::max(bp.scratch_bytes, st.kernel->scratch_bytes());
  }

  for (int id = 0; id < nv; ++id) {
    const PlanValue& v = values[id];
    if (v.constant || v.graph_input || v.graph_output || produced[id] < 0) continue;
    steps[std::min(last[id], ns - 1)].frees.push_back(id);
  }
  return bp;
}

}  // namespace nnfuse
