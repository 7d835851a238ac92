// Every op nnfuse runs, with what runs it: its fast kernels (src/kernels/cpu/), whether
// automatic fusion can put it into a generated kernel, and its reference kernel. `nnfuse
// list-ops` prints it; scripts/op_coverage.py writes it as docs/op-coverage.md.
#pragma once

#include <string>
#include <vector>

namespace nnfuse {

struct OpCoverage {
  std::string op;                         // "ReduceL2"
  bool onnx = false;                      // an op of ONNX's default domain
  bool own = false;                       // an op of nnfuse's domain (ai.nnfuse)
  std::vector<std::string> fast_kernels;  // in the order the planner tries them
  bool generated = false;                 // automatic fusion can put it in a generated kernel
  bool view = false;       // planned as a view of its input (Reshape...): no kernel runs
  bool reference = false;  // it has a reference kernel
  bool compute = false;    // a compute op (its traits)
  // What `--strict` refuses on the reference kernel: "always" (a compute op), "float" (when its
  // output is floating point: elementwise ops, reductions, CumSum), or "".
  std::string strict;
  std::string op_class;  // automatic fusion's class ("elementwise", ...)
};

// Every op of nnfuse's op list that has a kernel of any kind or is planned as a view, in the
// list's (alphabetical) order.
std::vector<OpCoverage> op_coverage();

}  // namespace nnfuse
