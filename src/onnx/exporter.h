// ONNX export: Graph -> ModelProto that the ONNX checker accepts. Fused ops keep their
// domain (ai.nnfuse), which is declared in the model's opset imports.
#pragma once

#include <string>

#include "ir/graph.h"

namespace onnx {
class AttributeProto;
class ModelProto;
}  // namespace onnx

namespace nnfuse {

void graph_to_model(const Graph& g, onnx::ModelProto* m);
// One attribute as ONNX writes it (graph attributes are refused).
void attribute_to_proto(const std::string& name, const Attribute& a, onnx::AttributeProto* p);
std::string export_onnx_string(const Graph& g);
// Writes the model; throws naming the path when it cannot be written.
void save_onnx(const Graph& g, const std::string& path);

}  // namespace nnfuse
