// Models whose default-domain opset is older than nnfuse's lowest (older model zoos and
// converters) are converted at import by ONNX's version converter to that opset, whose
// semantics the importer and kernels follow.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace nnfuse {

// The default-domain opset the model imports ("" or "ai.onnx"), 0 when it imports none.
int64_t default_opset(const onnx::ModelProto& m);

// Converts `m` in place from its default-domain opset (below `target`) to `target`. Throws
// nnfuse::Error (kUnsupported), naming `label`, both opsets and the converter's reason, where
// the conversion is impossible (an op with no adapter, a removed op, subgraphs it cannot
// convert).
void upgrade_opset(onnx::ModelProto& m, int64_t target, const std::string& label);

}  // namespace nnfuse
