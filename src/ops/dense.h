// The dense-layer ops of nnfuse's domain, run by the matmul kernels with oneDNN's bias and
// post-ops or the project's own epilogues:
//   FusedMatMul(A, B, Bias?)                   = act(MatMul(A, B) [+ Bias])
//   FusedGemm(A, B, C?)                        = act(Gemm(A, B, C))  (Gemm's attributes)
//   FusedGlobalPoolGemm(X, B, C?)              = act(Gemm(Flatten(GlobalAveragePool(X)), B, C))
//   FusedMatMulResidual(A, B, Bias?, Residual) = FusedMatMul(A, B, Bias) + Residual
//   FusedMatMulLayerNorm(A, B, Bias?, Residual, Gamma, Beta?; epsilon)
//     = LayerNormalization(FusedMatMul(A, B, Bias) + Residual, Gamma, Beta; axis -1, epsilon)
//   FusedLayerNormMatMul(X, B, Bias?, Gamma, Beta?; epsilon, norm, act)
//     = FusedMatMul(LayerNormalization(X, Gamma, Beta; axis -1, epsilon), B, Bias; act)
//     with norm "rms": FusedMatMul(RMSNorm(X, Gamma; epsilon), B, Bias; act)
//   FusedGatedMatMul(X, W, Bias?, Gamma?, Beta?; act, epsilon, norm)
//     = act(P[..., :N]) * P[..., N:],  P = A W (+ Bias),  W [K, 2N] (gate columns first), A = X
//     or, with a Gamma, its norm prologue as FusedLayerNormMatMul's
// Bias, Gamma and Beta hold one value per column; the Residual has the product's shape.
#pragma once

#include <optional>

#include "ops/activation.h"

namespace nnfuse::ops {

// Input positions.
namespace fused_matmul {
inline constexpr size_t kA = 0, kB = 1, kBias = 2;
}
namespace fused_matmul_residual {
inline constexpr size_t kA = 0, kB = 1, kBias = 2, kResidual = 3;
}
namespace fused_matmul_layer_norm {
inline constexpr size_t kA = 0, kB = 1, kBias = 2, kResidual = 3, kGamma = 4, kBeta = 5;
}
// FusedLayerNormMatMul's and FusedGatedMatMul's.
namespace norm_matmul {
inline constexpr size_t kX = 0, kW = 1, kBias = 2, kGamma = 3, kBeta = 4;
}

// The norm prologue of FusedLayerNormMatMul and FusedGatedMatMul (attribute norm: absent for
// LayerNorm, "rms" for RMSNorm).
enum class NormKind { kLayer, kRms };
struct NormPrologue {
  NormKind kind = NormKind::kLayer;
  float epsilon = 1e-5f;
  void write(Attrs& attrs) const;
};
// The node's prologue norm kind; throws kUnsupported naming the node for an unknown `norm`.
NormKind read_norm_kind(const Node& n);
// Whether a FusedGatedMatMul normalizes its input first (it has a Gamma).
inline bool gated_has_norm(const Node& n) { return n.num_inputs() > norm_matmul::kGamma; }

// Gemm's own attributes as its node holds them (absent ones stay absent).
struct GemmAttrs {
  std::optional<float> alpha = {}, beta = {};
  std::optional<int64_t> trans_a = {}, trans_b = {};
  static GemmAttrs of(const Node& n);
  void write(Attrs& attrs) const;
};

struct FusedMatMul {
  Value* a = nullptr;
  Value* b = nullptr;
  Value* bias = nullptr;
  Activation act = {};
  // A FusedMatMul node's values and attributes, or a MatMul's (no bias, no activation).
  static FusedMatMul of(const Node& n);
  NodeSpec spec() const;
};

struct FusedGemm {
  Value* a = nullptr;
  Value* b = nullptr;
  Value* c = nullptr;
  GemmAttrs gemm = {};
  Activation act = {};
  NodeSpec spec() const;
};

struct FusedGlobalPoolGemm {
  Value* x = nullptr;
  Value* b = nullptr;
  Value* c = nullptr;
  GemmAttrs gemm = {};
  NodeSpec spec() const;
};

struct FusedMatMulResidual {
  Value* a = nullptr;
  Value* b = nullptr;
  Value* bias = nullptr;
  Value* residual = nullptr;
  NodeSpec spec() const;
};

struct FusedMatMulLayerNorm {
  Value* a = nullptr;
  Value* b = nullptr;
  Value* bias = nullptr;
  Value* residual = nullptr;
  Value* gamma = nullptr;
  Value* beta = nullptr;
  float epsilon = 1e-5f;
  NodeSpec spec() const;
};

struct FusedLayerNormMatMul {
  Value* x = nullptr;
  Value* w = nullptr;
  Value* bias = nullptr;
  Value* gamma = nullptr;
  Value* beta = nullptr;
  NormPrologue norm = {};
  Activation act = {};
  NodeSpec spec() const;
};

struct FusedGatedMatMul {
  Value* x = nullptr;
  Value* w = nullptr;  // [K, 2N]: the gate's columns, then the up projection's
  Value* bias = nullptr;
  Value* gamma = nullptr;  // with a norm prologue
  Value* beta = nullptr;
  std::optional<NormPrologue> norm = {};
  Activation act = {};  // the gate's
  // A FusedGatedMatMul node's values and attributes.
  static FusedGatedMatMul of(const Node& n);
  NodeSpec spec() const;
};

void append_dense_defs(std::vector<OpDef>& t);

// FLOPs of a dense product (ONNX's MatMul and Gemm too: ops/onnx_ops.cc): 2 per multiply-add.
int64_t dense_flops(const Node& n);

}  // namespace nnfuse::ops
