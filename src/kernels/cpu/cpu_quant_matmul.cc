// The quantized dense layers on the exact integer GEMM (int8_gemm.h):
//   cpu.matmul_integer            MatMulInteger(A, B, a_zero_point?, b_zero_point?) -> int32
//   cpu.matmul_integer_to_float   MatMulIntegerToFloat (nnfuse's, ops/quant.h): the int32 sums
//                                 dequantized, biased and activated in float32 as each block is
//                                 computed
//   cpu.qlinear_matmul            QLinearMatMul: the sums requantized as each block is computed,
//                                 in the reference's double arithmetic
//                                 (kernels/ref/quant_matmul.cc)
// B is a constant matrix [K, N] (packed once, with its zero points, one or one per column; its
// scale likewise); A is [..., M, K] (or [K]) of int8 or uint8 with one zero point (or, for
// MatMulInteger, one per row of a [M, K] A), and one scale; the output's scale and zero point
// are single values. Each run widens A's rows to int16 less their zero point, then blocks of
// rows by blocks of columns go to the threads.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_gated.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_quant_util.h"
#include "kernels/cpu/int8_gemm.h"
#include "kernels/ref/quant_internal.h"
#include "ops/quant.h"

namespace nnfuse::cpu {
namespace {

namespace q = ops::matmul_integer_to_float;

constexpr int64_t kRowBlock = 48;  // rows of A per task (a multiple of the GEMM's 4-row tile)
constexpr int64_t kColBlock = 64;  // columns per task (4 panels)

// What the kernel computes: MatMulInteger's int32 sums, MatMulIntegerToFloat's floats or
// QLinearMatMul's requantized 8-bit values.
enum class Mode { kInteger, kToFloat, kQLinear };
Mode mode_of(const Node& n) {
  return n.is(Op::kMatMulIntegerToFloat) ? Mode::kToFloat
         : n.is(Op::kQLinearMatMul)      ? Mode::kQLinear
                                         : Mode::kInteger;
}

// Where the node's inputs sit.
struct Ports {
  size_t b, a_zero, b_zero;
};
Ports ports_of(Mode m) {
  switch (m) {
    case Mode::kToFloat:
      return {q::kB, q::kAZero, q::kBZero};
    case Mode::kQLinear:
      return {3, 2, 5};  // a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zp
    case Mode::kInteger:
      break;
  }
  return {1, 2, 3};
}
constexpr size_t kQAScale = 1, kQBScale = 4, kQYScale = 6, kQYZero = 7;

// "" or why a per-column parameter (B's zero point or scale) of a product with n columns is not
// one value or one per column ([N] or [1, N]).
std::string per_column_reason(const Tensor& t, int64_t n, const char* what) {
  if (t.numel() == 1) return "";
  if (t.numel() == n && t.rank() >= 1 && t.shape().back() == n) return "";
  return std::string(what) + " of shape " + dims_str(t.shape()) +
         " is neither one value nor one "
         "per column";
}

std::string quant_matmul_declines(const NodeInfo& info) {
  const Node& n = info.node;
  const Mode mode = mode_of(n);
  const bool to_float = mode == Mode::kToFloat;
  const Ports p = ports_of(mode);
  if (!single_output(n) || !info.has_input(0) || !info.has_input(p.b)) return "not a plain node";
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (info.has_input(i) && input_layout(info, i) != Layout::kPlain) {
      return input_label(info, i) + " is not plain";
    }
  }
  if (!is_q8(info.input_dtype(0)))
    return input_label(info, 0) + " is " + dtype_name(info.input_dtype(0));
  const Tensor* b = info.constant(p.b);
  if (!b) return "B is not a constant";
  if (!is_q8(b->dtype()) || b->rank() != 2) return "B is not an 8-bit matrix";
  const int64_t cols = b->dim(1);
  const std::optional<Dims> a = info.input_shape(0);
  if (a && (a->empty() || a->back() != b->dim(0))) return "A's rows are not of B's length";
  if (info.has_input(p.a_zero)) {
    if (info.input_dtype(p.a_zero) != info.input_dtype(0)) return "A's zero point has another type";
    const std::optional<Dims> z = info.input_shape(p.a_zero);
    const bool one = z && numel_of(*z, 0, z->size()) == 1;
    const bool per_row =
        mode == Mode::kInteger && z && z->size() == 1 && a && a->size() == 2 && (*z)[0] == (*a)[0];
    if (!one && !per_row) return "A's zero point is not one value (or one per row of a matrix A)";
  }
  if (info.has_input(p.b_zero)) {
    const Tensor* z = info.constant(p.b_zero);
    if (!z) return "B's zero point is not a constant";
    if (z->dtype() != b->dtype()) return "B's zero point has another type";
    if (std::string why = per_column_reason(*z, cols, "B's zero point"); !why.empty()) return why;
  }
  if (mode == Mode::kQLinear) {
    for (size_t i : {kQAScale, kQBScale, kQYScale}) {
      if (info.input_dtype(i) != DType::kFloat32) return "a scale is not float32";
    }
    if (!known_one_value(info, kQAScale) || !known_one_value(info, kQYScale) ||
        !known_one_value(info, kQYZero) || !info.has_input(kQYZero) ||
        !is_q8(info.input_dtype(kQYZero))) {
      return "A's or Y's scale or zero point is not known to be one value";
    }
    const Tensor* bs = info.constant(kQBScale);
    if (!bs) return "B's scale is not a constant";
    if (std::string why = per_column_reason(*bs, cols, "B's scale"); !why.empty()) return why;
    const Tensor* bz = info.has_input(p.b_zero) ? info.constant(p.b_zero) : nullptr;
    if (bz && bz->shape() != bs->shape() && !(bz->numel() == 1 && bs->numel() == 1)) {
      return "B's scale and zero point differ in shape";  // the reference names the problem
    }
    // The reference sums in int64: int32 holds every sum below 33,000 terms of 255 * 255.
    if (b->dim(0) > 33000) return "K over 33,000 (sums could pass int32)";
  }
  if (to_float) {
    if (std::string why = ops::activation_reason(n); !why.empty()) return why;
    if (info.input_dtype(q::kAScale) != DType::kFloat32 ||
        info.input_dtype(q::kBScale) != DType::kFloat32) {
      return "a scale is not float32";
    }
    const std::optional<Dims> s = info.input_shape(q::kAScale);
    if (!s || numel_of(*s, 0, s->size()) != 1) return "A's scale is not known to be one value";
    const Tensor* bs = info.constant(q::kBScale);
    if (!bs) return "B's scale is not a constant";
    if (std::string why = per_column_reason(*bs, cols, "B's scale"); !why.empty()) return why;
    if (info.has_input(q::kBias)) {
      const Tensor* bias = info.constant(q::kBias);
      if (!bias || bias->dtype() != DType::kFloat32) return "the bias is not a float32 constant";
      // A single column's bias may be a scalar (found by the differential fuzzer: back() of
      // its empty shape crashed the planner).
      if (bias->numel() != cols || (bias->rank() > 0 && bias->shape().back() != cols))
        return "the bias is not one value per column";
    }
  }
  return "";
}

class QuantMatMulKernel : public Kernel {
 public:
  explicit QuantMatMulKernel(const NodeInfo& info)
      : node_(info.node), opset_(info.opset), mode_(mode_of(info.node)) {
    const Ports p = ports_of(mode_);
    const Tensor& b = *info.constant(p.b);
    const std::vector<int32_t> zero =
        info.has_input(p.b_zero) ? int_values(*info.constant(p.b_zero)) : std::vector<int32_t>{0};
    if (b.dtype() == DType::kInt8) {
      b_ = int8::pack_b(b.data<int8_t>(), b.dim(0), b.dim(1), b.dim(1), zero);
    } else {
      b_ = int8::pack_b(b.data<uint8_t>(), b.dim(0), b.dim(1), b.dim(1), zero);
    }
    if (mode_ == Mode::kQLinear) {
      const Tensor& bs = *info.constant(kQBScale);
      for (int64_t i = 0; i < bs.numel(); ++i) b_scale_.push_back(bs.data<float>()[i]);
    }
    if (mode_ == Mode::kToFloat) {
      act_ = ops::read_activation(node_);
      const Tensor& bs = *info.constant(q::kBScale);
      for (int64_t i = 0; i < bs.numel(); ++i) b_scale_.push_back(bs.data<float>()[i]);
      if (info.has_input(q::kBias)) {
        const Tensor& bias = *info.constant(q::kBias);
        bias_.assign(bias.data<float>(), bias.data<float>() + bias.numel());
      }
    }
  }

  bool reads_input(size_t i) const override {
    const Ports p = ports_of(mode_);
    if (i == p.b || i == p.b_zero) return false;
    if (mode_ == Mode::kQLinear) return i != kQBScale;
    return !(mode_ == Mode::kToFloat && (i == q::kBScale || i == q::kBias));
  }

  void run(KernelIO& io) override {
    const Tensor& a = io.in(0);
    const Ports p = ports_of(mode_);
    const int64_t k = b_.k, n = b_.n;
    if (!is_q8(a.dtype()) || a.rank() < 1 || a.shape().back() != k || k == 0)
      return run_reference(node_, opset_, io);
    Dims out = a.shape();
    out.back() = n;
    if (a.rank() == 1) out = {n};
    const int64_t rows = k == 0 ? 0 : a.numel() / k;
    std::vector<int32_t> a_zero = {0};
    if (io.has_input(p.a_zero)) {
      const Tensor& z = io.in(p.a_zero);
      if (z.dtype() != a.dtype() ||
          !(z.numel() == 1 ||
            (a.rank() == 2 && z.rank() == 1 && z.numel() == a.dim(0) && mode_ == Mode::kInteger))) {
        return run_reference(node_, opset_, io);  // names the problem
      }
      a_zero = int_values(z);
    }
    float a_scale = 0;
    if (mode_ == Mode::kToFloat) {
      const Tensor& s = io.in(q::kAScale);
      if (s.numel() != 1 || s.dtype() != DType::kFloat32) return run_reference(node_, opset_, io);
      a_scale = s.data<float>()[0];
    }
    const int64_t width = b_.pairs * 2;
    a16_.resize(static_cast<size_t>(rows * width));
    sums_.resize(static_cast<size_t>(rows));
    parallel_range(rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(k, 1)),
                   [&](int64_t r0, int64_t r1) {
                     if (a.dtype() == DType::kInt8) {
                       int8::pack_a(a.data<int8_t>() + r0 * k, r1 - r0, k, k, a_zero, r0,
                                    a16_.data() + r0 * width, sums_.data() + r0);
                     } else {
                       int8::pack_a(a.data<uint8_t>() + r0 * k, r1 - r0, k, k, a_zero, r0,
                                    a16_.data() + r0 * width, sums_.data() + r0);
                     }
                   });
    const int64_t row_blocks = (rows + kRowBlock - 1) / kRowBlock;
    const int64_t col_blocks = (n + kColBlock - 1) / kColBlock;
    if (mode_ == Mode::kQLinear) {
      const Tensor& as = io.in(kQAScale);
      const Tensor& ys = io.in(kQYScale);
      const Tensor& yz = io.in(kQYZero);
      if (as.numel() != 1 || ys.numel() != 1 || yz.numel() != 1 || !is_q8(yz.dtype())) {
        return run_reference(node_, opset_, io);  // names the problem
      }
      const double a_scale = as.data<float>()[0], y_scale = ys.data<float>()[0];
      const int64_t y_zero = yz.int_at(0);
      Tensor& y = io.output(0, yz.dtype(), out);
      parallel_tasks(row_blocks * col_blocks, rows * n * k, [&](int64_t t) {
        const int64_t r0 = (t / col_blocks) * kRowBlock, c0 = (t % col_blocks) * kColBlock;
        const int64_t nr = std::min(kRowBlock, rows - r0), c1 = std::min(n, c0 + kColBlock);
        alignas(64) int32_t acc[kRowBlock * kColBlock];
        int8::gemm(a16_.data() + r0 * width, sums_.data() + r0, nr, b_, c0, c1, acc, kColBlock);
        ref::dispatch_q8(yz.dtype(), node_.describe(), [&](auto tag) {
          using Q = decltype(tag);
          for (int64_t r = 0; r < nr; ++r) {
            Q* row = y.data<Q>() + (r0 + r) * n;
            for (int64_t c = c0; c < c1; ++c) {
              // The reference's steps: the sum times both scales, over Y's scale, in double.
              const double bs = b_scale_[b_scale_.size() == 1 ? 0 : static_cast<size_t>(c)];
              const double real = static_cast<double>(acc[r * kColBlock + c - c0]) * a_scale * bs;
              row[c] = ref::quantize_value<Q>(real / y_scale, y_zero);
            }
          }
        });
      });
      return;
    }
    if (mode_ == Mode::kInteger) {
      Tensor& y = io.output(0, DType::kInt32, out);
      int32_t* py = y.data<int32_t>();
      parallel_tasks(row_blocks * col_blocks, rows * n * k, [&](int64_t t) {
        const int64_t r0 = (t / col_blocks) * kRowBlock, c0 = (t % col_blocks) * kColBlock;
        int8::gemm(a16_.data() + r0 * width, sums_.data() + r0, std::min(kRowBlock, rows - r0), b_,
                   c0, std::min(n, c0 + kColBlock), py + r0 * n + c0, n);
      });
      return;
    }
    // The graph's float32 steps: the scales' product per column, then each sum times it.
    std::vector<float> scale(static_cast<size_t>(n));
    for (int64_t c = 0; c < n; ++c) {
      scale[static_cast<size_t>(c)] =
          a_scale * b_scale_[b_scale_.size() == 1 ? 0 : static_cast<size_t>(c)];
    }
    Tensor& y = io.output(0, DType::kFloat32, out);
    float* py = y.data<float>();
    parallel_tasks(row_blocks * col_blocks, rows * n * k, [&](int64_t t) {
      const int64_t r0 = (t / col_blocks) * kRowBlock, c0 = (t % col_blocks) * kColBlock;
      const int64_t nr = std::min(kRowBlock, rows - r0), c1 = std::min(n, c0 + kColBlock);
      alignas(64) int32_t acc[kRowBlock * kColBlock];
      int8::gemm(a16_.data() + r0 * width, sums_.data() + r0, nr, b_, c0, c1, acc, kColBlock);
      for (int64_t r = 0; r < nr; ++r) {
        epilogue(acc + r * kColBlock, scale.data() + c0,
                 bias_.empty() ? nullptr : bias_.data() + c0, py + (r0 + r) * n + c0, c1 - c0);
        if (act_.kind != ops::ActivationKind::kNone) {
          activation_row(act_, py + (r0 + r) * n + c0, c1 - c0);
        }
      }
    });
  }

 private:
  // y = float(acc) * scale [+ bias], each step rounded to float32 as the graph's ops round it.
  static void epilogue(const int32_t* acc, const float* scale, const float* bias, float* y,
                       int64_t cols) {
    if (bias) {
      for (int64_t c = 0; c < cols; ++c) y[c] = static_cast<float>(acc[c]) * scale[c] + bias[c];
    } else {
      for (int64_t c = 0; c < cols; ++c) y[c] = static_cast<float>(acc[c]) * scale[c];
    }
  }

  const Node& node_;
  int64_t opset_;
  Mode mode_;
  int8::PackedB b_;
  std::vector<float> b_scale_, bias_;
  ops::Activation act_;
  std::vector<int16_t> a16_;
  std::vector<int32_t> sums_;
};

std::unique_ptr<Kernel> make_quant_matmul(const NodeInfo& info) {
  return std::make_unique<QuantMatMulKernel>(info);
}

}  // namespace

void append_quant_matmul_kernels(FactoryTable& t) {
  t.emplace_back("MatMulInteger",
                 KernelFactory{"cpu.matmul_integer", accepts_unless_declined<quant_matmul_declines>,
                               nullptr, make_quant_matmul, nullptr, quant_matmul_declines});
  t.emplace_back(
      "MatMulIntegerToFloat",
      KernelFactory{"cpu.matmul_integer_to_float", accepts_unless_declined<quant_matmul_declines>,
                    nullptr, make_quant_matmul, nullptr, quant_matmul_declines});
  t.emplace_back("QLinearMatMul",
                 KernelFactory{"cpu.qlinear_matmul", accepts_unless_declined<quant_matmul_declines>,
                               nullptr, make_quant_matmul, nullptr, quant_matmul_declines});
}

}  // namespace nnfuse::cpu
