// Which MatMul, Gemm and fused products the oneDNN matmul kernel (onednn_matmul.cc) runs, and
// how: the operands' shapes and layouts, the bias or C, the activation and the fused parts
// (residual, LayerNorm, norm prologue, gated halves, pooled A) read from the node into a
// MatMulSpec, or the reason it declines.
#include <algorithm>
#include <optional>
#include <string>

#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_matmul_internal.h"

namespace nnfuse::onednn {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 40;

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

}  // namespace

std::optional<MatMulSpec> matmul_spec(const NodeInfo& info, MatMulOp op, std::string* why) {
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

std::optional<MatMulSpec> gemm_spec(const NodeInfo& info, MatMulOp op, std::string* why) {
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

}  // namespace nnfuse::onednn
