// Fused against unfused: how far one output departs from the other, and each node of a graph
// run alone on the other graph's values of its inputs.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/session.h"

namespace nnfuse {

struct OutputDiff {
  double max_abs = 0;   // largest |got - want| (infinite where only one side is NaN)
  double scale = 0;     // largest |want|
  double rel = 0;       // max_abs / scale (max_abs when scale is 0)
  std::string problem;  // a shape or dtype mismatch, else ""
};

OutputDiff compare_outputs(const Tensor& got, const Tensor& want);

// Whether the graph quantizes a computed value (QuantizeLinear of a value that is not a
// constant, DynamicQuantizeLinear). Its outputs then lie on a grid: a last-bit float difference
// before a quantization moves a value across a rounding step, and a deep graph compounds such
// steps, so two exact evaluation orders can differ end to end by more than a float tolerance.
bool quantizes_at_run_time(const Graph& g);

// The quantization step of a node's output `i` when the node rounds it to a grid: 1 for the
// integer outputs of QuantizeLinear, DynamicQuantizeLinear, QLinearConv and QLinearMatMul (one
// unit of the grid), the scale of a QuantizeDequantize epilogue on a float output, else 0.
double output_step(const Node& n, size_t i);

struct NodeCheckOptions {
  double rtol = 1e-4;      // relative to the output's largest magnitude
  double atol = 0;         // below this absolute difference an output agrees
  bool all_nodes = false;  // every node, not only the fused ones
};

struct NodeCheck {
  size_t checked = 0, skipped = 0;
  size_t within_step = 0;  // outputs of quantizing nodes within one step, not within rtol
  const Node* worst = nullptr;
  double worst_rel = 0;
  std::string worst_problem;  // a shape or dtype mismatch of the worst node, else ""
  bool pass = true;
};

// Runs each fused node of `g` (each node with `all_nodes`) alone on `values` (the other graph's
// tensors by name) and compares its outputs with the values of the same names there: within
// rtol (or atol), or, for an output the node rounds to a grid (output_step), within one step
// per element. An output `values` lacks (a fused node's new intermediate) is kept and fed to
// the nodes that read it, whose outputs are compared; a node with an input neither gives is
// skipped and counted.
NodeCheck check_nodes(const Graph& g, const std::map<std::string, Tensor>& values,
                      const PlanOptions& opts, const NodeCheckOptions& check);

}  // namespace nnfuse
