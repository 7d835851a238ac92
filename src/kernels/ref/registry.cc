#include <algorithm>
#include <map>

#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

const Tensor& KernelContext::in(size_t i) const {
  if (!has_input(i)) {
    fail(ErrorKind::kRuntime, node.describe(), ": required input ", i, " is missing");
  }
  return *inputs[i];
}

bool KernelContext::wants_output(size_t i) const {
  return i < node.num_outputs() && node.output(i) != nullptr;
}

namespace {

const std::map<std::string, RefKernelEntry>& table() {
  static const std::map<std::string, RefKernelEntry> t = [] {
    std::vector<RefKernelEntry> list;
    append_elementwise_kernels(list);
    append_reduce_kernels(list);
    append_shape_kernels(list);
    append_nn_kernels(list);
    append_misc_kernels(list);
    std::map<std::string, RefKernelEntry> m;
    for (const RefKernelEntry& e : list) {
      if (!m.emplace(e.op_type, e).second) {
        fail(ErrorKind::kInternal, "reference kernel for ", e.op_type, " is listed twice");
      }
    }
    return m;
  }();
  return t;
}

}  // namespace

const RefKernelEntry* find_ref_kernel(const std::string& op_type) {
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : &it->second;
}

std::string ref_unsupported_reason(const Node& node, int64_t opset) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    return "op domain '" + node.domain() + "' is not supported";
  }
  const RefKernelEntry* e = find_ref_kernel(node.op_type());
  if (!e) return "op type is not supported";
  return e->supports ? e->supports(node, opset) : "";
}

std::vector<std::string> ref_supported_ops() {
  std::vector<std::string> r;
  for (auto& [k, v] : table()) r.push_back(k);
  return r;
}

}  // namespace nnfuse
