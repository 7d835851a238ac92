// PlanSession: a loaded, checked model with its execution plan, ready to run. Construction reports
// every unsupported node at once; run() validates the feeds (names, dtypes, shapes) before
// any kernel runs.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/plan.h"

namespace nnfuse {

struct UnsupportedNode {
  std::string node;
  std::string op_type;
  std::string reason;
};

// Every node no kernel can run, in graph order.
std::vector<UnsupportedNode> find_unsupported(const Graph& g);

// A graph input as the model declares it, to check feeds against.
struct InputDecl {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;
};
std::vector<InputDecl> input_decls(const Graph& g);
// Refuses feeds that do not fit `inputs`: a missing or unknown name, another dtype, another
// rank, a fixed dim of another size, or a symbolic dim given two sizes (kInvalidInput, naming
// the input and both shapes).
void check_feeds(const std::vector<InputDecl>& inputs, const std::map<std::string, Tensor>& feeds);

// Time of one plan step, collected by run() when asked.
struct StepTiming {
  size_t step;
  double start_ms;  // since the start of run()
  double ms;
  int threads = 0;  // the OpenMP thread count the step ran with (the plan's: runtime/threads.h)
};

class PlanSession {
 public:
  // Takes the graph; throws kUnsupported listing every unsupported node. The constants its
  // kernels prepacked are dropped from it: weights are held once.
  explicit PlanSession(std::unique_ptr<Graph> graph, const PlanOptions& opts = {});
  // Shares a graph others keep using (a compiled Model that makes several sessions, or saves
  // itself): its constants stay, beside the kernels' prepacked copies.
  explicit PlanSession(std::shared_ptr<const Graph> graph, const PlanOptions& opts = {});

  const Graph& graph() const { return *graph_; }
  const ExecutionPlan& plan() const { return *plan_; }

  // Runs the graph; `feeds` maps input names to tensors. Returns the graph outputs in order
  // (tensors of their own). Safe to call from several threads at once: each run takes an
  // arena of its own (activations, then the kernels' scratch), kept for later runs.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& feeds,
                          std::vector<StepTiming>* timings = nullptr);
  // Arenas allocated so far: the most runs that were in flight at once.
  size_t num_arenas() const;

 private:
  std::shared_ptr<std::byte[]> acquire_arena();
  void release_arena(std::shared_ptr<std::byte[]> arena);

  // `owned`: the graph when the session owns it (its unread weights are released).
  void init(const PlanOptions& opts, Graph* owned);

  std::shared_ptr<const Graph> graph_;
  std::vector<InputDecl> inputs_;
  std::unique_ptr<ExecutionPlan> plan_;
  size_t scratch_offset_ = 0, arena_bytes_ = 0;
  int threads_ = 1;  // the kernels' thread count, set on every thread that runs the plan
  mutable std::mutex arenas_mu_;
  std::vector<std::shared_ptr<std::byte[]>> free_arenas_;
  size_t num_arenas_ = 0;
};

}  // namespace nnfuse
