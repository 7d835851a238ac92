// oneDNN MatMul (numpy semantics: 1-D operands promoted, batch dims broadcast) and Gemm
// (alpha * A' * B' + beta * C) through dnnl::matmul, which on AVX-512 runs the brgemm kernels
// and measured as fast as or faster than dnnl_sgemm on BERT-base shapes with 2 threads.
// A constant B is prepacked once into the primitive's blocked layout. When B has no batch
// dims of its own (BERT's dense layers: [.., M, K] x [K, N]) A's leading dims fold into M.
//
// The fused ops of ai.nnfuse run through the same primitive: FusedMatMul and FusedGemm with
// their activation as eltwise post-ops (FusedMatMul's [N] bias as the primitive's bias), and
// FusedGlobalPoolGemm as per-channel means of X (plain or NHWC) into a buffer of its own,
// then the Gemm, in one kernel. FusedMatMulLayerNorm (a transformer's output projection,
// residual and LayerNorm) is the product with its bias and the residual as a sum post-op
// (the residual copied into Y first, unless Y is its storage), then LayerNorm over each row of
// Y in place while the rows are still in cache. FusedGatedMatMul (a gated FFN's gate and up
// projections) is the product with packed [gate | up] weights and bias into a buffer of the
// kernel's own, then act(gate) * up row by row into Y (cpu_gated.h). FusedMatMulResidual (a
// dense layer and the residual Add after it) is FusedMatMulLayerNorm without the LayerNorm.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>

#include "kernels/cpu/cpu_gated.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_kernels.h"

namespace nnfuse::onednn {
namespace {

using dnnl::memory;

constexpr int64_t kMaxDim = int64_t{1} << 40;
using cpu::kRowPanel;
using cpu::row_times_panels;

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
  memory::desc src, wei, dst;
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

bool valid_dims(const Dims& d) {
  for (int64_t x : d) {
    if (x < 1 || x > kMaxDim) return false;
  }
  return true;
}

// Plain float32 constant input i, or nullptr.
const Tensor* plain_constant(const NodeInfo& info, size_t i) {
  const Tensor* t = info.constant(i);
  return t && t->dtype() == DType::kFloat32 && t->layout() == Layout::kPlain ? t : nullptr;
}

// The fused op's activation into s; false when oneDNN cannot run it.
bool read_activation(const NodeInfo& info, MatMulSpec& s) {
  std::optional<ref::Activation> act = fused_activation(info.node);
  if (act) s.act = *act;
  return act.has_value();
}

// The norm's gamma (input `first`) and beta (input first + 1, optional), plain float32
// constants of n values ([.., n]), and its epsilon into s; false when they are not.
bool norm_params(const NodeInfo& info, size_t first, int64_t n, MatMulSpec& s) {
  auto row = [&](size_t i, std::vector<float>& v) {
    const Tensor* t = plain_constant(info, i);
    if (!t || t->numel() != n || t->rank() < 1 || t->shape().back() != n) return false;
    v.assign(t->data<float>(), t->data<float>() + n);
    return true;
  };
  if (!row(first, s.ln_gamma) || (info.has_input(first + 1) && !row(first + 1, s.ln_beta))) {
    return false;
  }
  try {
    s.epsilon = info.node.attr_float("epsilon", 1e-5f);
  } catch (const Error&) {
    return false;
  }
  return true;
}

// FusedMatMulLayerNorm's epilogue: a residual of Y's shape, constant gamma and beta of [N].
bool layer_norm_spec(const NodeInfo& info, int64_t n, MatMulSpec& s) {
  if (!static_f32_input(info, 3) || *known_shape(info, 3) != s.y_shape) return false;
  if (!norm_params(info, 4, n, s)) return false;
  if (s.act.kind != ref::ActivationKind::kNone) return false;
  s.layer_norm = s.residual = true;
  s.c_mode = s.c_mode == MatMulSpec::CMode::kBias ? s.c_mode : MatMulSpec::CMode::kNone;
  return true;
}

// The norm prologue: constant gamma and beta of [K] (no beta for RMSNorm, attribute norm "rms").
bool norm_a_spec(const NodeInfo& info, int64_t k, MatMulSpec& s) {
  if (!norm_params(info, 3, k, s)) return false;
  try {
    const std::string kind = info.node.attr_string("norm", "layer");
    if (kind != "layer" && kind != "rms") return false;
    s.rms = kind == "rms";
  } catch (const Error&) {
    return false;
  }
  if (s.rms && !s.ln_beta.empty()) return false;
  s.norm_a = true;
  return true;
}

// y[r] = LayerNorm(x[r]) * gamma + beta for `rows` rows of n floats (y may be x); with `rms`,
// x[r] / sqrt(mean(x[r]^2) + eps) * gamma.
void normalize_rows(const float* x, float* y, int64_t rows, int64_t n, const float* gamma,
                    const float* beta, double eps, bool rms = false) {
  cpu::parallel_range(
      rows, std::max<int64_t>(1, cpu::kParallelGrain / n), [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          const float* xr = x + r * n;
          const double mean = rms ? 0.0 : cpu::row_sum(xr, n) / static_cast<double>(n);
          const float m = static_cast<float>(mean);
          const double var = cpu::row_sq_dev(xr, n, m) / static_cast<double>(n);
          const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
          cpu::layer_norm_row(xr, y + r * n, n, m, inv, gamma, beta);
        }
      });
}

// The product's shapes and epilogue when this kernel can run the node, else nullopt (and the
// reason in *why).
std::optional<MatMulSpec> matmul_spec(const NodeInfo& info, MatMulOp op,
                                      std::string* why = nullptr) {
  const Node& node = info.node;
  const bool ln = op == MatMulOp::kMatMulLayerNorm;
  const bool gated = op == MatMulOp::kGatedMatMul;
  const bool norm_a = op == MatMulOp::kLayerNormMatMul || (gated && info.has_input(3));
  const bool res = op == MatMulOp::kMatMulResidual;
  const bool fused = op == MatMulOp::kFusedMatMul || ln || norm_a || gated || res;
  const size_t max_inputs = ln ? 6 : norm_a || gated ? 5 : res ? 4 : fused ? 3 : 2;
  const size_t min_inputs = ln ? 5 : norm_a || res ? 4 : 2;
  if (node.num_outputs() != 1 || node.num_inputs() < min_inputs || node.num_inputs() > max_inputs) {
    return decline(why, node.num_inputs(), " inputs and ", node.num_outputs(), " outputs");
  }
  for (size_t i = 0; i < 2; ++i) {
    if (std::string r = not_static_f32(info, i); !r.empty()) return decline(why, r);
  }
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    if (input_layout(info, i) != Layout::kPlain) {
      return decline(why, input_label(info, i), " arrives in layout ",
                     layout_name(input_layout(info, i)));
    }
  }
  MatMulSpec s;
  s.in_shape[0] = *known_shape(info, 0);
  s.in_shape[1] = *known_shape(info, 1);
  Dims as = s.in_shape[0], bs = s.in_shape[1];
  if (as.empty() || bs.empty() || !valid_dims(as) || !valid_dims(bs)) {
    return decline(why, "operands ", dims_str(as), " and ", dims_str(bs),
                   " (runs non-empty operands of rank 1 or more)");
  }
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) {
    return decline(why, "operands ", dims_str(s.in_shape[0]), " and ", dims_str(s.in_shape[1]),
                   " do not multiply");
  }
  Dims a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const size_t r = std::max(a_batch.size(), b_batch.size());
  a_batch.insert(a_batch.begin(), r - a_batch.size(), 1);
  b_batch.insert(b_batch.begin(), r - b_batch.size(), 1);
  Dims batch(r);
  bool b_shared = true;  // B is one matrix for every batch entry
  int64_t folded_m = m;
  for (size_t j = 0; j < r; ++j) {
    if (a_batch[j] != b_batch[j] && a_batch[j] != 1 && b_batch[j] != 1) {
      return decline(why, "batch dims ", dims_str(a_batch), " and ", dims_str(b_batch),
                     " do not broadcast");
    }
    batch[j] = std::max(a_batch[j], b_batch[j]);
    b_shared = b_shared && b_batch[j] == 1;
    folded_m *= a_batch[j];
    if (folded_m > kMaxDim) return decline(why, "more rows than oneDNN's dims hold");
  }
  s.y_shape = batch;
  if (!a_vec) s.y_shape.push_back(m);
  if (!b_vec) s.y_shape.push_back(n);
  if (gated) {
    if (b_vec || bs.size() != 2 || n % 2 != 0) {
      return decline(why, "W ", dims_str(s.in_shape[1]), " is not a [K, 2N] matrix");
    }
    s.gated = true;
    s.y_shape.back() = n / 2;
  }
  if (!output_shape_is(info, s.y_shape)) {
    return decline(why, "output shape differs from the computed ", dims_str(s.y_shape));
  }
  if (b_shared) {
    s.src = f32_desc({folded_m, k}, Tag::ab);
    s.dst = f32_desc({folded_m, n}, Tag::ab);
    s.wei = f32_desc({k, n}, Tag::ab);
  } else {
    Dims ad = a_batch, bd = b_batch, yd = batch;
    ad.insert(ad.end(), {m, k});
    bd.insert(bd.end(), {k, n});
    yd.insert(yd.end(), {m, n});
    if (yd.size() > 6) return decline(why, "a batched product of rank ", yd.size(), " (at most 6)");
    s.src = f32_desc(ad, plain_tag(ad.size()));
    s.wei = f32_desc(bd, plain_tag(bd.size()));
    s.dst = f32_desc(yd, plain_tag(yd.size()));
  }
  s.const_wei = plain_constant(info, 1);
  s.runtime_wei = s.const_wei == nullptr;
  if (gated) {
    // The activation applies to the gate half only, in the kernel's own epilogue.
    if (std::string r = ref::activation_reason(node); !r.empty()) return decline(why, r);
    s.gate_act = ref::read_activation(node);
  } else if (fused && !read_activation(info, s)) {
    return decline(why, "an activation oneDNN's post-ops do not compute exactly");
  }
  if (fused) {
    if (info.has_input(2)) {
      // A bias over the last dim ([N]), as the primitive's bias; not for a vector B, whose
      // product has no N dim.
      if (b_vec || !static_f32_input(info, 2) || *known_shape(info, 2) != Dims{n}) {
        return decline(why, "the bias ", input_label(info, 2), " is not float32 [", n, "]");
      }
      s.in_shape[2] = {n};
      s.c_mode = MatMulSpec::CMode::kBias;
      s.c_dims = {1, n};
      s.const_c = plain_constant(info, 2);
      s.runtime_c = s.const_c == nullptr;
    }
    if (ln && !layer_norm_spec(info, n, s)) {
      return decline(why, "the residual, gamma, beta or epsilon of its LayerNorm part");
    }
    if (norm_a && (a_vec || !norm_a_spec(info, k, s))) {
      return decline(why, "gamma, beta, epsilon or kind of its norm part, or a vector A");
    }
    if (res) {
      if (!static_f32_input(info, 3) || *known_shape(info, 3) != s.y_shape ||
          s.act.kind != ref::ActivationKind::kNone) {
        return decline(why, "the residual ", input_label(info, 3), " is not float32 ",
                       dims_str(s.y_shape), " (or an activation comes with it)");
      }
      s.residual = true;
    }
  }
  return s;
}

std::optional<MatMulSpec> gemm_spec(const NodeInfo& info, MatMulOp op, std::string* why = nullptr) {
  const Node& node = info.node;
  if (node.num_inputs() < 2 || node.num_inputs() > 3 || node.num_outputs() != 1) {
    return decline(why, node.num_inputs(), " inputs and ", node.num_outputs(), " outputs");
  }
  for (size_t i = 0; i < 2; ++i) {
    if (std::string r = not_static_f32(info, i); !r.empty()) return decline(why, r);
  }
  MatMulSpec s;
  s.pool = op == MatMulOp::kPoolGemm;
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    const Layout l = input_layout(info, i);
    if (l != Layout::kPlain && !(s.pool && i == 0 && l == Layout::kNHWC)) {
      return decline(why, input_label(info, i), " arrives in layout ", layout_name(l));
    }
  }
  if (op != MatMulOp::kGemm && !read_activation(info, s)) {
    return decline(why, "an activation oneDNN's post-ops do not compute exactly");
  }
  try {
    s.alpha = node.attr_float("alpha", 1.0f);
    s.beta = node.attr_float("beta", 1.0f);
    const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
    Dims a = *known_shape(info, 0);
    const Dims b = *known_shape(info, 1);
    if (s.pool) {
      // X [N, C, spatial...] pooled to A [N, C]; NHWC only for 4-D X.
      s.x_layout = input_layout(info, 0);
      if (ta || a.size() < 3 || !valid_dims(a) || (s.x_layout == Layout::kNHWC && a.size() != 4) ||
          checked_numel(a) > kMaxDim) {
        return decline(why, "pooled input ", dims_str(a), ta ? " with transA" : "");
      }
      s.in_shape[0] = a;
      a = {a[0], a[1]};
    }
    if (a.size() != 2 || b.size() != 2 || !valid_dims(a) || !valid_dims(b)) {
      return decline(why, "operands ", dims_str(a), " and ", dims_str(b), " (runs 2-D ones)");
    }
    const int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
    const int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
    if (k != kb) {
      return decline(why, "operands ", dims_str(a), " and ", dims_str(b), " do not multiply");
    }
    if (!s.pool) s.in_shape[0] = a;
    s.in_shape[1] = b;
    s.y_shape = {m, n};
    if (!output_shape_is(info, s.y_shape)) {
      return decline(why, "output shape differs from the computed ", dims_str(s.y_shape));
    }
    s.src = f32_desc({m, k}, ta ? Tag::ba : Tag::ab);
    s.wei = f32_desc({k, n}, tb ? Tag::ba : Tag::ab);
    s.dst = f32_desc({m, n}, Tag::ab);
    s.const_wei = plain_constant(info, 1);
    s.runtime_wei = s.const_wei == nullptr;
    if (s.runtime_wei && s.alpha != 1.0f) {  // alpha is folded into a constant B only
      return decline(why, "alpha ", s.alpha, " with a B that is not a constant");
    }
    if (info.has_input(2) && s.beta != 0.0f) {
      if (std::string r = not_static_f32(info, 2); !r.empty()) return decline(why, r);
      Dims c = *known_shape(info, 2);
      if (c.size() > 2) return decline(why, "C of rank ", c.size());
      s.in_shape[2] = c;
      c.insert(c.begin(), 2 - c.size(), 1);
      if ((c[0] != 1 && c[0] != m) || (c[1] != 1 && c[1] != n)) {
        return decline(why, "C ", dims_str(c), " does not broadcast to [", m, ", ", n, "]");
      }
      s.c_dims = c;
      s.const_c = plain_constant(info, 2);
      s.runtime_c = s.const_c == nullptr;
      if (s.runtime_c && s.beta != 1.0f) {  // beta is folded into a constant C only
        return decline(why, "beta ", s.beta, " with a C that is not a constant");
      }
      const bool row = c[0] == 1 && (c[1] == n || s.const_c);  // a constant scalar widens
      s.c_mode = row ? MatMulSpec::CMode::kBias : MatMulSpec::CMode::kSum;
    }
  } catch (const Error& e) {
    return decline(why, "attributes: ", e.what());
  }
  return s;
}

// The bias as a row broadcast over dst: [1, ..., 1, N] of dst's rank.
memory::desc bias_desc(const MatMulSpec& s) {
  if (s.c_mode != MatMulSpec::CMode::kBias) return memory::desc();
  Dims d(s.dst.dims().size(), 1);
  d.back() = s.dst.dims().back();
  return f32_desc(d, plain_tag(d.size()));
}

// A constant weight this large, read by a product of this few rows, is used where it is
// instead of being prepacked into oneDNN's blocked layout, so the weights are never held twice
// (the original and the packed copy while it is made): the product runs as oneDNN's sgemm
// (GEMV for one row) over the plain weights, bound by reading them once, as a prepacked one
// would be. Measured on VGG-11's classifier (25088x4096, batch 1, 2 threads): 12.8 ms, against
// 14.0 ms prepacked and 16.6 ms for the matmul primitive over the plain weights.
constexpr size_t kInPlaceWeightBytes = size_t{64} << 20;
constexpr int64_t kInPlaceWeightRows = 16;

// Row and column strides of a plain 2-D memory desc.
bool plain_strides(const memory::desc& d, int64_t* rs, int64_t* cs) {
  const dnnl_memory_desc_t& m = d.data;
  if (m.ndims != 2 || m.format_kind != dnnl_blocked || m.format_desc.blocking.inner_nblks != 0) {
    return false;
  }
  *rs = m.format_desc.blocking.strides[0];
  *cs = m.format_desc.blocking.strides[1];
  return true;
}

bool weights_in_place(const MatMulSpec& s) {
  if (s.runtime_wei || !s.const_wei || s.alpha != 1.0f || s.pool || s.norm_a || s.residual ||
      s.gated || s.c_mode == MatMulSpec::CMode::kSum || s.runtime_c) {
    return false;
  }
  if (s.const_wei->nbytes() < kInPlaceWeightBytes || s.y_shape.size() != 2 ||
      s.y_shape[0] > kInPlaceWeightRows) {
    return false;
  }
  int64_t rs = 0, cs = 0, wr = 0, wc = 0;
  return plain_strides(s.src, &rs, &cs) && cs == 1 && plain_strides(s.wei, &wr, &wc) &&
         (wr == 1 || wc == 1);
}

dnnl::matmul::primitive_desc make_pd(const MatMulSpec& s) {
  const memory::desc wei =
      s.runtime_wei ? s.wei : memory::desc(s.wei.dims(), memory::data_type::f32, Tag::any);
  dnnl::matmul::desc d(s.src, wei, bias_desc(s), s.dst);
  dnnl::post_ops ops;
  if (s.c_mode == MatMulSpec::CMode::kSum || s.residual) ops.append_sum(1.0f);
  append_activation(s.act, ops);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_post_ops(ops);
  return dnnl::matmul::primitive_desc(d, attr, engine());
}

// y[i, j] = c[i or 0, j or 0] for y of [m, n] and c of [c0, c1], each 1 or the full size.
void broadcast_c(const float* c, int64_t c0, int64_t c1, int64_t m, int64_t n, float* y) {
  for (int64_t i = 0; i < m; ++i) {
    const float* row = c + (c0 == 1 ? 0 : i * c1);
    float* out = y + i * n;
    if (c1 == 1) {
      std::fill(out, out + n, row[0]);
    } else {
      std::copy(row, row + n, out);
    }
  }
}

// out [N, C] = the mean over the spatial dims of x [N, C, spatial...], plain or NHWC.
// Accumulates in double (as the reference kernel does), in parallel over channel blocks.
void channel_means(const Tensor& x, Layout layout, Tensor& out) {
  constexpr int64_t kBlock = 256;
  const int64_t n = x.dim(0), c = x.dim(1), sz = x.numel() / (n * c);
  const float* px = x.data<float>();
  float* po = out.data<float>();
  const double inv = 1.0 / static_cast<double>(sz);
  if (layout == Layout::kNHWC) {
    const int64_t blocks = (c + kBlock - 1) / kBlock;
    cpu::parallel_tasks(n * blocks, x.numel(), [&](int64_t t) {
      const int64_t i = t / blocks, c0 = (t % blocks) * kBlock, cn = std::min(kBlock, c - c0);
      double acc[kBlock] = {};
      for (int64_t p = 0; p < sz; ++p) {
        const float* row = px + (i * sz + p) * c + c0;
        for (int64_t j = 0; j < cn; ++j) acc[j] += row[j];
      }
      for (int64_t j = 0; j < cn; ++j) po[i * c + c0 + j] = static_cast<float>(acc[j] * inv);
    });
    return;
  }
  cpu::parallel_tasks(n * c, x.numel(), [&](int64_t t) {
    const float* plane = px + t * sz;
    double acc = 0;
    for (int64_t p = 0; p < sz; ++p) acc += plane[p];
    po[t] = static_cast<float>(acc * inv);
  });
}

// The columns per block along N of weights in oneDNN's layout `d` (1 when N is not blocked).
int64_t n_block(const memory::desc& d) {
  const dnnl_memory_desc_t& m = d.data;
  if (m.ndims != 2 || m.format_kind != dnnl_blocked) return 1;
  int64_t b = 1;
  for (int i = 0; i < m.format_desc.blocking.inner_nblks; ++i) {
    if (m.format_desc.blocking.inner_idxs[i] == 1) b *= m.format_desc.blocking.inner_blks[i];
  }
  return b;
}

}  // namespace

// oneDNN splits a product of few rows over its column blocks, and a count that is not a
// multiple of the threads leaves a thread idle: at 128 rows x 512 on 2 threads, 2 x 1376
// columns (43 blocks of 64) took 0.996 ms and 2 x 1408 (44 blocks) 0.951 ms.
int64_t gated_half_columns(int64_t n, int64_t block, int threads) {
  if (block <= 1 || threads <= 1) return n;
  const int64_t blocks = (2 * n + block - 1) / block;
  if (blocks % threads == 0) return n;
  const int64_t want = (blocks + threads - 1) / threads * threads;
  if (want * block % 2 != 0) return n;
  const int64_t half = want * block / 2;
  return (half - n) * 16 <= n ? half : n;
}

namespace {

// [rows, 2 n] (or [2 n] for a bias) with each half widened to `half` columns by zeros.
Tensor pad_halves(const Tensor& t, int64_t n, int64_t half) {
  const int64_t rows = t.numel() / (2 * n);
  Tensor r(DType::kFloat32, t.rank() == 1 ? Dims{2 * half} : Dims{rows, 2 * half});
  const float* from = t.data<float>();
  float* to = r.data<float>();
  for (int64_t i = 0; i < rows; ++i) {
    std::copy(from + i * 2 * n, from + i * 2 * n + n, to + i * 2 * half);
    std::copy(from + i * 2 * n + n, from + (i + 1) * 2 * n, to + i * 2 * half + half);
  }
  return r;
}

class MatMulKernel : public Kernel {
 public:
  MatMulKernel(const NodeInfo& info, MatMulSpec spec) : what_(info.node.describe()), s_(spec) {
    ThreadScope threads(info.num_threads);
    if (weights_in_place(s_)) {
      init_gemv();
      return;
    }
    Tensor padded_wei, padded_c;
    guarded(what_, [&] {
      dnnl::matmul::primitive_desc pd = make_pd(s_);
      if (s_.gated) {
        half_ = s_.y_shape.back();
        const int64_t half =
            s_.runtime_wei || s_.runtime_c
                ? half_
                : gated_half_columns(half_, n_block(pd.weights_desc()), omp_get_max_threads());
        if (half != half_) {
          padded_wei = pad_halves(*s_.const_wei, half_, half);
          s_.const_wei = &padded_wei;
          s_.wei = f32_desc({s_.wei.dims()[0], 2 * half}, Tag::ab);
          s_.dst = f32_desc({s_.dst.dims()[0], 2 * half}, Tag::ab);
          if (s_.c_mode == MatMulSpec::CMode::kBias) {
            padded_c = pad_halves(*s_.const_c, half_, half);
            s_.const_c = &padded_c;
            s_.c_dims = {1, 2 * half};
          }
          half_ = half;
          pd = make_pd(s_);
        }
      }
      prim_ = dnnl::matmul(pd);
      src_ = memory(s_.src, engine(), DNNL_MEMORY_NONE);
      dst_ = memory(s_.dst, engine(), DNNL_MEMORY_NONE);
      args_[DNNL_ARG_SRC] = src_;
      args_[DNNL_ARG_DST] = dst_;
      if (s_.runtime_wei) {
        wei_ = memory(s_.wei, engine(), DNNL_MEMORY_NONE);
      } else {
        wei_ = prepack(scaled(*s_.const_wei, s_.alpha), s_.wei, pd.weights_desc(), owned_);
      }
      args_[DNNL_ARG_WEIGHTS] = wei_;
      if (s_.c_mode == MatMulSpec::CMode::kBias) {
        if (s_.runtime_c) {
          bias_ = memory(bias_desc(s_), engine(), DNNL_MEMORY_NONE);
        } else {
          const int64_t cols = s_.dst.dims().back();
          Tensor row(DType::kFloat32, {1, cols});
          broadcast_c(scaled(*s_.const_c, s_.beta).data<float>(), 1, s_.c_dims[1], 1, cols,
                      row.data<float>());
          bias_ = prepack(row, bias_desc(s_), pd.bias_desc(), owned_);
        }
        args_[DNNL_ARG_BIAS] = bias_;
      } else if (s_.c_mode == MatMulSpec::CMode::kSum && !s_.runtime_c) {
        c_ = scaled(*s_.const_c, s_.beta).clone();
      }
      init_row_product(pd);
      if (s_.pool) pooled_ = Tensor(DType::kFloat32, {s_.in_shape[0][0], s_.in_shape[0][1]});
      if (s_.norm_a) normed_ = Tensor(DType::kFloat32, s_.in_shape[0]);
      if (s_.gated) packed_ = Tensor(DType::kFloat32, s_.dst.dims());
    });
    s_.const_wei = s_.const_c = nullptr;  // not needed after prepacking
  }

  // Constant weights and bias (or C) are prepacked (or copied).
  bool reads_input(size_t i) const override {
    return (i != 1 || s_.runtime_wei) && (i != 2 || s_.runtime_c);
  }

  void run(KernelIO& io) override {
    check_input(io.in(0), s_.in_shape[0], s_.x_layout, what_, 0);
    if (s_.runtime_wei) check_input(io.in(1), s_.in_shape[1], Layout::kPlain, what_, 1);
    if (s_.runtime_c) {
      NNFUSE_CHECK(io.has_input(2), what_, ": input 2 is missing");
      check_input(io.in(2), s_.in_shape[2], Layout::kPlain, what_, 2);
    }
    Tensor& y = io.output(0, DType::kFloat32, s_.y_shape, Layout::kPlain);
    if (held_wei_.defined()) {
      run_gemv(io.in(0), y);
      return;
    }
    if (s_.residual) {
      run_residual(io, y);
      return;
    }
    if (s_.c_mode == MatMulSpec::CMode::kSum) {
      const Tensor& c = s_.runtime_c ? io.in(2) : c_;
      broadcast_c(c.data<float>(), s_.c_dims[0], s_.c_dims[1], s_.y_shape[0], s_.y_shape[1],
                  y.data<float>());
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (s_.pool) channel_means(io.in(0), s_.x_layout, pooled_);
    if (s_.norm_a) {
      const int64_t k = s_.in_shape[0].back();
      normalize_rows(io.in(0).data<float>(), normed_.data<float>(), normed_.numel() / k, k,
                     s_.ln_gamma.data(), s_.ln_beta.empty() ? nullptr : s_.ln_beta.data(),
                     s_.epsilon, s_.rms);
    }
    guarded(what_, [&] {
      src_.set_data_handle(handle(s_.pool ? pooled_ : s_.norm_a ? normed_ : io.in(0)));
      if (s_.runtime_wei) wei_.set_data_handle(handle(io.in(1)));
      if (s_.runtime_c && bias_) bias_.set_data_handle(handle(io.in(2)));
      dst_.set_data_handle(s_.gated ? packed_.raw() : y.raw());
      product(s_.c_mode == MatMulSpec::CMode::kSum);
    });
    if (s_.gated) {
      const int64_t n = s_.y_shape.back(), h = half_;
      const float* p = packed_.data<float>();
      float* py = y.data<float>();
      cpu::parallel_range(y.numel() / n, std::max<int64_t>(1, cpu::kParallelGrain / n),
                          [&](int64_t lo, int64_t hi) {
                            for (int64_t r = lo; r < hi; ++r) {
                              const float* g = p + 2 * r * h;
                              cpu::gated_row(s_.gate_act, g, g + h, py + r * n, n);
                            }
                          });
    }
  }

 private:
  // One row against constant weights prepacked in panels of 64 columns, without an activation:
  // the product is read straight from the panels (row_times_panels) instead of by the
  // primitive, whose brgemm kernel reads them at about a third of the bandwidth a single pass
  // gets (1 x 1024 x 1000, 2 threads, the weights in L3: 0.132 ms; a LLaMA decode step's
  // 1 x 512 x 2816 from memory: 0.23-0.31 ms, 20-25 GB/s against 41-47 a plain read gets).
  void init_row_product(const dnnl::matmul::primitive_desc& pd) {
    if (s_.runtime_wei || s_.runtime_c || s_.act.kind != ref::ActivationKind::kNone) return;
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < s_.y_shape.size(); ++i) rows *= s_.y_shape[i];
    const dnnl_memory_desc_t& w = pd.weights_desc().data;
    const dnnl_memory_desc_t& a = pd.src_desc().data;
    if (rows != 1 || w.ndims != 2 || w.format_kind != dnnl_blocked || w.offset0 != 0 ||
        a.format_kind != dnnl_blocked || a.format_desc.blocking.inner_nblks != 0 ||
        a.format_desc.blocking.strides[a.ndims - 1] != 1) {
      return;
    }
    const auto& b = w.format_desc.blocking;
    if (b.inner_nblks != 2 || b.inner_idxs[0] != 0 || b.inner_idxs[1] != 1 ||
        b.inner_blks[1] != kRowPanel || b.strides[0] != b.inner_blks[0] * kRowPanel ||
        b.strides[1] != w.padded_dims[0] * kRowPanel) {
      return;
    }
    if (s_.c_mode == MatMulSpec::CMode::kBias) {
      int64_t rs = 0, cs = 0;
      if (!plain_strides(pd.bias_desc(), &rs, &cs) || cs != 1) return;
      const float* p = static_cast<const float*>(bias_.get_data_handle());
      bias_row_.assign(p, p + w.dims[1]);
    }
    row_k_ = w.dims[0];
    row_n_ = w.dims[1];
    row_panel_ = b.strides[1];
  }

  // The product into dst_ (accumulating onto it for the sum post-op): the primitive, or the
  // one-row product.
  void product(bool accumulate) {
    if (row_k_ == 0) {
      execute(prim_, args_);
      return;
    }
    const float* x = static_cast<const float*>(src_.get_data_handle());
    const float* w = static_cast<const float*>(wei_.get_data_handle());
    float* y = static_cast<float*>(dst_.get_data_handle());
    const float* bias = bias_row_.empty() ? nullptr : bias_row_.data();
    const int64_t panels = (row_n_ + kRowPanel - 1) / kRowPanel;
    const int threads = static_cast<int>(std::min<int64_t>(omp_get_max_threads(), panels));
    if (threads <= 1 || row_k_ * row_n_ < cpu::kParallelGrain || omp_in_parallel()) {
      row_times_panels(x, row_k_, w, row_panel_, 0, panels, row_n_, bias, accumulate, y);
      return;
    }
#pragma omp parallel num_threads(threads)
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      row_times_panels(x, row_k_, w, row_panel_, panels * t / nt, panels * (t + 1) / nt, row_n_,
                       bias, accumulate, y);
    }
  }

  // weights_in_place: the kernel shares the constant's storage (so the plan may still drop the
  // graph's), and keeps the bias row and the sgemm operands' form.
  void init_gemv() {
    held_wei_ = *s_.const_wei;
    int64_t cs = 0, wr = 0, wc = 0;
    plain_strides(s_.src, &lda_, &cs);
    plain_strides(s_.wei, &wr, &wc);
    trans_b_ = wr == 1;  // B [K, N] stored as N rows of K
    ldb_ = trans_b_ ? wc : wr;
    if (s_.c_mode == MatMulSpec::CMode::kBias) {
      bias_row_.resize(static_cast<size_t>(s_.y_shape.back()));
      broadcast_c(scaled(*s_.const_c, s_.beta).data<float>(), 1, s_.c_dims[1], 1, s_.y_shape.back(),
                  bias_row_.data());
    }
    s_.const_wei = s_.const_c = nullptr;
  }

  // Y = act(A B + bias) through sgemm over the plain weights, then the epilogue row by row.
  void run_gemv(const Tensor& a, Tensor& y) {
    const int64_t m = s_.y_shape[0], n = s_.y_shape[1], k = s_.in_shape[0].back();
    const dnnl_status_t st =
        dnnl_sgemm('N', trans_b_ ? 'T' : 'N', m, n, k, 1.0f, a.data<float>(), lda_,
                   held_wei_.data<float>(), ldb_, 0.0f, y.data<float>(), n);
    NNFUSE_CHECK(st == dnnl_success, what_, ": sgemm failed (status ", static_cast<int>(st), ")");
    if (bias_row_.empty() && s_.act.kind == ref::ActivationKind::kNone) return;
    float* py = y.data<float>();
    cpu::parallel_range(m * n, cpu::kParallelGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const double v = py[i] + (bias_row_.empty() ? 0.0 : bias_row_[static_cast<size_t>(i % n)]);
        py[i] = static_cast<float>(ref::apply_activation(s_.act, v));
      }
    });
  }

  // Y = residual (a copy, or nothing when Y is its storage); Y += A B + bias; LayerNorm rows
  // (FusedMatMulLayerNorm).
  void run_residual(KernelIO& io, Tensor& y) {
    const Tensor& res = io.in(3);
    check_input(res, s_.y_shape, Layout::kPlain, what_, 3);
    NNFUSE_CHECK(y.raw() != io.in(0).raw(), what_, ": the output may not share A's storage");
    if (y.raw() != res.raw()) {
      const auto* from = static_cast<const std::byte*>(res.raw());
      auto* to = static_cast<std::byte*>(y.raw());
      cpu::parallel_range(static_cast<int64_t>(y.nbytes()), 4 * cpu::kParallelGrain,
                          [&](int64_t b, int64_t e) { std::memcpy(to + b, from + b, e - b); });
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      guarded(what_, [&] {
        src_.set_data_handle(handle(io.in(0)));
        if (s_.runtime_wei) wei_.set_data_handle(handle(io.in(1)));
        if (s_.runtime_c && bias_) bias_.set_data_handle(handle(io.in(2)));
        dst_.set_data_handle(y.raw());
        product(/*accumulate=*/true);
      });
    }
    if (!s_.layer_norm) return;
    const int64_t n = s_.y_shape.back();
    normalize_rows(y.data<float>(), y.data<float>(), y.numel() / n, n, s_.ln_gamma.data(),
                   s_.ln_beta.empty() ? nullptr : s_.ln_beta.data(), s_.epsilon);
  }

  std::string what_;
  MatMulSpec s_;
  dnnl::primitive prim_;
  OwnedBuffers owned_;  // under the prepacked weights and bias
  memory src_, wei_, bias_, dst_;
  Tensor c_;         // constant beta * C of the sum mode
  Tensor pooled_;    // FusedGlobalPoolGemm's A
  Tensor held_wei_;  // large constant weights used in place (weights_in_place)
  bool trans_b_ = false;
  int64_t lda_ = 0, ldb_ = 0;
  // The bias as one row of N, for the products computed without the primitive (init_gemv,
  // init_row_product).
  std::vector<float> bias_row_;
  int64_t row_k_ = 0, row_n_ = 0, row_panel_ = 0;  // the one-row product (init_row_product)
  Tensor normed_;                                  // FusedLayerNormMatMul's A
  Tensor packed_;  // FusedGatedMatMul's [gate | up] product, half_ columns each
  int64_t half_ = 0;
  std::unordered_map<int, memory> args_;
  std::mutex mu_;  // the memory objects are rebound on every run
};

template <auto kSpec, MatMulOp kOp>
std::string declines(const NodeInfo& info) {
  std::string why;
  std::optional<MatMulSpec> s = kSpec(info, kOp, &why);
  if (!s) return why;
  try {
    ThreadScope threads(info.num_threads);
    make_pd(*s);
    return "";
  } catch (const std::exception& e) {
    return std::string("oneDNN has no implementation for it (") + e.what() + ")";
  }
}

template <auto kSpec, MatMulOp kOp>
bool accepts(const NodeInfo& info) {
  return declines<kSpec, kOp>(info).empty();
}

template <auto kSpec, MatMulOp kOp>
std::unique_ptr<Kernel> create(const NodeInfo& info) {
  std::optional<MatMulSpec> s = kSpec(info, kOp, nullptr);
  if (!s) fail(ErrorKind::kInternal, info.node.describe(), ": not accepted by the oneDNN kernel");
  return std::make_unique<MatMulKernel>(info, *s);
}

// FusedMatMulLayerNorm's and FusedMatMulResidual's output may take the residual's storage (each
// element of it is read once, by the sum post-op, before being overwritten) unless the residual
// is also A.
int residual_in_place(const NodeInfo& info, size_t k) {
  if (k != 0 || !info.has_input(3) || info.input(3) == info.input(0)) return -1;
  return 3;
}

}  // namespace

template <auto kSpec, MatMulOp kOp>
KernelFactory factory(const char* name) {
  return {name, accepts<kSpec, kOp>, nullptr, create<kSpec, kOp>, nullptr, declines<kSpec, kOp>};
}

KernelFactory fused_layer_norm_matmul_factory() {
  return factory<matmul_spec, MatMulOp::kLayerNormMatMul>("onednn.fused_ln_matmul");
}

KernelFactory fused_matmul_layer_norm_factory() {
  KernelFactory f = factory<matmul_spec, MatMulOp::kMatMulLayerNorm>("onednn.fused_matmul_ln");
  f.in_place_input = residual_in_place;
  return f;
}

KernelFactory fused_matmul_residual_factory() {
  KernelFactory f = factory<matmul_spec, MatMulOp::kMatMulResidual>("onednn.fused_matmul_residual");
  f.in_place_input = residual_in_place;
  return f;
}

KernelFactory matmul_factory() { return factory<matmul_spec, MatMulOp::kMatMul>("onednn.matmul"); }

KernelFactory gemm_factory() { return factory<gemm_spec, MatMulOp::kGemm>("onednn.gemm"); }

KernelFactory fused_matmul_factory() {
  return factory<matmul_spec, MatMulOp::kFusedMatMul>("onednn.fused_matmul");
}

KernelFactory fused_gemm_factory() {
  return factory<gemm_spec, MatMulOp::kFusedGemm>("onednn.fused_gemm");
}

KernelFactory fused_gated_matmul_factory() {
  return factory<matmul_spec, MatMulOp::kGatedMatMul>("onednn.fused_gated_matmul");
}

KernelFactory pool_gemm_factory() {
  return factory<gemm_spec, MatMulOp::kPoolGemm>("onednn.pool_gemm");
}

}  // namespace nnfuse::onednn
