// Dense products whose A has a number of rows known only at run time: a detector's box head
// over the regions its NMS kept, a mixture-of-experts layer's experts over the tokens routed to
// each, a product after NonZero or a data-dependent Reshape. MatMul, Gemm, FusedMatMul,
// FusedGemm, FusedLayerNormMatMul and FusedGatedMatMul with a constant B (and constant bias,
// gamma and beta) whose A has no static shape, which the prepacked-primitive kernels
// (onednn_matmul.cc) decline: the norm prologue (when there is one) normalizes A's rows into a
// buffer, the product runs through oneDNN's sgemm over the plain weights (no primitive is tied
// to a row count), then the bias and activation (or the gate) row by row. The buffers grow to
// the largest row count seen and are kept. A's last dim must match B at run time; MatMul's A
// may have any leading dims (they fold into rows), Gemm's is 2-D.
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_gated.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_kernels.h"
#include "kernels/cpu/onednn_matmul_internal.h"
#include "ops/dense.h"

namespace nnfuse::onednn {
namespace {

enum class RowsOp { kMatMul, kGemm, kFusedMatMul, kFusedGemm, kLayerNormMatMul, kGatedMatMul };

struct RowsSpec {
  int64_t k = 0, n = 0;
  bool gemm = false;            // A is 2-D
  const Tensor* wei = nullptr;  // the constant B as stored: [K, N], or [N, K] when trans_b
  float alpha = 1.0f;           // Gemm's, folded into the kernel's copy of B
  bool trans_b = false;         // Gemm's transB
  std::vector<float> bias;      // [N] (beta folded in), or empty
  ref::Activation act;
  bool gated = false;  // B is [K, 2N'] of gate columns then up columns: y = act(gate) * up
  // The norm prologue: A's rows normalized (LayerNorm, or RMSNorm with `rms`) before the product.
  bool norm = false, rms = false;
  float epsilon = 1e-5f;
  std::vector<float> gamma, beta;  // [K]; beta empty for RMSNorm or when absent
};

// A constant plain float32 of k values ([.., k]) into v.
bool constant_row(const NodeInfo& info, size_t i, int64_t k, std::vector<float>& v) {
  const Tensor* t = info.has_input(i) ? info.constant(i) : nullptr;
  if (!t || t->dtype() != DType::kFloat32 || t->layout() != Layout::kPlain || t->numel() != k ||
      t->rank() < 1 || t->shape().back() != k) {
    return false;
  }
  v.assign(t->data<float>(), t->data<float>() + k);
  return true;
}

// The bias of n values from constant `c` (n values, or one broadcast), times `scale`.
bool bias_row(const Tensor* c, int64_t n, float scale, std::vector<float>& out) {
  if (!c || c->dtype() != DType::kFloat32 || c->layout() != Layout::kPlain) return false;
  const bool row = c->numel() == n && (c->rank() == 1 || (c->rank() == 2 && c->dim(0) == 1));
  if (!row && c->numel() != 1) return false;
  out.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    out[static_cast<size_t>(j)] = scale * c->data<float>()[row ? j : 0];
  }
  return true;
}

std::optional<RowsSpec> rows_spec(const NodeInfo& info, RowsOp op, std::string* why) {
  const Node& node = info.node;
  RowsSpec s;
  s.gemm = op == RowsOp::kGemm || op == RowsOp::kFusedGemm;
  const bool norm_op = op == RowsOp::kLayerNormMatMul || op == RowsOp::kGatedMatMul;
  const bool fused = op == RowsOp::kFusedMatMul || op == RowsOp::kFusedGemm || norm_op;
  s.gated = op == RowsOp::kGatedMatMul;
  const size_t max_inputs = norm_op ? 5 : s.gemm || fused ? 3 : 2;
  if (node.num_outputs() != 1 || node.num_inputs() < 2 || node.num_inputs() > max_inputs) {
    return decline(why, node.num_inputs(), " inputs and ", node.num_outputs(), " outputs");
  }
  if (!info.has_input(0) || info.input_dtype(0) != DType::kFloat32) {
    return decline(why, input_label(info, 0), " is not float32");
  }
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    if (input_layout(info, i) != Layout::kPlain) {
      return decline(why, input_label(info, i), " arrives in layout ",
                     layout_name(input_layout(info, i)));
    }
  }
  const Tensor* b = info.constant(1);
  if (!b || b->dtype() != DType::kFloat32 || b->layout() != Layout::kPlain || b->rank() != 2 ||
      b->numel() == 0) {
    return decline(why, "B is not a constant non-empty float32 matrix");
  }
  const Shape& a = info.input(0)->shape();
  if (a.fully_known()) return decline(why, "A has a static shape (the prepacked kernels' case)");
  float beta = 1.0f;
  try {
    if (s.gemm) {
      if (node.attr_int("transA", 0) != 0) return decline(why, "transA");
      s.trans_b = node.attr_int("transB", 0) != 0;
      s.alpha = node.attr_float("alpha", 1.0f);
      beta = node.attr_float("beta", 1.0f);
    }
  } catch (const Error& e) {
    return decline(why, "attributes: ", e.what());
  }
  s.k = s.trans_b ? b->dim(1) : b->dim(0);
  s.n = s.trans_b ? b->dim(0) : b->dim(1);
  if (a.has_rank) {
    const size_t r = a.dims.size();
    if (r < 2 || (s.gemm && r != 2)) return decline(why, "A of rank ", r);
    if (a.dims.back().known() && a.dims.back().value != s.k) {
      return decline(why, "A ", a.str(), " and B ", dims_str(b->shape()), " do not multiply");
    }
  }
  if (s.gated && s.n % 2 != 0) return decline(why, "W ", dims_str(b->shape()), " has odd columns");
  if (norm_op && (info.has_input(3) || op == RowsOp::kLayerNormMatMul)) {
    if (!constant_row(info, 3, s.k, s.gamma) ||
        (info.has_input(4) && !constant_row(info, 4, s.k, s.beta))) {
      return decline(why, "gamma or beta is not a constant float32 row of K values");
    }
    try {
      s.epsilon = node.attr_float("epsilon", 1e-5f);
      s.rms = ops::read_norm_kind(node) == ops::NormKind::kRms;
    } catch (const Error& e) {
      return decline(why, "attributes: ", e.what());
    }
    if (s.rms && !s.beta.empty()) return decline(why, "a beta with an RMSNorm prologue");
    s.norm = true;
  }
  if (info.has_input(2) && beta != 0.0f && !bias_row(info.constant(2), s.n, beta, s.bias)) {
    return decline(why, "C or the bias ", input_label(info, 2),
                   " is not a constant float32 row of N values");
  }
  if (fused) {
    if (std::string r = ref::activation_reason(node); !r.empty()) return decline(why, r);
    s.act = ref::read_activation(node);
  }
  s.wei = b;
  return s;
}

class RowsMatMulKernel : public Kernel {
 public:
  RowsMatMulKernel(const NodeInfo& info, RowsSpec spec)
      : what_(info.node.describe()), s_(std::move(spec)), wei_(scaled(*s_.wei, s_.alpha)) {
    s_.wei = nullptr;  // the plan may release its constant: the kernel keeps wei_
  }

  bool reads_input(size_t i) const override { return i == 0; }

  void run(KernelIO& io) override {
    const Tensor& a = io.in(0);
    NNFUSE_CHECK(a.dtype() == DType::kFloat32 && a.layout() == Layout::kPlain, what_, ": A is ",
                 dtype_name(a.dtype()), " ", layout_name(a.layout()), ", not plain float32");
    NNFUSE_CHECK(a.rank() >= 2 && (!s_.gemm || a.rank() == 2) && a.shape().back() == s_.k, what_,
                 ": A ", dims_str(a.shape()), " does not multiply B of ", s_.k, " rows",
                 s_.gemm ? " (Gemm takes a 2-D A)" : "");
    const int64_t out_n = s_.gated ? s_.n / 2 : s_.n;
    Dims ys = a.shape();
    ys.back() = out_n;
    Tensor& y = io.output(0, DType::kFloat32, ys);
    const int64_t m = a.numel() / s_.k, n = s_.n;
    if (m == 0) return;
    const float* pa = a.data<float>();
    Buffers buf = take();
    if (s_.norm) {
      grow(buf.normed, m * s_.k);
      normalize_rows(pa, buf.normed.data(), m, s_.k, s_.gamma.data(),
                     s_.beta.empty() ? nullptr : s_.beta.data(), s_.epsilon, s_.rms);
      pa = buf.normed.data();
    }
    float* product = y.data<float>();
    if (s_.gated) {
      grow(buf.product, m * n);
      product = buf.product.data();
    }
    const dnnl_status_t st =
        dnnl_sgemm('N', s_.trans_b ? 'T' : 'N', m, n, s_.k, 1.0f, pa, s_.k, wei_.data<float>(),
                   s_.trans_b ? s_.k : n, 0.0f, product, n);
    if (st != dnnl_success) give(std::move(buf));
    NNFUSE_CHECK(st == dnnl_success, what_, ": sgemm failed (status ", static_cast<int>(st), ")");
    if (!s_.gated && s_.bias.empty() && s_.act.kind == ref::ActivationKind::kNone) {
      give(std::move(buf));
      return;
    }
    float* py = y.data<float>();
    cpu::parallel_range(m, std::max<int64_t>(1, cpu::kParallelGrain / n),
                        [&](int64_t lo, int64_t hi) {
                          for (int64_t r = lo; r < hi; ++r) {
                            float* row = product + r * n;
                            if (!s_.bias.empty()) {
                              for (int64_t j = 0; j < n; ++j)
                                row[j] += s_.bias[static_cast<size_t>(j)];
                            }
                            if (s_.gated) {
                              cpu::gated_row(s_.act, row, row + out_n, py + r * out_n, out_n);
                            } else {
                              cpu::activation_row(s_.act, row, n);
                            }
                          }
                        });
    give(std::move(buf));
  }

  void release_own_scratch() override {
    std::lock_guard<std::mutex> lock(mu_);
    free_.clear();
  }

 private:
  std::string what_;
  // The norm prologue's and the gated product's buffers: grown to the largest row count run,
  // then kept. Runs at once on several threads take a set each.
  struct Buffers {
    std::vector<float> normed;   // A's rows normalized
    std::vector<float> product;  // [gate | up]
  };
  static void grow(std::vector<float>& v, int64_t n) {
    if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  }
  Buffers take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return {};
    Buffers b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void give(Buffers b) {
    if (b.normed.empty() && b.product.empty()) return;
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(b));
  }

  RowsSpec s_;
  Tensor wei_;  // B with alpha folded in (B's own storage when alpha is 1)
  std::mutex mu_;
  std::vector<Buffers> free_;
};

template <RowsOp kOp>
std::string declines(const NodeInfo& info) {
  std::string why;
  return rows_spec(info, kOp, &why) ? "" : why;
}

template <RowsOp kOp>
std::unique_ptr<Kernel> create(const NodeInfo& info) {
  std::optional<RowsSpec> s = rows_spec(info, kOp, nullptr);
  if (!s) fail(ErrorKind::kInternal, info.node.describe(), ": not accepted by the row kernel");
  return std::make_unique<RowsMatMulKernel>(info, std::move(*s));
}

template <RowsOp kOp>
KernelFactory factory(const char* name) {
  return {name,         accepts_unless_declined<declines<kOp>>, nullptr, create<kOp>, nullptr,
          declines<kOp>};
}

}  // namespace

KernelFactory matmul_rows_factory() { return factory<RowsOp::kMatMul>("onednn.matmul_rows"); }
KernelFactory gemm_rows_factory() { return factory<RowsOp::kGemm>("onednn.gemm_rows"); }
KernelFactory fused_matmul_rows_factory() {
  return factory<RowsOp::kFusedMatMul>("onednn.fused_matmul_rows");
}
KernelFactory fused_gemm_rows_factory() {
  return factory<RowsOp::kFusedGemm>("onednn.fused_gemm_rows");
}
KernelFactory fused_ln_matmul_rows_factory() {
  return factory<RowsOp::kLayerNormMatMul>("onednn.fused_ln_matmul_rows");
}
KernelFactory fused_gated_matmul_rows_factory() {
  return factory<RowsOp::kGatedMatMul>("onednn.fused_gated_matmul_rows");
}

}  // namespace nnfuse::onednn
