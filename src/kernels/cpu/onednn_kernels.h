// The oneDNN kernel factories, one per op family; onednn.cc lists them in the kernel table.
#pragma once

#include "kernels/kernel.h"

namespace nnfuse::onednn {

// The conv ops' factories (conv_factories.cc): oneDNN's direct algorithm, and its Winograd one
// ("onednn.winograd") for the 2-D 3x3 convs where it pays or is measured.
KernelFactory conv_factory();            // Conv (1-D, 2-D, 3-D)
KernelFactory conv_winograd_factory();   // Conv
KernelFactory conv_transpose_factory();  // ConvTranspose (2-D)
KernelFactory matmul_factory();          // MatMul
KernelFactory gemm_factory();            // Gemm
KernelFactory pool_factory();            // MaxPool, AveragePool
KernelFactory global_pool_factory();     // GlobalAveragePool, GlobalMaxPool
KernelFactory lstm_factory();            // LSTM (default activations, no peepholes or clip)
KernelFactory gru_factory();             // GRU (default activations, no clip)
KernelFactory rnn_factory();             // RNN (Tanh, Relu or Sigmoid, no clip)
// The fused ops of domain ai.nnfuse.
KernelFactory fused_conv_factory();           // FusedConv: Conv + bias + residual sum + activation
KernelFactory scaled_conv_factory();          // ScaledConv: 1x1 Conv of a channel-scaled input
KernelFactory fused_conv_split_factory();     // FusedConvSplit: FusedConv cut into outputs
KernelFactory fused_conv_pool_factory();      // FusedConvPool: FusedConv + MaxPool
KernelFactory fused_conv_winograd_factory();  // FusedConv
KernelFactory fused_conv_pool_winograd_factory();  // FusedConvPool
KernelFactory fused_matmul_factory();              // FusedMatMul: MatMul + bias + activation
KernelFactory fused_matmul_layer_norm_factory();   // FusedMatMulLayerNorm: + residual, LayerNorm
KernelFactory fused_matmul_residual_factory();     // FusedMatMulResidual: A B + bias + R
KernelFactory fused_gated_matmul_factory();        // FusedGatedMatMul: act(X Wg) * (X Wu)
// FusedGatedMatMul's columns per half of its [gate | up] product, for halves of n columns and
// weights blocked by `block` columns: n, or n widened (zero weight columns) so that the column
// blocks are a multiple of the threads, when that costs at most 1/16 more work.
int64_t gated_half_columns(int64_t n, int64_t block, int threads);
KernelFactory fused_layer_norm_matmul_factory();  // FusedLayerNormMatMul: LayerNorm, then MatMul
KernelFactory fused_gemm_factory();               // FusedGemm: Gemm + activation
KernelFactory pool_gemm_factory();                // FusedGlobalPoolGemm: GlobalAveragePool + Gemm
// The same products with a constant B where A's rows are known only at run time
// (onednn_matmul_rows.cc): after the prepacked kernels, which need A's static shape.
KernelFactory matmul_rows_factory();              // MatMul
KernelFactory gemm_rows_factory();                // Gemm
KernelFactory fused_matmul_rows_factory();        // FusedMatMul
KernelFactory fused_gemm_rows_factory();          // FusedGemm
KernelFactory fused_ln_matmul_rows_factory();     // FusedLayerNormMatMul
KernelFactory fused_gated_matmul_rows_factory();  // FusedGatedMatMul
// MatMul of two operands without static shapes, neither a constant (onednn_matmul_runtime.cc).
KernelFactory matmul_runtime_factory();
// The convolutions whose batch is known only at run time, image by image
// (onednn_conv_batch.cc): after the static-shape kernels.
KernelFactory conv_batch_factory();            // Conv
KernelFactory conv_transpose_batch_factory();  // ConvTranspose
KernelFactory fused_conv_batch_factory();      // FusedConv

}  // namespace nnfuse::onednn
