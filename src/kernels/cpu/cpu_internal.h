// The family tables of the fast CPU kernels, concatenated by cpu_kernels.cc in priority order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_util.h"
#include "kernels/kernel.h"

namespace nnfuse::cpu {

using FactoryTable = std::vector<std::pair<std::string, KernelFactory>>;

// KernelFactory::in_place_input of a kernel whose output 0 may overwrite its input 0
// (elementwise and row-wise kernels).
inline int in_place_output0(const NodeInfo&, size_t k) { return k == 0 ? 0 : -1; }

// KernelFactory::output_layout of a kernel whose output 0 is in input 0's layout (a per-channel
// or per-group normalization, which runs plain and channels-last alike).
inline Layout same_as_input(const NodeInfo& info, size_t k) {
  return k == 0 ? input_layout(info, 0) : Layout::kPlain;
}

void append_unary_kernels(FactoryTable& t);       // cpu_unary.cc: activations, Exp, Erf, Clip...
void append_unary_math_kernels(FactoryTable& t);  // cpu_unary_math.cc: Floor, Sin, Selu...
void append_binary_kernels(FactoryTable& t);      // cpu_binary.cc: Add..Pow, compares, Where
void append_norm_kernels(FactoryTable& t);        // cpu_norm.cc: BatchNormalization, ScaleShift
void append_layer_norm_kernels(FactoryTable& t);  // cpu_layer_norm.cc: LayerNormalization
void append_group_norm_kernels(FactoryTable& t);  // cpu_group_norm.cc: GroupNorm (ai.nnfuse)
void append_expand_depthwise_kernels(FactoryTable& t);  // cpu_expand_depthwise.cc (ai.nnfuse)
void append_softmax_kernels(FactoryTable& t);           // cpu_softmax.cc: Softmax, LogSoftmax
void append_reduce_kernels(FactoryTable& t);            // cpu_reduce.cc: Reduce*
void append_arg_kernels(FactoryTable& t);               // cpu_arg.cc: ArgMax, ArgMin
void append_data_kernels(FactoryTable& t);         // cpu_data.cc: Transpose, Slice, Split, Expand
void append_gather_kernels(FactoryTable& t);       // cpu_gather.cc: Gather, Concat, Cast
void append_scatter_kernels(FactoryTable& t);      // cpu_scatter.cc: ScatterElements
void append_resize_kernels(FactoryTable& t);       // cpu_resize.cc: Resize
void append_roi_align_kernels(FactoryTable& t);    // cpu_roi_align.cc: RoiAlign
void append_grid_sample_kernels(FactoryTable& t);  // cpu_grid_sample.cc: GridSample
void append_depth_space_kernels(FactoryTable& t);  // cpu_depth_to_space.cc: DepthToSpace...
void append_quantize_kernels(
    FactoryTable& t);  // cpu_quantize.cc: (Dynamic)QuantizeLinear, Dequantize
// cpu_quant_matmul.cc: MatMulInteger, QLinearMatMul, MatMulIntegerToFloat (ai.nnfuse)
void append_quant_matmul_kernels(FactoryTable& t);
void append_matmul_nbits_kernels(FactoryTable& t);  // cpu_matmul_nbits.cc
// cpu.matmul_nbits runs its portable loops even where the CPU has AVX2 (for the tests).
extern bool force_portable_nbits;
void append_quant_conv_kernels(FactoryTable& t);     // cpu_quant_conv.cc: ConvInteger, QLinearConv
void append_pad_kernels(FactoryTable& t);            // cpu_pad.cc: Pad
void append_attention_kernels(FactoryTable& t);      // cpu_attention.cc: MultiHeadAttention
void append_norm_fused_kernels(FactoryTable& t);     // cpu_norm_fused.cc: SkipLayerNorm, RMSNorm
void append_embed_kernels(FactoryTable& t);          // cpu_embed.cc: EmbedLayerNorm (ai.nnfuse)
void append_fused_region_kernels(FactoryTable& t);   // cpu_fused_region.cc: generated kernels
void append_response_norm_kernels(FactoryTable& t);  // cpu_response_norm.cc: GlobalResponseNorm
void append_control_flow_kernels(FactoryTable& t);   // cpu_control_flow.cc: If, Loop, Scan
void append_cumsum_kernels(FactoryTable& t);         // cpu_cumsum.cc: CumSum

// Ahead of oneDNN's (append_preferred_cpu_kernels):
// cpu_global_pool.cc: GlobalAveragePool
void append_global_pool_kernels(FactoryTable& t);
// conv_factories.cc: the own Winograd and depthwise convs (measured against oneDNN's)
void append_conv_kernels(FactoryTable& t);

// For tests: run cpu.expand_depthwise's loops on vectors of `lanes` floats (16, 8 or 4; any
// ISA computes each, the wider ones slowly without their registers); 0: the CPU's own width.
void force_expand_depthwise_lanes(int lanes);

}  // namespace nnfuse::cpu
