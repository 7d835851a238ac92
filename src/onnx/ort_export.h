// The ONNX Runtime export (`nnfuse compile --format ort`): nnfuse's fused nodes (domain ai.nnfuse)
// written as ONNX Runtime's CPU contrib ops (domain com.microsoft) where one computes the same
// thing, else as standard ONNX ops, so the fused graph runs in any ONNX Runtime:
//   FusedConv            -> FusedConv (activation in activation/activation_params when ORT's
//                           kernel has it, else the activation after it; the residual as Z,
//                           a skip convolution's as a Conv before it)
//   ScaledConv           -> Mul, FusedConv;  FusedConvPool -> FusedConv, MaxPool
//   FusedGemm            -> FusedGemm (or Gemm and the activation)
//   FusedMatMul          -> FusedGemm / Gemm for a 2-D product with a vector bias; else MatMul
//                           with BiasGelu / FastGelu (bias), or Add and the activation
//   FusedGlobalPoolGemm  -> GlobalAveragePool, Flatten, FusedGemm
//   SqueezeExcite        -> GlobalAveragePool, FusedConv, FusedConv
//   ExpandDepthwise      -> FusedConv, FusedConv
//   FusedConvSplit       -> FusedConv, Split (axis 1)
//   Gelu, Swish          -> Gelu or FastGelu, QuickGelu (com.microsoft)
//   ScaleShift           -> with an activation FusedConv takes, a depthwise 1x1 FusedConv; else
//                           BatchNormalization (mean 0, variance 1, epsilon 0) and the activation;
//                           of a concatenation (inputs 3 on), a Concat first
//   SkipLayerNorm        -> SkipLayerNormalization (the sum as output 3)
//   RMSNorm              -> SkipSimplifiedLayerNormalization with a skip of zeros (exact; ORT's
//                           SimplifiedLayerNormalization is in the default domain, where the ONNX
//                           checker knows no such op)
//   LayerNormalization   -> LayerNormalization (the default domain raised to opset 17)
//   EmbedLayerNorm       -> EmbedLayerNormalization (int32 ids) where its form fits, else Gather,
//                           Add and LayerNormalization
//   MultiHeadAttention   -> Attention (absorbing the packed QKV projection) or
//                           MultiHeadAttention, the additive mask as attention_bias
//   FusedMatMulLayerNorm -> MatMul, SkipLayerNormalization;  FusedLayerNormMatMul ->
//                           LayerNormalization and the FusedMatMul lowering
//   FusedGatedMatMul     -> the gate's dense form with its activation, MatMul (+ Add), Mul
//   FusedMatMulResidual  -> the FusedMatMul lowering and Add
//   FusedRegion          -> its ops as standard ONNX ops (ort_region.cc)
// Standard ops are written as they are, except where ONNX Runtime has a form of fewer nodes
// (ort_peephole.cc): sibling Slices of one axis as a Split; MatMul with a transposed operand
// or a constant scale as FusedMatMul (transA, transB, alpha).
// A UserPattern node has no ONNX Runtime kernel: exporting one is an error naming it.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <set>
#include <string>

#include "ir/graph.h"
#include "onnx/proto_writer.h"
#include "ops/def.h"

namespace nnfuse {

inline constexpr char kOrtDomain[] = "com.microsoft";

class OrtLowering {
 public:
  OrtLowering(const Graph& g, onnx::GraphProto* gp);
  // The default domain's opset the export declares (the graph's, raised where a lowering needs
  // a newer op).
  int64_t opset() const { return w_.opset(); }
  // Whether `n` is written by the lowering of another node (a projection Attention absorbs, a
  // Transpose or scaling a MatMul absorbs, a Slice written as part of a Split).
  bool absorbed(const Node& n) const { return absorbed_.count(&n) != 0; }
  // Whether the standard node `n` is written in another form (lower() writes it).
  bool claims(const Node& n) const { return rewrites_.count(&n) != 0; }
  // Writes the fused node `n` (domain ai.nnfuse) in its definition's ONNX Runtime form
  // (ops::OrtForm): a lowering of the exporter's, or its decomposition into standard ops. Throws
  // kUnsupported naming it when it has none.
  void lower(const Node& n);
  // The exporter's lowerings, by op.
  static const std::map<Op, void (OrtLowering::*)(const Node&)>& lowerings();

  // Pieces the lowerings share (ort_export.cc, ort_transformer.cc, ort_region.cc).
  ProtoWriter& writer() { return w_; }
  // value_info for an IR value written by a lowering.
  void declare(const Value* v);
  void declare_shape(const std::string& name, DType dtype, const Dims& dims);
  const Graph& graph() const { return g_; }

 private:
  void plan();
  // Standard-op forms ORT runs as fewer nodes (ort_peephole.cc): sibling Slices as one Split,
  // a MatMul with a transposed operand or a constant scale after it as FusedMatMul.
  void plan_peepholes();
  void plan_gemms();
  void lower_conv(const Node& n);
  void lower_scaled_conv(const Node& n);
  void lower_conv_pool(const Node& n);
  void lower_gemm(const Node& n);
  void lower_matmul(const Node& n);
  void lower_pool_gemm(const Node& n);
  void lower_squeeze_excite(const Node& n);
  void lower_expand_depthwise(const Node& n);
  void lower_conv_split(const Node& n);
  void lower_gated_matmul(const Node& n);
  void lower_matmul_residual(const Node& n);
  void lower_matmul_integer_to_float(const Node& n);  // ort_quant.cc
  void lower_matmul_nbits(const Node& n);             // ort_quant.cc
  void lower_standalone_activation(const Node& n);
  void lower_scale_shift(const Node& n);
  void lower_group_norm(const Node& n);  // ort_group_norm.cc
  std::string with_addend(const Node& n, const Dims& xd);
  void lower_skip_layer_norm(const Node& n);
  void lower_rms_norm(const Node& n);
  void lower_layer_norm(const Node& n);
  void lower_embed(const Node& n);
  void lower_attention(const Node& n);
  void lower_decoder_attention(const Node& n);  // grouped-query or rotary
  void lower_matmul_layer_norm(const Node& n);
  void lower_layer_norm_matmul(const Node& n);
  void lower_region(const Node& n);
  // A node whose definition decomposes it into standard ops: the nodes its decomposition makes
  // in a graph of its own, written as they are.
  void write_decomposed(const Node& n, const ops::OpDef& def);

  // FusedConv(x, input first_weight, its next input as B, the one after as Z) with the node's
  // conv attributes and activation, writing `out`; `conv_value` (may be nullptr) has the conv's
  // output shape. A non-empty `z` (of the output's shape) is Z instead.
  void write_conv(const Node& n, const std::string& x, size_t first_weight, const Value* conv_value,
                  const std::string& out, const std::string& name, const std::string& z = "");
  // FusedMatMul's lowering on explicit operands (a, b, bias may be "" for none) writing `out`.
  // as_gemm: a is 2-D and bias a vector (or absent), whatever the graph's values say.
  void write_dense(const Node& n, const std::string& a, const std::string& b,
                   const std::string& bias, const std::string& out, const std::string& name,
                   bool as_gemm = false);
  // The norm prologue of FusedLayerNormMatMul or of FusedGatedMatMul with a Gamma: LayerNorm
  // or RMSNorm of input 0 with Gamma (input 3) and Beta (input 4); returns the normalized value.
  std::string write_norm_prologue(const Node& n);
  // The node's epilogue activation applied to `in`, written to `out` (an Identity when it has
  // none).
  void write_activation(const Node& n, const std::string& in, const std::string& out,
                        const std::string& name);
  // The additive mask as ORT's attention_bias [B or 1, H or 1, Sq, Sk], widened once per value.
  std::string expanded_mask(const Value* mask, int64_t sq, int64_t sk);

  const Graph& g_;
  ProtoWriter w_;
  std::set<const Node*> absorbed_;
  std::map<const Node*, std::function<void()>> rewrites_;
  std::map<std::string, std::string> expanded_masks_;
};

// Whether the exporter has a lowering of its own for the op (one of nnfuse's).
bool ort_lowering_exists(Op op);

}  // namespace nnfuse
