#include "onnx/opset_upgrade.h"

#include <onnx/defs/schema.h>
#include <onnx/version_converter/convert.h>

#include "ir/error.h"
#include "onnx/inference_guards.h"

namespace nnfuse {

int64_t default_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  }
  return 0;
}

void upgrade_opset(onnx::ModelProto& m, int64_t target, const std::string& label) {
  const int64_t from = default_opset(m);
  auto refuse = [&](const std::string& why) {
    fail(ErrorKind::kUnsupported, label, ": opset ", from,
         " of the default ONNX domain could not be converted to opset ", target,
         " (the lowest nnfuse runs): ", why);
  };
  // Ops that no longer exist at the target (experimental ones, removed since) are named; the
  // converter itself only reports a failed lookup for them.
  for (const auto& n : m.graph().node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    if (!onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(target), "")) {
      refuse("node '" + n.name() + "' (" + n.op_type() + ") has no form at opset " +
             std::to_string(target));
    }
  }
  check_converter_preconditions(m, label);
  onnx::ModelProto converted;
  try {
    converted = onnx::version_conversion::ConvertVersion(m, static_cast<int>(target));
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    refuse(msg);
  }
  if (default_opset(converted) != target) refuse("the converter left the model at another opset");
  m.Swap(&converted);
}

}  // namespace nnfuse
