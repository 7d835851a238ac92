// Reference fallbacks: nodes the planner gives the reference kernel although their op has a
// fast kernel, because every fast kernel declined them, and compute ops that have no fast
// kernel at all. The reference kernels are the oracle,
// not a production path, so a plan lists these (with each fast kernel's reason) for the
// runtime to warn about, `bench --json` to count and `--strict` to refuse.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernel.h"

namespace nnfuse {

struct ReferenceFallback {
  const Node* graph_node = nullptr;
  std::string node;     // the node's name
  std::string op_type;  // e.g. "Conv"
  // "float32[1, 64, ?, ?] -> float32?": the runtime (non-constant) inputs, then the outputs.
  std::string shapes;
  // Each fast kernel of the op, in table order, with why it declined the node.
  std::vector<std::pair<std::string, std::string>> declined;
  // What `--strict` refuses (is_compute_node): Conv, MatMul, pooling, normalization,
  // attention, Resize and the ai.nnfuse ops built on them, where the reference kernel costs the
  // most, and arithmetic on floating-point data (elementwise ops, reductions, CumSum).
  bool compute_op = false;

  // "Conv 'conv3' (float32[1, 64, ?, ?] -> float32?) runs on the reference kernel:
  // onednn.conv: input 'x' has no static shape (...)".
  std::string message() const;
};

// Whether `--strict` refuses the node on a reference kernel (ops::strict_refuses: a compute op
// of its op's traits, ops/def.h: convolutions, dense products, pools, normalizations, attention,
// resampling, recurrences...; or an elementwise op, reduction or CumSum whose output is floating
// point); an If, Loop or Scan is one only when its subgraphs (at any depth) hold one: a
// detector's NMS branch (index bookkeeping) is not.
bool is_compute_node(const Node& n);

// The fallback record for a node about to run on the reference kernel, when its op has fast
// kernels or is a compute op; nullopt for another op whose only kernel is the reference one. `info`
// describes the inputs as the fast kernels last saw them (plain layouts).
std::optional<ReferenceFallback> reference_fallback(const NodeInfo& info);

// Warns on stderr about each fallback, one line per node (at most `limit`, then a count of
// the rest).
void warn_reference_fallbacks(const std::vector<ReferenceFallback>& fallbacks, size_t limit = 20);

// Throws kUnsupported naming every compute op on the reference kernel, if there is one.
void refuse_compute_fallbacks(const std::vector<ReferenceFallback>& fallbacks);

}  // namespace nnfuse
