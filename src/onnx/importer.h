// ONNX import: ModelProto (parsed by libonnx's protobuf classes) -> Graph.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nnfuse {

struct ImportOptions {
  bool infer_shapes = true;  // run ONNX shape inference to type every value
  // Input dims to use instead of the model's (symbolic or fixed), same rank; shapes of the
  // other values are then inferred anew. An unknown input name or another rank is an error.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

// Loads a model file; external data is resolved relative to the model's folder. Throws
// nnfuse::Error (kInvalidModel / kUnsupported) naming the file and the problem.
std::unique_ptr<Graph> load_onnx(const std::string& path, const ImportOptions& opts = {});
// Parses a serialized model held in memory; `base_dir` resolves external data ("" refuses it).
std::unique_ptr<Graph> load_onnx_from_string(const std::string& bytes, const std::string& base_dir,
                                             const std::string& label,
                                             const ImportOptions& opts = {});

}  // namespace nnfuse
