// The fast CPU kernel families (see cpu_internal.h). Each accepts float32 work (data movement:
// any fixed-size element type) and declines the rest, so the reference kernel runs it.
#include "kernels/cpu/cpu_internal.h"

namespace nnfuse {

void append_preferred_cpu_kernels(std::vector<std::pair<std::string, KernelFactory>>& t) {
  cpu::append_global_pool_kernels(t);
  cpu::append_conv_kernels(t);
}

void append_cpu_kernels(std::vector<std::pair<std::string, KernelFactory>>& t) {
  cpu::append_unary_kernels(t);
  cpu::append_unary_math_kernels(t);
  cpu::append_binary_kernels(t);
  cpu::append_norm_kernels(t);
  cpu::append_layer_norm_kernels(t);
  cpu::append_group_norm_kernels(t);
  cpu::append_expand_depthwise_kernels(t);
  cpu::append_softmax_kernels(t);
  cpu::append_reduce_kernels(t);
  cpu::append_arg_kernels(t);
  cpu::append_data_kernels(t);
  cpu::append_gather_kernels(t);
  cpu::append_scatter_kernels(t);
  cpu::append_resize_kernels(t);
  cpu::append_roi_align_kernels(t);
  cpu::append_grid_sample_kernels(t);
  cpu::append_depth_space_kernels(t);
  cpu::append_quantize_kernels(t);
  cpu::append_quant_matmul_kernels(t);
  cpu::append_matmul_nbits_kernels(t);
  cpu::append_quant_conv_kernels(t);
  cpu::append_pad_kernels(t);
  cpu::append_attention_kernels(t);
  cpu::append_norm_fused_kernels(t);
  cpu::append_embed_kernels(t);
  cpu::append_fused_region_kernels(t);
  cpu::append_response_norm_kernels(t);
  cpu::append_control_flow_kernels(t);
  cpu::append_cumsum_kernels(t);
}

}  // namespace nnfuse
