// Private to the oneDNN MatMul and Gemm kernels (onednn_matmul.cc): what a node asks of the
// product (MatMulSpec, read by onednn_matmul_spec.cc) and the work the kernel does on its
// operands around the product (onednn_matmul_operands.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/kernel.h"
#include "kernels/ref/fused.h"

namespace nnfuse::onednn {

enum class MatMulOp {
  kMatMul,
  kGemm,
  kFusedMatMul,
  kFusedGemm,
  kPoolGemm,
  kMatMulLayerNorm,
  kLayerNormMatMul,
  kGatedMatMul,
  kMatMulResidual
};

struct MatMulSpec {
  Dims in_shape[3];  // expected input shapes; in_shape[2] only for a run-time C or bias
  Dims y_shape;
  // What the primitive is created for: src and dst always bound at run time; weights and
  // bias either constants (prepacked) or bound at run time.
  dnnl::memory::desc src, wei, dst;
  const Tensor* const_wei = nullptr;  // plain, in the layout of `wei`
  bool runtime_wei = false;
  // Gemm's C, as dims [c0, c1] broadcast to [M, N]: a bias when it is one row (oneDNN's fast
  // kernels take no other bias shape), else copied into Y before a product with a sum post-op.
  enum class CMode { kNone, kBias, kSum } c_mode = CMode::kNone;
  Dims c_dims;
  const Tensor* const_c = nullptr;
  bool runtime_c = false;
  float alpha = 1.0f, beta = 1.0f;  // Gemm: folded into the constant B and C
  ref::Activation act;              // the fused ops' epilogue
  // FusedGlobalPoolGemm: A is the per-channel mean of X (in_shape[0], in x_layout).
  bool pool = false;
  Layout x_layout = Layout::kPlain;
  // FusedMatMulLayerNorm: residual (input 3, Y's shape), then LayerNorm over the last dim
  // with gamma (input 4) and beta (input 5, optional), constants of [N].
  bool layer_norm = false;
  // FusedMatMulResidual and FusedMatMulLayerNorm: input 3 (Y's shape) summed into the product.
  bool residual = false;
  // FusedLayerNormMatMul, and FusedGatedMatMul with a gamma: A is LayerNorm(X) (or RMSNorm(X),
  // `rms`) over its last dim (gamma input 3, beta input 4), normalized into a buffer of the
  // kernel's own.
  bool norm_a = false, rms = false;
  float epsilon = 1e-5f;
  std::vector<float> ln_gamma, ln_beta;
  // FusedGatedMatMul: the product [.., 2N] (dst) goes to a buffer, Y [.., N] is
  // gate_act(product[.., :N]) * product[.., N:]. The kernel may widen each half with zero
  // columns (gated_half_columns): the up half then starts at the padded width.
  bool gated = false;
  ref::Activation gate_act;
};

// ---- onednn_matmul_spec.cc

// The product's shapes and epilogue when this kernel can run the node, else nullopt (and the
// reason in *why).
std::optional<MatMulSpec> matmul_spec(const NodeInfo& info, MatMulOp op,
                                      std::string* why = nullptr);
// Gemm's, FusedGemm's and FusedGlobalPoolGemm's.
std::optional<MatMulSpec> gemm_spec(const NodeInfo& info, MatMulOp op, std::string* why = nullptr);

// ---- onednn_matmul_operands.cc

// y[r] = LayerNorm(x[r]) * gamma + beta for `rows` rows of n floats (y may be x); with `rms`,
// x[r] / sqrt(mean(x[r]^2) + eps) * gamma.
void normalize_rows(const float* x, float* y, int64_t rows, int64_t n, const float* gamma,
                    const float* beta, double eps, bool rms = false);

// y[i, j] = c[i or 0, j or 0] for y of [m, n] and c of [c0, c1], each 1 or the full size.
void broadcast_c(const float* c, int64_t c0, int64_t c1, int64_t m, int64_t n, float* y);

// out [N, C] = the mean over the spatial dims of x [N, C, spatial...], plain or NHWC.
// Accumulates in double (as the reference kernel does), in parallel over channel blocks.
void channel_means(const Tensor& x, Layout layout, Tensor& out);

// The columns per block along N of weights in oneDNN's layout `d` (1 when N is not blocked).
int64_t n_block(const dnnl::memory::desc& d);

// [rows, 2 n] (or [2 n] for a bias) with each half widened to `half` columns by zeros.
Tensor pad_halves(const Tensor& t, int64_t n, int64_t half);

}  // namespace nnfuse::onednn
