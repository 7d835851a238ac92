#include <algorithm>
#include <map>
#include <set>

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

struct Table {
  std::map<std::string, RefKernelEntry> entries;
  std::set<std::string> fused;  // op types of kFusedDomain
};

const Table& table() {
  static const Table t = [] {
    std::vector<RefKernelEntry> list;
    append_elementwise_kernels(list);
    append_reduce_kernels(list);
    append_shape_kernels(list);
    append_nn_kernels(list);
    append_misc_kernels(list);
    append_loss_kernels(list);
    append_quant_kernels(list);
    append_rnn_kernels(list);
    append_vision_kernels(list);
    append_sort_kernels(list);
    append_linalg_kernels(list);
    append_control_flow_kernels(list);
    append_signal_kernels(list);
    const size_t num_onnx = list.size();
    append_fused_kernels(list);
    append_conv_pool_kernels(list);
    append_scale_shift_kernels(list);
    append_squeeze_excite_kernels(list);
    append_expand_depthwise_kernels(list);
    append_group_norm_kernels(list);
    append_matmul_layer_norm_kernels(list);
    append_gated_matmul_kernels(list);
    append_fused_region_kernels(list);
    append_user_pattern_kernels(list);
    append_response_norm_kernels(list);
    append_quant_fused_kernels(list);
    ref::append_matmul_nbits_kernel(list);
    Table r;
    for (size_t i = 0; i < list.size(); ++i) {
      const RefKernelEntry& e = list[i];
      if (!r.entries.emplace(e.op_type, e).second) {
        fail(ErrorKind::kInternal, "reference kernel for ", e.op_type, " is listed twice");
      }
      if (i >= num_onnx) r.fused.insert(e.op_type);
    }
    return r;
  }();
  return t;
}

}  // namespace

const RefKernelEntry* find_ref_kernel(const std::string& op_type) {
  auto it = table().entries.find(op_type);
  return it == table().entries.end() ? nullptr : &it->second;
}

std::string ref_op_domain(const std::string& op_type) {
  return table().fused.count(op_type) ? kFusedDomain : "";
}

std::string ref_unsupported_reason(const Node& node, int64_t opset) {
  const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  if (!domain.empty() && domain != kFusedDomain) {
    return "op domain '" + node.domain() + "' is not supported";
  }
  // The op's identity knows which domains it belongs to (ops/op_names.inc).
  const RefKernelEntry* e = node.op() == Op::kUnknown ? nullptr : find_ref_kernel(node.op_type());
  if (!e) {
    return domain.empty() ? "op type is not supported"
                          : "op type is not supported in domain '" + domain + "'";
  }
  return e->supports ? e->supports(node, opset) : "";
}

std::vector<std::string> ref_supported_ops() {
  std::vector<std::string> r;
  for (auto& [k, v] : table().entries) r.push_back(k);
  return r;
}

}  // namespace nnfuse
