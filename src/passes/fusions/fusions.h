// The fusion passes, one family per file.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "passes/fusions/fusion_util.h"
#include "passes/pass.h"

namespace nnfuse {

std::unique_ptr<Pass> make_conv_bn_pass();               // conv_bn.cc
std::unique_ptr<Pass> make_bn_scale_shift_pass();        // conv_bn.cc
std::unique_ptr<Pass> make_concat_scale_shift_pass();    // conv_bn.cc
std::unique_ptr<Pass> make_pad_conv_pass();              // pad_conv.cc
std::unique_ptr<Pass> make_pad_pool_pass();              // pad_conv.cc
std::unique_ptr<Pass> make_channel_shuffle_pass();       // channel_shuffle.cc
std::unique_ptr<Pass> make_scaled_conv_pass();           // scaled_conv.cc
std::unique_ptr<Pass> make_squeeze_excite_pass();        // squeeze_excite.cc
std::unique_ptr<Pass> make_squeeze_excite_scale_pass();  // squeeze_excite.cc
std::unique_ptr<Pass> make_expand_depthwise_pass();      // expand_depthwise.cc
std::unique_ptr<Pass> make_layer_scale_pass();           // layer_scale.cc
std::unique_ptr<Pass> make_conv_add_act_pass();          // conv_act.cc
std::unique_ptr<Pass> make_conv_act_pass();              // conv_act.cc
std::unique_ptr<Pass> make_conv_quantize_pass();         // conv_quantize.cc
std::unique_ptr<Pass> make_conv_skip_conv_pass();        // conv_act.cc
std::unique_ptr<Pass> make_conv_pool_pass();             // conv_pool.cc
std::unique_ptr<Pass> make_horizontal_conv_pass();       // horizontal_conv.cc
std::unique_ptr<Pass> make_attention_pass();             // attention.cc
std::unique_ptr<Pass> make_qkv_projection_pass();        // qkv_projection.cc
std::unique_ptr<Pass> make_layer_norm_matmul_pass();     // matmul_layer_norm.cc
std::unique_ptr<Pass> make_matmul_layer_norm_pass();     // matmul_layer_norm.cc
std::unique_ptr<Pass> make_matmul_add_act_pass();        // matmul_add.cc
std::unique_ptr<Pass> make_quant_dense_pass();           // quant_dense.cc
std::unique_ptr<Pass> make_gemm_act_pass();              // matmul_add.cc
std::unique_ptr<Pass> make_pool_gemm_pass();             // pool_gemm.cc
std::unique_ptr<Pass> make_layer_norm_pass();            // layer_norm.cc
std::unique_ptr<Pass> make_rms_norm_pass();              // layer_norm.cc
std::unique_ptr<Pass> make_group_norm_pass();            // group_norm.cc
std::unique_ptr<Pass> make_response_norm_pass();         // response_norm.cc
std::unique_ptr<Pass> make_skip_layer_norm_pass();       // layer_norm.cc
std::unique_ptr<Pass> make_gelu_pass();                  // gelu.cc
std::unique_ptr<Pass> make_gated_ffn_chunk_pass();       // gated_ffn.cc
std::unique_ptr<Pass> make_gated_ffn_pass();             // gated_ffn.cc
std::unique_ptr<Pass> make_matmul_residual_pass();       // matmul_add.cc
std::unique_ptr<Pass> make_embed_layer_norm_pass();      // embed_layer_norm.cc
std::unique_ptr<Pass> make_spatial_view_pass();          // spatial_view.cc

// The registered user fusion patterns (nnfuse/fusion_pattern.h), those `enabled` accepts by
// name, in registration order (user_patterns.cc).
void run_fusion_patterns(Graph& g, PassContext& ctx,
                         const std::function<bool(const std::string&)>& enabled);

}  // namespace nnfuse
