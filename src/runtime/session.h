// Session: a loaded, checked model ready to run. Construction reports every unsupported node
// at once; run() validates the feeds (names, dtypes, shapes) before any kernel runs.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace nnfuse {

struct UnsupportedNode {
  std::string node;
  std::string op_type;
  std::string reason;
};

// Every node no kernel can run, in graph order.
std::vector<UnsupportedNode> find_unsupported(const Graph& g);

// Per-node timing collected by run() when profiling is on.
struct NodeTiming {
  const Node* node;
  double ms;
};

class Session {
 public:
  // Takes the graph; throws kUnsupported listing every unsupported node.
  explicit Session(std::unique_ptr<Graph> graph);

  const Graph& graph() const { return *graph_; }

  // Runs the graph; `feeds` maps input names to tensors. Returns the graph outputs in order.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& feeds,
                          std::vector<NodeTiming>* timings = nullptr) const;

 private:
  void check_feeds(const std::map<std::string, Tensor>& feeds) const;

  std::unique_ptr<Graph> graph_;
  std::vector<Node*> order_;
  // For each node, the values whose last reader it is (freed after it runs).
  std::vector<std::vector<const Value*>> frees_;
};

}  // namespace nnfuse
