// ONNX export: Graph -> ModelProto that the ONNX checker accepts. Fused ops keep their
// domain (ai.nnfuse), which is declared in the model's opset imports.
#pragma once

#include <string>

#include "ir/graph.h"

namespace onnx {
class AttributeProto;
class ModelProto;
class ValueInfoProto;
}  // namespace onnx

namespace nnfuse {

// kNnfuse: fused nodes as nnfuse's ops (ai.nnfuse), which nnfuse runs. kOrt: fused nodes as ONNX
// Runtime's contrib ops (com.microsoft) or standard ONNX ops (ort_export.h), which ONNX Runtime
// runs.
enum class ExportFormat { kNnfuse, kOrt };
// "nnfuse" or "ort"; throws kInvalidArgument for another name.
ExportFormat export_format_from_name(const std::string& name);

void graph_to_model(const Graph& g, onnx::ModelProto* m,
                    ExportFormat format = ExportFormat::kNnfuse);
// A value's name, element type and shape (symbolic dims by name).
void value_info_to_proto(const Value* v, onnx::ValueInfoProto* vi);
// One attribute as ONNX writes it (graph attributes are refused).
void attribute_to_proto(const std::string& name, const Attribute& a, onnx::AttributeProto* p);
std::string export_onnx_string(const Graph& g, ExportFormat format = ExportFormat::kNnfuse);
// Writes the model; throws naming the path when it cannot be written.
void save_onnx(const Graph& g, const std::string& path,
               ExportFormat format = ExportFormat::kNnfuse);

}  // namespace nnfuse
