// ONNX export: Graph -> ModelProto that the ONNX checker accepts. Fused ops keep their
// domain (ai.nnfuse), which is declared in the model's opset imports.
#pragma once

#include <string>

#include "ir/graph.h"

namespace onnx {
class ModelProto;
}

namespace nnfuse {

void graph_to_model(const Graph& g, onnx::ModelProto* m);
std::string export_onnx_string(const Graph& g);
// Writes the model; throws naming the path when it cannot be written.
void save_onnx(const Graph& g, const std::string& path);

}  // namespace nnfuse
