// The quantized convolutions on the exact integer GEMM (int8_gemm.h):
//   cpu.conv_integer   ConvInteger(x, w, x_zero_point?, w_zero_point?) -> int32
//   cpu.qlinear_conv   QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B?): the
//                      sums plus the bias requantized in the reference's double arithmetic
//                      (kernels/ref/quant_conv.cc), as each block is computed
// 2-D convolutions (any group, stride, dilation and padding the reference's geometry gives) of
// plain NCHW 8-bit input with a constant weight, its zero point one value or one per output
// channel. Per image and group, blocks of output pixels are gathered (im2col) into int16 rows
// less x's zero point (padding gives 0, as the reference's does), multiplied by the group's
// packed weights, and written back as channels of the NCHW output.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_quant_util.h"
#include "kernels/cpu/int8_gemm.h"
#include "kernels/ref/nn_internal.h"
#include "kernels/ref/quant_internal.h"

namespace nnfuse::cpu {
namespace {

constexpr int64_t kPixelBlock = 48;  // output pixels per task

struct ConvPorts {
  size_t w, x_zero, w_zero;
};
ConvPorts conv_ports(const Node& n) {
  return n.is(Op::kQLinearConv) ? ConvPorts{3, 2, 5} : ConvPorts{1, 2, 3};
}
constexpr size_t kXScale = 1, kWScale = 4, kYScale = 6, kYZero = 7, kBias = 8;

// One value, or a vector of one per output channel (as the reference reads them).
bool per_channel(const Tensor& t, int64_t m) {
  return t.numel() == 1 || (t.rank() == 1 && t.dim(0) == m);
}

std::string quant_conv_declines(const NodeInfo& info) {
  const Node& n = info.node;
  const bool qlinear = n.is(Op::kQLinearConv);
  const ConvPorts p = conv_ports(n);
  if (!single_output(n) || !info.has_input(0) || !info.has_input(p.w)) return "not a plain node";
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (info.has_input(i) && input_layout(info, i) != Layout::kPlain) {
      return input_label(info, i) + " is not plain";
    }
  }
  if (!is_q8(info.input_dtype(0))) return input_label(info, 0) + " is not 8-bit";
  const Tensor* w = info.constant(p.w);
  if (!w || !is_q8(w->dtype()) || w->rank() != 4) return "the weight is not a constant 4-D tensor";
  const std::optional<Dims> x = info.input_shape(0);
  if (x && x->size() != 4) return "not a 2-D convolution";
  if (info.has_input(p.x_zero) &&
      (!known_one_value(info, p.x_zero) || info.input_dtype(p.x_zero) != info.input_dtype(0))) {
    return "x's zero point is not one value of x's type";
  }
  if (info.has_input(p.w_zero)) {
    const Tensor* z = info.constant(p.w_zero);
    if (!z || z->dtype() != w->dtype() || !per_channel(*z, w->dim(0))) {
      return "w's zero point is not a constant, one value or one per output channel";
    }
  }
  if (qlinear) {
    for (size_t i : {kXScale, kWScale, kYScale}) {
      if (info.input_dtype(i) != DType::kFloat32) return "a scale is not float32";
    }
    if (!known_one_value(info, kXScale) || !known_one_value(info, kYScale) ||
        !info.has_input(kYZero) || !known_one_value(info, kYZero) ||
        !is_q8(info.input_dtype(kYZero))) {
      return "x's or y's scale or zero point is not known to be one value";
    }
    const Tensor* ws = info.constant(kWScale);
    if (!ws || !per_channel(*ws, w->dim(0))) {
      return "w's scale is not a constant, one value or one per output channel";
    }
    const Tensor* wz = info.has_input(p.w_zero) ? info.constant(p.w_zero) : nullptr;
    if (wz && wz->shape() != ws->shape() && !(wz->numel() == 1 && ws->numel() == 1)) {
      return "w's scale and zero point differ in shape";  // the reference names the problem
    }
    if (info.has_input(kBias)) {
      const Tensor* b = info.constant(kBias);
      if (!b || b->dtype() != DType::kInt32 || b->rank() != 1 || b->numel() != w->dim(0)) {
        return "the bias is not a constant int32 per output channel";
      }
    }
  }
  if (w->dim(1) * w->dim(2) * w->dim(3) > 33000) return "over 33,000 terms a sum";
  return "";
}

class QuantConvKernel : public Kernel {
 public:
  explicit QuantConvKernel(const NodeInfo& info)
      : node_(info.node), opset_(info.opset), qlinear_(info.node.is(Op::kQLinearConv)) {
    const ConvPorts p = conv_ports(node_);
    const Tensor& w = *info.constant(p.w);
    m_ = w.dim(0);
    kernel_ = {w.dim(2), w.dim(3)};
    group_ = node_.attr_int("group", 1);
    const int64_t k = w.dim(1) * w.dim(2) * w.dim(3);
    const int64_t mg = group_ > 0 && m_ % group_ == 0 ? m_ / group_ : 0;
    const std::vector<int32_t> zero =
        info.has_input(p.w_zero) ? int_values(*info.constant(p.w_zero)) : std::vector<int32_t>{0};
    // Each group's weights as a K x Mg matrix (the transpose of its [Mg, K] rows).
    for (int64_t g = 0; g < group_ && mg > 0; ++g) {
      std::vector<int32_t> gz(static_cast<size_t>(mg));
      for (int64_t j = 0; j < mg; ++j) {
        gz[static_cast<size_t>(j)] =
            zero.size() == 1 ? zero[0] : zero[static_cast<size_t>(g * mg + j)];
      }
      auto pack = [&](auto tag) {
        using T = decltype(tag);
        std::vector<T> bt(static_cast<size_t>(k * mg));
        const T* src = w.data<T>() + g * mg * k;
        for (int64_t j = 0; j < mg; ++j) {
          for (int64_t r = 0; r < k; ++r) bt[static_cast<size_t>(r * mg + j)] = src[j * k + r];
        }
        panels_.push_back(int8::pack_b(bt.data(), k, mg, mg, gz));
      };
      if (w.dtype() == DType::kInt8) {
        pack(int8_t{});
      } else {
        pack(uint8_t{});
      }
    }
    if (qlinear_) {
      const Tensor& ws = *info.constant(kWScale);
      for (int64_t i = 0; i < ws.numel(); ++i) w_scale_.push_back(ws.data<float>()[i]);
      if (info.has_input(kBias)) {
        const Tensor& b = *info.constant(kBias);
        for (int64_t i = 0; i < b.numel(); ++i) bias_.push_back(b.int_at(i));
      }
    }
  }

  bool reads_input(size_t i) const override {
    const ConvPorts p = conv_ports(node_);
    return !(i == p.w || i == p.w_zero || (qlinear_ && (i == kWScale || i == kBias)));
  }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const ConvPorts p = conv_ports(node_);
    if (!is_q8(x.dtype()) || x.rank() != 4 || panels_.empty() ||
        x.dim(1) != panels_[0].k / (kernel_[0] * kernel_[1]) * group_) {
      return run_reference(node_, opset_, io);  // names the problem
    }
    const ref::WindowGeometry geo =
        ref::window_geometry(node_, {x.dim(2), x.dim(3)}, kernel_, /*ceil_mode=*/false);
    const int64_t n_img = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
    const int64_t oh = geo.out[0], ow = geo.out[1], pixels = oh * ow;
    const int64_t cg = c / group_, mg = m_ / group_, k = panels_[0].k, width = panels_[0].pairs * 2;
    const int32_t x_zero =
        io.has_input(p.x_zero) ? static_cast<int32_t>(io.in(p.x_zero).int_at(0)) : 0;
    double x_scale = 0, y_scale = 1;
    int64_t y_zero = 0;
    DType out_type = DType::kInt32;
    if (qlinear_) {
      x_scale = io.in(kXScale).data<float>()[0];
      y_scale = io.in(kYScale).data<float>()[0];
      y_zero = io.in(kYZero).int_at(0);
      out_type = io.in(kYZero).dtype();
    }
    Tensor& y = io.output(0, out_type, {n_img, m_, oh, ow});
    const int64_t blocks = (pixels + kPixelBlock - 1) / kPixelBlock;
    parallel_tasks(n_img * group_ * blocks, n_img * pixels * m_ * k, [&](int64_t t) {
      const int64_t img = t / (group_ * blocks), g = (t / blocks) % group_;
      const int64_t p0 = (t % blocks) * kPixelBlock, np = std::min(kPixelBlock, pixels - p0);
      std::vector<int16_t> rows(static_cast<size_t>(np * width), 0);
      std::vector<int32_t> sums(static_cast<size_t>(np), 0);
      gather(x, img, g * cg, cg, h, wd, geo, p0, np, x_zero, width, rows.data(), sums.data());
      std::vector<int32_t> acc(static_cast<size_t>(np * mg));
      int8::gemm(rows.data(), sums.data(), np, panels_[static_cast<size_t>(g)], 0, mg, acc.data(),
                 mg);
      for (int64_t j = 0; j < mg; ++j) {
        const int64_t ch = g * mg + j;
        const int64_t out_off = (img * m_ + ch) * pixels + p0;
        if (!qlinear_) {
          int32_t* py = y.data<int32_t>() + out_off;
          for (int64_t r = 0; r < np; ++r) py[r] = acc[static_cast<size_t>(r * mg + j)];
          continue;
        }
        const double ws = w_scale_[w_scale_.size() == 1 ? 0 : static_cast<size_t>(ch)];
        const int64_t b = bias_.empty() ? 0 : bias_[static_cast<size_t>(ch)];
        ref::dispatch_q8(out_type, node_.describe(), [&](auto tag) {
          using Q = decltype(tag);
          Q* py = y.data<Q>() + out_off;
          for (int64_t r = 0; r < np; ++r) {
            // The reference's steps: (sum + bias) times both scales, over y's scale, in double.
            const int64_t s = static_cast<int64_t>(acc[static_cast<size_t>(r * mg + j)]) + b;
            const double real = static_cast<double>(s) * x_scale * ws;
            py[r] = ref::quantize_value<Q>(real / y_scale, y_zero);
          }
        });
      }
    });
  }

 private:
  // im2col of output pixels [p0, p0 + np) of image `img`, input channels [c0, c0 + cg): each
  // pixel's row holds, channel by channel, its window's values less x's zero point (0 outside
  // the input), `width` values a row; `sums` gets each row's sum.
  static void gather(const Tensor& x, int64_t img, int64_t c0, int64_t cg, int64_t h, int64_t w,
                     const ref::WindowGeometry& geo, int64_t p0, int64_t np, int32_t x_zero,
                     int64_t width, int16_t* rows, int32_t* sums) {
    const int64_t ow = geo.out[1], kh = geo.kernel[0], kw = geo.kernel[1];
    auto fill = [&](auto tag) {
      using T = decltype(tag);
      const T* base = x.data<T>() + (img * x.dim(1) + c0) * h * w;
      for (int64_t r = 0; r < np; ++r) {
        const int64_t oy = (p0 + r) / ow, ox = (p0 + r) % ow;
        int16_t* row = rows + r * width;
        int32_t sum = 0;
        int64_t at = 0;
        for (int64_t ci = 0; ci < cg; ++ci) {
          const T* plane = base + ci * h * w;
          for (int64_t ky = 0; ky < kh; ++ky) {
            const int64_t iy = oy * geo.strides[0] - geo.pad_begin[0] + ky * geo.dilations[0];
            for (int64_t kx = 0; kx < kw; ++kx, ++at) {
              const int64_t ix = ox * geo.strides[1] - geo.pad_begin[1] + kx * geo.dilations[1];
              const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
              const int32_t v = inside ? static_cast<int32_t>(plane[iy * w + ix]) - x_zero : 0;
              row[at] = static_cast<int16_t>(v);
              sum += v;
            }
          }
        }
        sums[r] = sum;
      }
    };
    if (x.dtype() == DType::kInt8) {
      fill(int8_t{});
    } else {
      fill(uint8_t{});
    }
  }

  const Node& node_;
  int64_t opset_;
  bool qlinear_;
  int64_t m_ = 0, group_ = 1;
  Dims kernel_;
  std::vector<int8::PackedB> panels_;  // per group
  std::vector<float> w_scale_;
  std::vector<int64_t> bias_;
};

std::unique_ptr<Kernel> make_quant_conv(const NodeInfo& info) {
  return std::make_unique<QuantConvKernel>(info);
}

}  // namespace

void append_quant_conv_kernels(FactoryTable& t) {
  t.emplace_back("ConvInteger",
                 KernelFactory{"cpu.conv_integer", accepts_unless_declined<quant_conv_declines>,
                               nullptr, make_quant_conv, nullptr, quant_conv_declines});
  t.emplace_back("QLinearConv",
                 KernelFactory{"cpu.qlinear_conv", accepts_unless_declined<quant_conv_declines>,
                               nullptr, make_quant_conv, nullptr, quant_conv_declines});
}

}  // namespace nnfuse::cpu
