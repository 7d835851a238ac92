#include "runtime/plan.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "kernels/cpu/layout.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

namespace {

bool is_view_op(const Node& n) {
  static const std::set<std::string> kViews = {"Reshape",   "Flatten",  "Squeeze",
                                               "Unsqueeze", "Identity", "Dropout"};
  return n.domain().empty() && kViews.count(n.op_type()) != 0;
}

}  // namespace

ExecutionPlan::ExecutionPlan(const Graph& g, const PlanOptions& opts) : opts_(opts) {
  set_num_threads(opts.threads);
  if (!opts_.kernel_choices) opts_.kernel_choices = std::make_shared<KernelChoices>();
  const KernelSelector selector(*opts_.kernel_choices, opts.reference_only);
  for (const Value* v : g.values()) {
    if (v->is_constant()) add_value(v, Layout::kPlain);
  }
  for (const Value* v : g.runtime_inputs()) inputs_.push_back(add_value(v, Layout::kPlain));

  // Weights held once (opts.release_weights): a constant whose readers are all planned and
  // none of which reads it at run time (each prepacked it) is dropped from the graph as soon
  // as its last reader's kernel exists, so the original and every packed copy never coexist.
  std::unordered_map<int, size_t> readers_left;
  std::unordered_set<int> read_at_run;
  auto consumed = [&](const std::vector<int>& ids, const Kernel* kernel) {
    for (size_t j = 0; j < ids.size(); ++j) {
      const int id = ids[j];
      if (id < 0 || !values_[id].constant || values_[id].folded.defined()) continue;
      const Value* v = values_[id].value;
      auto it = readers_left.emplace(id, v->uses().size()).first;
      if (!kernel || kernel->reads_input(j)) read_at_run.insert(id);
      if (--it->second == 0 && opts_.release_weights && !read_at_run.count(id) &&
          !v->is_graph_input() && !v->is_graph_output()) {
        // The caller handed over the graph for this (PlanOptions::release_weights).
        const_cast<Value*>(v)->release_constant();
        values_[id].unread_constant = true;
      }
    }
  };

  for (const Node* n : g.nodes()) {
    std::vector<int> in_ids;
    for (const Value* v : n->inputs()) in_ids.push_back(v ? id_of_.at(v) : -1);
    bool constant_inputs = std::all_of(in_ids.begin(), in_ids.end(),
                                       [&](int id) { return id < 0 || values_[id].constant; });
    if ((n->op_type() == "Constant" || (is_view_op(*n) && constant_inputs && !in_ids.empty())) &&
        n->domain().empty() && n->num_outputs() == 1 && n->output(0)) {
      // Constant nodes, and views of constants (exporters share equal weights through
      // Identity), are computed once here instead of once per inference.
      KernelContext ctx{*n, g.opset(), {}, std::vector<Tensor>(1)};
      for (int id : in_ids) {
        ctx.inputs.push_back(id < 0                         ? nullptr
                             : values_[id].folded.defined() ? &values_[id].folded
                                                            : &values_[id].value->constant());
      }
      find_ref_kernel(n->op_type())->run(ctx);
      int id = add_value(n->output(0), Layout::kPlain);
      values_[id].constant = true;
      values_[id].static_shape = true;
      values_[id].shape = ctx.outputs[0].shape();
      values_[id].folded = std::move(ctx.outputs[0]);
      consumed(in_ids, nullptr);
      continue;
    }
    if (!opts.reference_only && (try_view(*n, in_ids) || try_layout_view(*n, in_ids))) {
      consumed(in_ids, nullptr);
      continue;
    }

    std::vector<Layout> layouts;
    for (int id : in_ids) layouts.push_back(id < 0 ? Layout::kPlain : values_[id].layout);
    std::vector<const Tensor*> consts;
    for (int id : in_ids) {
      const PlanValue* pv = id >= 0 ? &values_[id] : nullptr;
      consts.push_back(!pv || !pv->constant   ? nullptr
                       : pv->folded.defined() ? &pv->folded
                                              : &pv->value->constant());
    }
    NodeInfo info{*n, g.opset(n->domain()), layouts, num_threads(), consts, &selector};
    NodeInfo plain_info{*n,
                        g.opset(n->domain()),
                        std::vector<Layout>(layouts.size(), Layout::kPlain),
                        num_threads(),
                        consts,
                        &selector};
    KernelSelection selected = selector.select(info, plain_info);
    const KernelFactory* chosen = selected.factory;
    const bool needs_plain = selected.plain_inputs;
    bool fell_back = false;
    if (!opts.reference_only && std::string(chosen->name) == "ref") {
      // Every fast kernel declined (in either layout): say why, in terms of plain inputs.
      if (auto f = reference_fallback(plain_info)) {
        fallbacks_.push_back(std::move(*f));
        fell_back = true;
      }
    }
    if (needs_plain) {
      for (size_t i = 0; i < in_ids.size(); ++i) {
        if (in_ids[i] >= 0 && values_[in_ids[i]].layout != Layout::kPlain) {
          in_ids[i] = plain_copy(in_ids[i], n);
        }
      }
      info.input_layouts = plain_info.input_layouts;
    }
    PlanStep step;
    step.kind = PlanStep::Kind::kKernel;
    step.node = n;
    step.kernel_name = chosen->name;
    step.reference_fallback = fell_back;
    step.choice = std::move(selected.note);
    step.kernel = std::move(selected.kernel);
    step.inputs = in_ids;
    for (size_t k = 0; k < n->num_outputs(); ++k) {
      const Value* o = n->output(k);
      Layout l = chosen->output_layout ? chosen->output_layout(info, k) : Layout::kPlain;
      step.outputs.push_back(o ? add_value(o, l) : -1);
      step.in_place.push_back(chosen->in_place_input ? chosen->in_place_input(info, k) : -1);
    }
    if (n->op_type() == "Concat" && n->domain().empty() && opts.plan_memory &&
        !opts.reference_only && std::string(chosen->name) == "cpu.concat") {
      place_concat_inputs(step);
    }
    consumed(step.inputs, step.kernel.get());
    if (step.kind == PlanStep::Kind::kKernel) {
      for (size_t k = 0; k < step.outputs.size(); ++k) {
        if (step.outputs[k] >= 0) producer_[step.outputs[k]] = {steps_.size(), k};
      }
    }
    steps_.push_back(std::move(step));
  }

  for (const Value* v : g.outputs()) {
    int id = id_of_.at(v);
    if (values_[id].layout != Layout::kPlain) id = plain_copy(id, nullptr);
    outputs_.push_back(id);
  }
  for (int id : outputs_) values_[id].graph_output = true;
  plan_buffers();
}

int ExecutionPlan::add_value(const Value* v, Layout layout) {
  PlanValue pv;
  pv.value = v;
  pv.name = v->name();
  pv.dtype = v->dtype();
  pv.static_shape = v->shape().fully_known();
  if (pv.static_shape) pv.shape = v->shape().static_dims();
  if (v->is_constant()) {
    pv.constant = true;
    pv.static_shape = true;
    pv.shape = v->constant().shape();
  }
  // Only tensors of rank 3 to 5 have a channels-last form.
  pv.layout = (pv.static_shape && channels_last_rank(pv.shape.size())) ? layout : Layout::kPlain;
  if (layout != Layout::kPlain && pv.layout == Layout::kPlain && !pv.static_shape) {
    pv.layout = layout;  // rank unknown statically: trust the kernel's choice
  }
  pv.graph_input = v->is_graph_input() && !v->is_constant();
  values_.push_back(pv);
  int id = static_cast<int>(values_.size()) - 1;
  id_of_[v] = id;
  return id;
}

int ExecutionPlan::root(int id) const {
  while (values_[id].alias_of >= 0) id = values_[id].alias_of;
  return id;
}

int ExecutionPlan::plain_copy(int id, const Node* reader) {
  auto it = plain_copy_of_.find(id);
  if (it != plain_copy_of_.end()) return it->second;
  PlanValue pv = values_[id];
  pv.name = values_[id].name + ".plain";
  pv.layout = Layout::kPlain;
  pv.alias_of = -1;
  pv.buffer = -1;
  values_.push_back(pv);
  int copy = static_cast<int>(values_.size()) - 1;
  PlanStep step;
  step.kind = PlanStep::Kind::kReorder;
  step.node = reader;
  step.kernel_name = "reorder";
  step.inputs = {id};
  step.outputs = {copy};
  step.in_place = {-1};
  steps_.push_back(std::move(step));
  plain_copy_of_[id] = copy;
  return copy;
}

// A step that gives `out` the storage of inputs[0], read in `layout`.
void ExecutionPlan::add_view(const Node& n, std::vector<int> inputs, const Value* out,
                             Layout layout) {
  const int id = add_value(out, layout);
  values_[id].alias_of = inputs[0];
  PlanStep step;
  step.kind = PlanStep::Kind::kView;
  step.node = &n;
  step.kernel_name = "view";
  step.inputs = std::move(inputs);
  step.outputs = {id};
  step.in_place = {-1};
  steps_.push_back(std::move(step));
}

bool ExecutionPlan::try_view(const Node& n, const std::vector<int>& in_ids) {
  if (!is_view_op(n) || in_ids.empty() || in_ids[0] < 0) return false;
  if (n.op_type() == "Dropout") {
    if ((n.num_outputs() > 1 && n.output(1)) || (n.num_inputs() > 2 && n.input(2))) return false;
  }
  const Value* out = n.output(0);
  if (!out || n.num_outputs() < 1) return false;
  int src = in_ids[0];
  const PlanValue& in = values_[src];
  if (in.dtype != out->dtype() || dtype_size(in.dtype) == 0) return false;
  // Both shapes static: the dims are checked now. Otherwise (a shape known only when the model
  // runs) the run computes the output's dims from the inputs as the reference kernel would,
  // and the output still shares the input's storage.
  if (in.static_shape && out->shape().fully_known() &&
      checked_numel(in.shape) != checked_numel(out->shape().static_dims())) {
    return false;
  }
  if (in.layout != Layout::kPlain) src = plain_copy(src, &n);
  std::vector<int> inputs = in_ids;
  inputs[0] = src;
  add_view(n, std::move(inputs), out, Layout::kPlain);
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
namespace {

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

}  // namespace

bool ExecutionPlan::try_layout_view(const Node& n, const std::vector<int>& in_ids) {
  if (n.op_type() != "Transpose" || !n.domain().empty() || n.num_outputs() != 1 ||
      in_ids.size() != 1 || in_ids[0] < 0 || !n.output(0)) {
    return false;
  }
  const int src = in_ids[0];
  const PlanValue& in = values_[src];
  const Value* out = n.output(0);
  const size_t r = in.shape.size();
  if (!in.static_shape || !out->shape().fully_known() || in.dtype != out->dtype() || in.constant) {
    return false;
  }
  std::vector<int64_t> perm;
  try {
    perm = n.attr_ints("perm", {});
  } catch (const Error&) {
    return false;
  }
  if (perm.empty()) {  // the default: the dims reversed
    for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (!is_permutation_of(perm, r)) return false;
  Dims want;
  for (int64_t p : perm) want.push_back(in.shape[static_cast<size_t>(p)]);
  if (out->shape().static_dims() != want) return false;
  if (in.layout == Layout::kPlain && keeps_storage_order(in.shape, perm)) {
    add_view(n, in_ids, out, Layout::kPlain);
    return true;
  }
  if (!channels_last_rank(r)) return false;
  // Channels last ([0, 2, .., r - 1, 1]) and channels back to second ([0, r - 1, 1, .., r - 2]).
  std::vector<int64_t> to_last = {0}, to_second = {0, static_cast<int64_t>(r) - 1};
  for (size_t i = 2; i < r; ++i) to_last.push_back(static_cast<int64_t>(i));
  to_last.push_back(1);
  for (size_t i = 1; i + 1 < r; ++i) to_second.push_back(static_cast<int64_t>(i));
  Layout layout;
  if (in.layout == Layout::kNHWC && perm == to_last) {
    layout = Layout::kPlain;
  } else if (in.layout == Layout::kPlain && perm == to_second) {
    layout = Layout::kNHWC;
  } else {
    return false;
  }
  add_view(n, in_ids, out, layout);
  return true;
}

namespace {

// True when `v`, or a value that may become a view of it (through reshape-like ops and
// Transposes), is a graph output: storage the arena does not hold.
bool reaches_graph_output(const Value* v, int depth = 0) {
  if (v->is_graph_output()) return true;
  if (depth > 64) return true;
  for (const Use& u : v->uses()) {
    const Node& n = *u.node;
    if (!n.domain().empty() || (!is_view_op(n) && n.op_type() != "Transpose")) continue;
    for (const Value* o : n.outputs()) {
      if (o && reaches_graph_output(o, depth + 1)) return true;
    }
  }
  return false;
}

}  // namespace

// Concat in place. Along an axis whose parts are single ranges of the output's storage (every
// dim stored before it of extent 1: a batch-1 concat of plain tensors along their channels or
// tokens), any kernel writes its part there. Along a channels-last tensor's channels (the last
// stored dim), each part is a row of every pixel, and a kernel that can store its output's
// pixels at the concat's pitch (Kernel::write_output_rows) writes them there. An input so
// placed is copied by no one; with every input placed the Concat runs no kernel at all. Inputs
// qualify when a kernel of this plan produces them for this Concat alone (no other reader, no
// graph output) in the output's layout and type.
void ExecutionPlan::place_concat_inputs(PlanStep& step) {
  const Node& n = *step.node;
  const int out = step.outputs.empty() ? -1 : step.outputs[0];
  if (out < 0) return;
  const PlanValue& ov = values_[out];
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
    const PlanValue& iv = values_[id];
    if (!iv.static_shape || iv.shape.size() != ov.shape.size()) return;
    const size_t at = offset;
    offset += static_cast<size_t>(iv.shape[static_cast<size_t>(axis)] * inner) * es;
    if (checked_numel(iv.shape) == 0) {
      ++empty;
      continue;
    }
    // One use (a use per input slot): not an input this Concat takes twice either.
    auto p = producer_.find(id);
    if (p == producer_.end()) continue;
    PlanStep& from = steps_[p->second.first];
    if (from.kind != PlanStep::Kind::kKernel || !from.kernel || iv.alias_of >= 0 || iv.constant ||
        iv.graph_input || iv.layout != ov.layout || iv.dtype != ov.dtype ||
        iv.value->is_graph_output() || iv.value->uses().size() != 1) {
      continue;
    }
    const int64_t pitch = ranges ? 0 : stored[saxis];
    if (!ranges && !from.kernel->write_output_rows(p->second.second, pitch)) continue;
    PlanValue& slice = values_[id];
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

void ExecutionPlan::plan_buffers() {
  const int nv = static_cast<int>(values_.size());
  const int64_t ns = static_cast<int64_t>(steps_.size());
  std::vector<int64_t> produced(nv, -1), last(nv, -1);
  for (int64_t s = 0; s < ns; ++s) {
    for (int id : steps_[s].inputs) {
      if (id >= 0) last[id] = s;
    }
    for (int id : steps_[s].outputs) {
      if (id >= 0) produced[id] = s;
    }
  }
  for (int id : outputs_) last[id] = ns;  // outputs live to the end
  for (int id = 0; id < nv; ++id) {
    if (last[id] < produced[id]) last[id] = produced[id];
    total_activation_bytes_ +=
        (produced[id] >= 0 && values_[id].static_shape && !values_[id].slice &&
         (steps_[produced[id]].kind != PlanStep::Kind::kView || steps_[produced[id]].assembled))
            ? static_cast<size_t>(checked_numel(values_[id].shape)) * dtype_size(values_[id].dtype)
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
    const int r = root(id);
    root_of[id] = r;
    group[r].push_back(id);
    group_last[r] = std::max(group_last[r], last[id]);
    group_output[r] |= values_[id].graph_output ? 1 : 0;
    group_sliced[r] |= values_[id].slice ? 1 : 0;
    // Concat in place: the parts are written before the Concat's step.
    if (produced[id] >= 0 && (group_first[r] < 0 || produced[id] < group_first[r])) {
      group_first[r] = produced[id];
    }
  }
  auto plannable = [&](int r) {
    const PlanValue& v = values_[r];
    return opts_.plan_memory && v.alias_of < 0 && v.static_shape && !v.constant && !v.graph_input &&
           produced[r] >= 0 && dtype_size(v.dtype) != 0 && !group_output[r];
  };

  // In place: an output may take its input's storage when that input's group is plannable,
  // the sizes match, and nothing reads the group after this step.
  for (int64_t s = 0; s < ns && opts_.plan_memory; ++s) {
    PlanStep& st = steps_[s];
    if (st.kind != PlanStep::Kind::kKernel) continue;
    for (size_t k = 0; k < st.outputs.size(); ++k) {
      int out = st.outputs[k], i = st.in_place[k];
      if (out < 0 || i < 0 || static_cast<size_t>(i) >= st.inputs.size() || st.inputs[i] < 0)
        continue;
      int in = st.inputs[i];
      const PlanValue& ov = values_[out];
      const PlanValue& iv = values_[in];
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
      values_[out].alias_of = r;
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
    req.bytes = static_cast<size_t>(checked_numel(values_[r].shape)) * dtype_size(values_[r].dtype);
    req.first = group_first[r];
    req.last = std::max(produced[r], group_last[r]);
    values_[r].buffer = static_cast<int64_t>(buffers_.size());
    buffers_.push_back(req);
  }
  for (int id = 0; id < nv; ++id) {
    if (values_[id].slice && values_[root_of[id]].buffer < 0) {
      fail(ErrorKind::kInternal, "the Concat in place of '", values_[id].name,
           "' has no planned storage");
    }
  }
  memory_ = plan_memory(buffers_);
  check_memory_plan(buffers_, memory_);
  for (const PlanStep& st : steps_) {
    if (st.kernel) scratch_bytes_ = std::max(scratch_bytes_, st.kernel->scratch_bytes());
  }

  for (int id = 0; id < nv; ++id) {
    const PlanValue& v = values_[id];
    if (v.constant || v.graph_input || v.graph_output || produced[id] < 0) continue;
    steps_[std::min(last[id], ns - 1)].frees.push_back(id);
  }
}

size_t ExecutionPlan::num_kernels() const {
  size_t n = 0;
  for (const PlanStep& s : steps_) n += s.kind != PlanStep::Kind::kView ? 1 : 0;
  return n;
}

size_t ExecutionPlan::num_reorders() const {
  size_t n = 0;
  for (const PlanStep& s : steps_) n += s.kind == PlanStep::Kind::kReorder ? 1 : 0;
  return n;
}

std::map<std::string, int> ExecutionPlan::kernel_histogram() const {
  std::map<std::string, int> h;
  for (const PlanStep& s : steps_) h[s.kernel_name]++;
  return h;
}

}  // namespace nnfuse
