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
//
// What a node asks of the product is read in onednn_matmul_spec.cc; the work on the operands
// around it (normalized or pooled A, C, the gated halves' padding) is onednn_matmul_operands.cc.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>

#include "kernels/cpu/cpu_gated.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_kernels.h"
#include "kernels/cpu/onednn_matmul_internal.h"

namespace nnfuse::onednn {
namespace {

using cpu::kRowPanel;
using cpu::row_times_panels;
using dnnl::memory;

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
