// Reference kernels: one plain, obviously correct kernel for every supported op. They are
// the oracle every fast kernel and every fusion is tested against, so clarity beats speed.
//
// The table is explicit (no static registration): registry.cc lists each family's entries.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace nnfuse {

struct KernelContext {
  const Node& node;
  int64_t opset = 0;
  std::vector<const Tensor*> inputs;  // nullptr for an omitted optional input
  std::vector<Tensor> outputs;        // sized to node.num_outputs(); the kernel assigns them

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  // The tensor of input i; throws an error naming the node when it is absent.
  const Tensor& in(size_t i) const;
  bool wants_output(size_t i) const;  // false for an omitted optional output
};

using RefKernelFn = void (*)(KernelContext& ctx);
// Returns "" when the kernel handles this node (attributes, declared input dtypes, opset),
// else a short reason such as "input of type float16 is not supported".
using SupportFn = std::string (*)(const Node& node, int64_t opset);

struct RefKernelEntry {
  const char* op_type;
  RefKernelFn run;
  SupportFn supports;  // nullptr: supports every node of this op type
};

// The kernel for an op type, or nullptr. The table is keyed by op type alone: the fused ops'
// names do not collide with ONNX's.
const RefKernelEntry* find_ref_kernel(const std::string& op_type);
// The domain an op type with a reference kernel belongs to: kFusedDomain for the fused ops,
// "" (default ONNX) for the others.
std::string ref_op_domain(const std::string& op_type);
// Why `node` cannot run ("" when it can): unknown op or domain, or the kernel's own reason.
std::string ref_unsupported_reason(const Node& node, int64_t opset);
// Every op type with a reference kernel, sorted.
std::vector<std::string> ref_supported_ops();

// The output dims of a view op (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) for
// its inputs in ctx: the input's elements, in order, under other dims. Checked as the reference
// kernels check them.
Dims view_output_dims(const KernelContext& ctx);

// Family tables, concatenated by registry.cc.
void append_elementwise_kernels(std::vector<RefKernelEntry>& t);  // unary, binary, compare, logic
void append_reduce_kernels(std::vector<RefKernelEntry>& t);       // Reduce*, ArgMax, Softmax...
void append_shape_kernels(std::vector<RefKernelEntry>& t);   // Reshape, Transpose, Slice, Gather...
void append_nn_kernels(std::vector<RefKernelEntry>& t);      // Conv, pools, MatMul, Gemm, norms
void append_misc_kernels(std::vector<RefKernelEntry>& t);    // Resize, Pad, Range, Cast, Trilu...
void append_loss_kernels(std::vector<RefKernelEntry>& t);    // NegativeLogLikelihoodLoss, ...
void append_quant_kernels(std::vector<RefKernelEntry>& t);   // QuantizeLinear, QLinearConv, ...
void append_rnn_kernels(std::vector<RefKernelEntry>& t);     // LSTM, GRU, RNN
void append_vision_kernels(std::vector<RefKernelEntry>& t);  // NonMaxSuppression, RoiAlign, ...
void append_sort_kernels(std::vector<RefKernelEntry>& t);    // TopK, Unique
void append_linalg_kernels(std::vector<RefKernelEntry>& t);  // Einsum, Det
void append_control_flow_kernels(std::vector<RefKernelEntry>& t);  // If, Loop, Scan
void append_signal_kernels(std::vector<RefKernelEntry>& t);       // DFT, STFT, windows, mel filters
void append_fused_kernels(std::vector<RefKernelEntry>& t);        // FusedConv... (domain ai.nnfuse)
void append_attention_kernels(std::vector<RefKernelEntry>& t);    // MultiHeadAttention (ai.nnfuse)
void append_embed_kernels(std::vector<RefKernelEntry>& t);        // EmbedLayerNorm (ai.nnfuse)
void append_conv_pool_kernels(std::vector<RefKernelEntry>& t);    // FusedConvPool (ai.nnfuse)
void append_scale_shift_kernels(std::vector<RefKernelEntry>& t);  // ScaleShift (ai.nnfuse)
void append_squeeze_excite_kernels(std::vector<RefKernelEntry>& t);     // SqueezeExcite (ai.nnfuse)
void append_expand_depthwise_kernels(std::vector<RefKernelEntry>& t);   // ExpandDepthwise
void append_group_norm_kernels(std::vector<RefKernelEntry>& t);         // GroupNorm (ai.nnfuse)
void append_matmul_layer_norm_kernels(std::vector<RefKernelEntry>& t);  // FusedMatMulLayerNorm
void append_gated_matmul_kernels(std::vector<RefKernelEntry>& t);       // FusedGatedMatMul
void append_norm_fused_kernels(std::vector<RefKernelEntry>& t);         // SkipLayerNorm, RMSNorm
void append_fused_region_kernels(std::vector<RefKernelEntry>& t);       // FusedRegion
void append_user_pattern_kernels(std::vector<RefKernelEntry>& t);       // UserPattern
void append_response_norm_kernels(std::vector<RefKernelEntry>& t);      // GlobalResponseNorm
void append_quant_fused_kernels(std::vector<RefKernelEntry>& t);        // MatMulIntegerToFloat
namespace ref {
void append_matmul_nbits_kernel(std::vector<RefKernelEntry>& t);  // MatMulNBits
}

namespace ref {
// The norm prologue of FusedLayerNormMatMul and of FusedGatedMatMul with a gamma: X (input 0)
// normalized over its last axis, LayerNorm with Gamma (input 3) and Beta (input 4) or, with
// attribute norm "rms", RMSNorm with Gamma; epsilon from the node. The reason a node's norm
// attributes are not supported, or "".
Tensor norm_prologue(const KernelContext& ctx);
std::string norm_prologue_reason(const Node& node);
}  // namespace ref

}  // namespace nnfuse
