#include "onnx/opset_upgrade.h"

#include <onnx/defs/schema.h>
#include <onnx/version_converter/convert.h>

#include <set>

#include "ir/error.h"
#include "onnx/inference_guards.h"

namespace nnfuse {

namespace {

// `defined`: on entry, the names the enclosing graphs define (a subgraph may read them).
void check_names_defined(const onnx::GraphProto& g, std::set<std::string> defined,
                         const std::string& label) {
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) defined.insert(o);
  }
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) {
      if (!i.empty() && !defined.count(i)) {
        fail(ErrorKind::kInvalidModel, label, ": node '", n.name(), "' (", n.op_type(), ") reads '",
             i, "', which no node, input or initializer defines");
      }
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) check_names_defined(a.g(), defined, label);
      for (const auto& sub : a.graphs()) check_names_defined(sub, defined, label);
    }
  }
  for (const auto& v : g.output()) {
    if (!defined.count(v.name())) {
      fail(ErrorKind::kInvalidModel, label, ": graph output '", v.name(),
           "' is not produced by any node, input or initializer");
    }
  }
}

}  // namespace

void check_names_defined(const onnx::ModelProto& m, const std::string& label) {
  check_names_defined(m.graph(), {}, label);
}

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
