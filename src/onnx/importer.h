// ONNX import: ModelProto (parsed by libonnx's protobuf classes) -> Graph.
#pragma once

#include <memory>
#include <string>

#include "ir/graph.h"

namespace nnfuse {

struct ImportOptions {
  bool infer_shapes = true;  // run ONNX shape inference to type every value
};

// Loads a model file; external data is resolved relative to the model's folder. Throws
// nnfuse::Error (kInvalidModel / kUnsupported) naming the file and the problem.
std::unique_ptr<Graph> load_onnx(const std::string& path, const ImportOptions& opts = {});
// Parses a serialized model held in memory; `base_dir` resolves external data ("" refuses it).
std::unique_ptr<Graph> load_onnx_from_string(const std::string& bytes, const std::string& base_dir,
                                             const std::string& label,
                                             const ImportOptions& opts = {});

}  // namespace nnfuse
