// The oneDNN kernel family: convolutions, matrix products and pools, each declining (in its
// accepts()) what it does not run exactly like the reference kernel, which then runs it.
#include "kernels/cpu/onednn_kernels.h"

namespace nnfuse {

void append_onednn_kernels(std::vector<std::pair<std::string, KernelFactory>>& t) {
  t.emplace_back("Conv", onednn::conv_winograd_factory());
  t.emplace_back("Conv", onednn::conv_factory());
  t.emplace_back("Conv", onednn::conv_batch_factory());
  t.emplace_back("ConvTranspose", onednn::conv_transpose_factory());
  t.emplace_back("ConvTranspose", onednn::conv_transpose_batch_factory());
  t.emplace_back("MatMul", onednn::matmul_factory());
  t.emplace_back("MatMul", onednn::matmul_rows_factory());
  t.emplace_back("MatMul", onednn::matmul_runtime_factory());
  t.emplace_back("Gemm", onednn::gemm_factory());
  t.emplace_back("Gemm", onednn::gemm_rows_factory());
  t.emplace_back("MaxPool", onednn::pool_factory());
  t.emplace_back("AveragePool", onednn::pool_factory());
  t.emplace_back("GlobalAveragePool", onednn::global_pool_factory());
  t.emplace_back("GlobalMaxPool", onednn::global_pool_factory());
  t.emplace_back("LSTM", onednn::lstm_factory());
  t.emplace_back("GRU", onednn::gru_factory());
  t.emplace_back("RNN", onednn::rnn_factory());
  t.emplace_back("FusedConv", onednn::fused_conv_winograd_factory());
  t.emplace_back("FusedConv", onednn::fused_conv_factory());
  t.emplace_back("FusedConv", onednn::fused_conv_batch_factory());
  t.emplace_back("ScaledConv", onednn::scaled_conv_factory());
  t.emplace_back("FusedConvPool", onednn::fused_conv_pool_winograd_factory());
  t.emplace_back("FusedConvPool", onednn::fused_conv_pool_factory());
  t.emplace_back("FusedConvSplit", onednn::fused_conv_split_factory());
  t.emplace_back("FusedMatMul", onednn::fused_matmul_factory());
  t.emplace_back("FusedMatMul", onednn::fused_matmul_rows_factory());
  t.emplace_back("FusedMatMulLayerNorm", onednn::fused_matmul_layer_norm_factory());
  t.emplace_back("FusedLayerNormMatMul", onednn::fused_layer_norm_matmul_factory());
  t.emplace_back("FusedLayerNormMatMul", onednn::fused_ln_matmul_rows_factory());
  t.emplace_back("FusedGatedMatMul", onednn::fused_gated_matmul_factory());
  t.emplace_back("FusedGatedMatMul", onednn::fused_gated_matmul_rows_factory());
  t.emplace_back("FusedMatMulResidual", onednn::fused_matmul_residual_factory());
  t.emplace_back("FusedGemm", onednn::fused_gemm_factory());
  t.emplace_back("FusedGemm", onednn::fused_gemm_rows_factory());
  t.emplace_back("FusedGlobalPoolGemm", onednn::pool_gemm_factory());
}

}  // namespace nnfuse
