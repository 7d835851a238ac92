// The library's compile pipeline: an ONNX model (a file, or its bytes in memory) -> the fused
// graph, with the fusion report. What `nnfuse compile`, `run`, `bench`, `profile` and `verify`
// build on.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "nnfuse/nnfuse.h"
#include "passes/pass.h"

namespace nnfuse {

// What a compile did, besides the graph.
struct CompileResult {
  std::unique_ptr<Graph> graph;
  FusionReport report;        // empty without fusion
  size_t imported_nodes = 0;  // nodes after import (and shape specialization)
  double load_s = 0;          // import and shape specialization
  double fuse_s = 0;          // the pass pipeline, generated kernels built or found included
};

// Loads the model and, with options.fusion, runs the pass pipeline on it. Throws nnfuse::Error:
// kInvalidModel or kUnsupported naming the model, kInvalidArgument naming the switch file and
// rule, or an option.
CompileResult compile_model_file(const std::string& path, const CompileOptions& options = {});
// The same from a serialized model in memory; `label` names it in errors, `base_dir` resolves
// its external data ("" refuses external data).
CompileResult compile_model_bytes(const std::string& bytes, const std::string& label,
                                  const std::string& base_dir, const CompileOptions& options = {});

}  // namespace nnfuse
