#include "runtime/plan.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/buffer_pool.h"
#include "ir/error.h"
#include "kernels/cpu/layout.h"
#include "runtime/buffer_plan.h"
#include "runtime/concat_in_place.h"
#include "runtime/plan_fold.h"
#include "runtime/plan_views.h"
#include "runtime/threads.h"

namespace nnfuse {

namespace {

// Weights held once (PlanOptions::release_weights_of): a constant whose readers are all planned
// and none of which reads it at run time (each prepacked it) is dropped from the graph as soon
// as its last reader's kernel exists, so the original and every packed copy never coexist.
class WeightRelease {
 public:
  WeightRelease(std::vector<PlanValue>& values, Graph* graph) : values_(values), graph_(graph) {}

  // A step (or a fold or a view, `kernel` null: they read it) was planned that reads `ids`;
  // `kernel` says which of them it reads when it runs.
  void consumed(const std::vector<int>& ids, const Kernel* kernel) {
    for (size_t j = 0; j < ids.size(); ++j) {
      const int id = ids[j];
      if (id < 0 || !values_[id].constant || values_[id].folded.defined()) continue;
      const Value* v = values_[id].value;
      auto it = readers_left_.emplace(id, v->uses().size()).first;
      if (!kernel || kernel->reads_input(j)) read_at_run_.insert(id);
      if (--it->second == 0 && graph_ && !read_at_run_.count(id) && !v->is_graph_input() &&
          !v->is_graph_output()) {
        graph_->find_value(v->name())->release_constant();
        values_[id].unread_constant = true;
      }
    }
  }

 private:
  std::vector<PlanValue>& values_;
  Graph* graph_;  // the planned graph, handed over; null: nothing is released
  std::unordered_map<int, size_t> readers_left_;
  std::unordered_set<int> read_at_run_;
};

}  // namespace

ExecutionPlan::ExecutionPlan(const Graph& g, const PlanOptions& opts)
    : opts_(opts), threads_(plan_threads(opts.threads)) {
  if (opts.release_weights_of && opts.release_weights_of != &g) {
    fail(ErrorKind::kInvalidArgument, "PlanOptions::release_weights_of is not the planned graph");
  }
  opts_.release_weights_of = nullptr;  // handed over for planning only
  if (!opts_.kernel_choices) opts_.kernel_choices = std::make_shared<KernelChoices>();
  // What planning lets go of is weights the kernels prepacked (ir/buffer_pool.h).
  const ScopedPoolBypass bypass;
  // The kernels are made, and measured, with the plan's thread count (runtime/threads.h).
  const ScopedThreads threads(threads_);
  const KernelSelector selector(*opts_.kernel_choices, opts_.reference_only);
  WeightRelease release(values_, opts.release_weights_of);
  for (const Value* v : g.values()) {
    if (v->is_constant()) add_value(v, Layout::kPlain);
  }
  for (const Value* v : g.runtime_inputs()) inputs_.push_back(add_value(v, Layout::kPlain));

  const FoldedValues folded = fold_constants(g);  // 1
  PlanProducers producers;
  std::vector<size_t> concats;
  for (const Node* n : g.nodes()) {
    std::vector<int> in_ids;
    for (const Value* v : n->inputs()) in_ids.push_back(v ? id_of_.at(v) : -1);
    if (auto f = n->num_outputs() == 1 ? folded.find(n->output(0)) : folded.end();
        f != folded.end()) {
      const int id = add_value(f->first, Layout::kPlain);
      values_[id].constant = true;
      values_[id].static_shape = true;
      values_[id].shape = f->second.shape();
      values_[id].folded = f->second;
      release.consumed(in_ids, nullptr);
      continue;
    }
    if (!opts_.reference_only) {  // 3
      const PlanValue* in = !in_ids.empty() && in_ids[0] >= 0 ? &values_[in_ids[0]] : nullptr;
      if (const std::optional<ViewOf> view = view_of(*n, in)) {
        std::vector<int> inputs = in_ids;
        if (view->plain_input) inputs[0] = plain_copy(inputs[0], n);
        add_view(*n, std::move(inputs), n->output(0), view->layout);
        release.consumed(in_ids, nullptr);
        continue;
      }
    }
    const size_t at = steps_.size();
    const KernelFactory& chosen = add_kernel_step(g, *n, std::move(in_ids), selector);  // 2
    PlanStep& step = steps_.back();
    release.consumed(step.inputs, step.kernel.get());
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      if (step.outputs[k] >= 0) producers[step.outputs[k]] = {at, k};
    }
    if (chosen.assembles_in_place && opts_.plan_memory && !opts_.reference_only) {
      concats.push_back(at);
    }
  }

  for (const Value* v : g.outputs()) {
    int id = id_of_.at(v);
    if (values_[id].layout != Layout::kPlain) id = plain_copy(id, nullptr);
    outputs_.push_back(id);
  }
  for (int id : outputs_) values_[id].graph_output = true;
  for (size_t s : concats) place_concat_inputs(values_, steps_, producers, s);  // 4
  BufferPlan b = plan_buffers(values_, steps_, outputs_, opts_.plan_memory);    // 5
  buffers_ = std::move(b.buffers);
  memory_ = std::move(b.memory);
  total_activation_bytes_ = b.total_activation_bytes;
  scratch_bytes_ = b.scratch_bytes;
}

const KernelFactory& ExecutionPlan::add_kernel_step(const Graph& g, const Node& n,
                                                    std::vector<int> in_ids,
                                                    const KernelSelector& selector) {
  std::vector<Layout> layouts;
  for (int id : in_ids) layouts.push_back(id < 0 ? Layout::kPlain : values_[id].layout);
  std::vector<const Tensor*> consts;
  for (int id : in_ids) {
    const PlanValue* pv = id >= 0 ? &values_[id] : nullptr;
    consts.push_back(!pv || !pv->constant   ? nullptr
                     : pv->folded.defined() ? &pv->folded
                                            : &pv->value->constant());
  }
  NodeInfo info{n, g.opset(n.domain()), layouts, threads_, consts, &selector};
  NodeInfo plain_info = info;
  plain_info.input_layouts.assign(layouts.size(), Layout::kPlain);
  KernelSelection selected = selector.select(info, plain_info);
  const KernelFactory* chosen = selected.factory;
  bool fell_back = false;
  if (!opts_.reference_only && std::string(chosen->name) == "ref") {
    // Every fast kernel declined (in either layout): say why, in terms of plain inputs.
    if (auto f = reference_fallback(plain_info)) {
      fallbacks_.push_back(std::move(*f));
      fell_back = true;
    }
  }
  if (!opts_.reference_only && selected.kernel) {
    // A control-flow kernel's subgraph nodes on their reference kernels, named under it.
    for (const BodyNode& b : selected.kernel->reference_body_nodes()) {
      const NodeInfo body_info{*b.node, b.opset,
                               std::vector<Layout>(b.node->num_inputs(), Layout::kPlain), threads_};
      if (auto f = reference_fallback(body_info)) {
        f->node = n.name() + (f->node.rfind('/', 0) == 0 ? "" : "/") + f->node;
        fallbacks_.push_back(std::move(*f));
      }
    }
  }
  if (selected.plain_inputs) {
    for (size_t i = 0; i < in_ids.size(); ++i) {
      if (in_ids[i] >= 0 && values_[in_ids[i]].layout != Layout::kPlain) {
        in_ids[i] = plain_copy(in_ids[i], &n);
      }
    }
    info.input_layouts = plain_info.input_layouts;
  }
  PlanStep step;
  step.kind = PlanStep::Kind::kKernel;
  step.node = &n;
  step.kernel_name = chosen->name;
  step.reference_fallback = fell_back;
  step.choice = std::move(selected.note);
  step.kernel = std::move(selected.kernel);
  step.inputs = std::move(in_ids);
  for (size_t k = 0; k < n.num_outputs(); ++k) {
    const Value* o = n.output(k);
    Layout l = chosen->output_layout ? chosen->output_layout(info, k) : Layout::kPlain;
    step.outputs.push_back(o ? add_value(o, l) : -1);
    step.in_place.push_back(chosen->in_place_input ? chosen->in_place_input(info, k) : -1);
  }
  steps_.push_back(std::move(step));
  return *chosen;
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
