// ExecutionPlan: built once per model, as a chain of steps, each testable alone:
//
//   1. fold (plan_fold.h): Constant nodes and views of constants computed once;
//   2. kernels (kernel_selection.h): per node, the first kernel of its op's ordered table that
//      accepts it, with the plain-layout retry, measured where the fastest depends on the
//      machine; each value's layout follows (chains of convolutions stay channels-last, with
//      reorders only where a consumer needs plain tensors);
//   3. views (plan_views.h): reshape-like nodes and layout-swapping Transposes turned into
//      zero-copy views. Node by node together with 2, as each node's input layouts come from
//      the choices before it;
//   4. concat in place (concat_in_place.h): a Concat's inputs written into their parts of its
//      output by their producers;
//   5. buffers (buffer_plan.h): every activation with a static shape a slot in one arena,
//      reusing memory by liveness (and in place for elementwise kernels).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernel.h"
#include "runtime/kernel_selection.h"
#include "runtime/memory_planner.h"
#include "runtime/reference_fallback.h"

namespace nnfuse {

struct PlanOptions {
  int threads = 0;              // 0: all cores
  bool reference_only = false;  // only reference kernels, plain layouts (the oracle)
  bool plan_memory = true;      // arena planning; off: every output allocated at run time
  // Weights held once: the planned graph itself, handed over by a caller that owns it, from
  // which the plan drops each constant its kernels prepacked and never read when running, as
  // soon as its last reader's kernel exists (the graph's values keep their dtype and shape).
  // Null: nothing is released.
  Graph* release_weights_of = nullptr;
  // What a PlanSession does with reference fallbacks (never any with reference_only): warn on
  // stderr, and with strict refuse a compute op on the reference kernel (kUnsupported).
  bool warn_fallbacks = true;
  bool strict = false;
  // Denormal floats flushed to zero while the plan runs (runtime/denormals.h); never for a
  // reference_only plan, the oracle.
  bool flush_denormals = true;
  // Where the measured kernel choices are remembered (runtime/kernel_selection.h); null: the
  // plan keeps its own. Plans that share one agree on every geometry they share, measured once.
  std::shared_ptr<KernelChoices> kernel_choices;
};

// A tensor of the plan: a graph value, or a plain copy of a channels-last value.
struct PlanValue {
  const Value* value = nullptr;  // the graph value (also for reorder copies: the source)
  std::string name;
  DType dtype = DType::kUndefined;
  bool static_shape = false;
  Dims shape;
  Layout layout = Layout::kPlain;
  int alias_of = -1;  // storage shared with this plan value (views, in-place outputs)
  // Concat in place: this value is its part of alias_of's storage (a Concat's output), starting
  // `slice_offset` bytes in; with a slice_pitch, a strided part: rows of its last stored dim
  // slice_pitch elements apart (the producing kernel writes so: Kernel::write_output_rows).
  bool slice = false;
  size_t slice_offset = 0;
  int64_t slice_pitch = 0;
  int64_t buffer = -1;  // index into the memory plan's requests, or -1: allocated at run time
  bool graph_input = false, constant = false, graph_output = false;
  Tensor folded;  // the value of a Constant node, computed once when the plan is built
  // A constant no step reads when the plan runs (every reader prepacked it), whose data was
  // released (PlanOptions::release_weights_of).
  bool unread_constant = false;
};

struct PlanStep {
  enum class Kind { kKernel, kReorder, kView };
  Kind kind = Kind::kKernel;
  const Node* node = nullptr;  // kReorder: the node whose input needed it (nullptr at the end)
  std::string kernel_name;     // factory name, "reorder" or "view"
  // On the reference kernel although the op has a fast kernel (see reference_fallbacks()).
  bool reference_fallback = false;
  // How the measured selection chose the kernel (KernelSelection::note), "" by table order.
  std::string choice;
  std::unique_ptr<Kernel> kernel;
  std::vector<int> inputs;    // plan value ids; -1 for omitted inputs
  std::vector<int> outputs;   // plan value ids; -1 for omitted outputs
  std::vector<int> in_place;  // per output: the input index it may overwrite, or -1
  std::vector<int> frees;     // values whose last reader is this step
  // A Concat in place (kView, no kernel): its inputs' producers wrote its output's storage.
  bool assembled = false;
};

class ExecutionPlan {
 public:
  // Plans `g`, which must outlive the plan (its steps point into it).
  ExecutionPlan(const Graph& g, const PlanOptions& opts);

  const std::vector<PlanStep>& steps() const { return steps_; }
  const std::vector<PlanValue>& values() const { return values_; }
  const std::vector<int>& input_ids() const { return inputs_; }
  const std::vector<int>& output_ids() const { return outputs_; }
  const MemoryPlan& memory() const { return memory_; }
  const std::vector<BufferRequest>& buffers() const { return buffers_; }

  // Kernel launches per inference: kernel and reorder steps (views are free).
  size_t num_kernels() const;
  size_t num_reorders() const;
  // Bytes of the activation arena (the peak of planned activations) and the sum of every
  // activation's size (what a runtime without reuse would hold).
  size_t peak_activation_bytes() const { return memory_.arena_bytes; }
  size_t total_activation_bytes() const { return total_activation_bytes_; }
  // Bytes of the scratch region the kernels share (the largest Kernel::scratch_bytes()).
  size_t scratch_bytes() const { return scratch_bytes_; }
  // Kernel name -> number of steps that use it.
  std::map<std::string, int> kernel_histogram() const;
  // Nodes on the reference kernel although their op has a fast kernel, in graph order.
  const std::vector<ReferenceFallback>& reference_fallbacks() const { return fallbacks_; }
  const PlanOptions& options() const { return opts_; }
  // The threads its kernels are made for and run on (PlanOptions::threads, 0 resolved).
  int num_threads() const { return threads_; }

 private:
  // Step 2 for node `n` reading `in_ids`: its kernel step (and the reorders to plain it needs),
  // made with the factory it returns.
  const KernelFactory& add_kernel_step(const Graph& g, const Node& n, std::vector<int> in_ids,
                                       const KernelSelector& selector);
  int add_value(const Value* v, Layout layout);
  // The plain copy of value `id` (a reorder step, made once), for `reader`.
  int plain_copy(int id, const Node* reader);
  // A step that gives `out` the storage of inputs[0], read in `layout`.
  void add_view(const Node& n, std::vector<int> inputs, const Value* out, Layout layout);

  PlanOptions opts_;
  int threads_ = 1;
  std::vector<PlanValue> values_;
  std::vector<PlanStep> steps_;
  std::map<const Value*, int> id_of_;
  std::map<int, int> plain_copy_of_;
  std::vector<int> inputs_, outputs_;
  std::vector<BufferRequest> buffers_;
  MemoryPlan memory_;
  size_t total_activation_bytes_ = 0;
  size_t scratch_bytes_ = 0;
  std::vector<ReferenceFallback> fallbacks_;
};

}  // namespace nnfuse
