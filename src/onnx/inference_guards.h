// Guards in front of ONNX's own shape inference and version converter. Some of ONNX's
// shape-inference functions and converter adapters trust an attribute or an input's rank that a
// model may get wrong (LayerNormalization's axis, GatherND's batch_dims, a convolution's weight
// rank, STFT's signal rank, the matrices of an old Gemm) and read out of bounds on it. The importer
// installs checks in front of those functions, so such a model is refused with a clear error
// instead of crashing the process. src/api/operator_sweep_test.cc tries every operator with bad
// ranks and attributes.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace nnfuse {

// Refuses (kInvalidModel, naming `label`) a model in which a node input or a graph output names
// a value that nothing defines (subgraphs may name their enclosing graphs' values): ONNX's
// version converter and some of its shape-inference functions dereference such a name
// unchecked, so the importer runs this before either sees the model.
void check_names_defined(const onnx::ModelProto& m, const std::string& label);

// Refuses (kInvalidModel, naming `label` and the input) a model with a graph input of no type:
// ONNX's inference functions read an input's type unchecked.
void check_inputs_typed(const onnx::ModelProto& m, const std::string& label);

// Wraps the shape-inference functions known to read out of bounds on a bad attribute or rank
// with a check that throws ONNX's InferenceError first. Idempotent and thread-safe; the importer
// calls it before ONNX's inference or converter first runs.
void install_inference_guards();

// The first refusal of a guard on this thread since the last call ("" if none), for the caller to
// report: ONNX's inference, run non-strict, goes on past the node without saying so.
std::string take_guard_refusal();

// Refuses (kInvalidModel, naming `label` and the node) a model whose old-opset nodes the version
// converter's adapters would mishandle, as far as ONNX's shape inference (run on a copy) types
// their inputs. Models at opset 7 and later meet no such adapter and are not inferred here.
void check_converter_preconditions(const onnx::ModelProto& m, const std::string& label);

}  // namespace nnfuse
