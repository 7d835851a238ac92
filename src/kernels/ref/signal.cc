// Reference kernels for signal processing (opset 17): the window functions HannWindow,
// HammingWindow and BlackmanWindow, DFT, STFT and MelWeightMatrix.
//
// Windows: `size` samples of w(n) for N = size (periodic, the default) or size - 1
// (symmetric): Hann 0.5 - 0.5 cos(2 pi n / N), Hamming 25/46 - 21/46 cos(2 pi n / N), Blackman
// 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N); output_datatype as the attribute says.
//
// DFT(input [batch, ..., n, ..., 1 or 2], dft_length?): the discrete Fourier transform of
// length L (dft_length, else n; the signal zero-padded or cut to it) along `axis` (default 1),
// real input as [..., 1] and complex as [..., 2]; `inverse` uses exp(+i...) and scales by 1/L,
// `onesided` keeps the first floor(L/2) + 1 bins. The output is complex, [..., 2].
//
// STFT(signal [batch, length, 1 or 2], frame_step, window?, frame_length?): frames of
// frame_length samples (the window's length without it) every frame_step samples, each
// multiplied by the window and transformed; output [batch, frames, bins, 2] with bins
// floor(frame_length/2) + 1 when onesided (the default).
//
// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
// [floor(dft_length/2) + 1, num_mel_bins] triangular filters with peak 1, their edges
// the first num_mel_bins + 2 of points spaced (mel(upper) - mel(lower)) / (num_mel_bins + 2)
// apart on the mel scale mel(f) = 2595 log10(1 + f/700) from mel(lower),
// mapped to DFT bins as floor((dft_length + 1) f / sample_rate).
#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

constexpr double kPi = std::numbers::pi;

// A tensor of `dtype` with the values `v` (rounded as a cast would).
Tensor of_type(DType dtype, const Dims& shape, const std::vector<double>& v,
               const std::string& what) {
  Tensor y(dtype, shape);
  ref::dispatch(dtype, what, [&](auto tag) {
    using T = decltype(tag);
    T* p = y.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
  });
  return y;
}

int64_t scalar_input(const KernelContext& ctx, size_t i, const char* name) {
  NNFUSE_CHECK(ctx.in(i).numel() == 1, ctx.node.describe(), ": ", name,
               " must hold one value, got shape ", dims_str(ctx.in(i).shape()));
  return ctx.in(i).int_at(0);
}

DType output_datatype(const Node& n) {
  return dtype_from_onnx(static_cast<int>(n.attr_int("output_datatype", 1)));
}

enum class Window { kHann, kHamming, kBlackman };

template <Window kW>
void run_window(KernelContext& ctx) {
  const int64_t size = scalar_input(ctx, 0, "size");
  NNFUSE_CHECK(size >= 0, ctx.node.describe(), ": size ", size, " is negative");
  const bool periodic = ctx.node.attr_int("periodic", 1) != 0;
  const double n = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t k = 0; k < size; ++k) {
    const double x = 2 * kPi * static_cast<double>(k) / n;
    if constexpr (kW == Window::kHann) w[static_cast<size_t>(k)] = 0.5 - 0.5 * std::cos(x);
    if constexpr (kW == Window::kHamming) {
      w[static_cast<size_t>(k)] = 25.0 / 46 - 21.0 / 46 * std::cos(x);
    }
    if constexpr (kW == Window::kBlackman) {
      w[static_cast<size_t>(k)] = 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
    }
  }
  ctx.outputs[0] = of_type(output_datatype(ctx.node), {size}, w, ctx.node.describe());
}

std::string window_support(const Node& n, int64_t) {
  const DType t = output_datatype(n);
  if (t != DType::kFloat32 && t != DType::kFloat64 && !dtype_is_integer(t)) {
    return "output_datatype " + dtype_name(t) + " is not supported";
  }
  return ref::require_input_types(n, {DType::kInt32, DType::kInt64});
}

using Complex = std::complex<double>;

// The DFT of `x` (length L after padding or cutting), the first `bins` outputs.
std::vector<Complex> dft(const std::vector<Complex>& x, int64_t length, int64_t bins,
                         bool inverse) {
  std::vector<Complex> y(static_cast<size_t>(bins));
  const double sign = inverse ? 1 : -1;
  for (int64_t k = 0; k < bins; ++k) {
    Complex acc = 0;
    for (int64_t t = 0; t < length && t < static_cast<int64_t>(x.size()); ++t) {
      const double a =
          sign * 2 * kPi * static_cast<double>((k * t) % length) / static_cast<double>(length);
      acc += x[static_cast<size_t>(t)] * Complex(std::cos(a), std::sin(a));
    }
    y[static_cast<size_t>(k)] = inverse ? acc / static_cast<double>(length) : acc;
  }
  return y;
}

std::string dft_support(const Node& n, int64_t) {
  if (n.attr_int("onesided", 0) != 0 && n.attr_int("inverse", 0) != 0) {
    return "an inverse onesided DFT is not supported";
  }
  return ref::require_input_types(n, {DType::kFloat32, DType::kFloat64}, 0, 1);
}

void run_dft(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::string what = ctx.node.describe();
  NNFUSE_CHECK(x.rank() >= 3 && (x.dim(x.rank() - 1) == 1 || x.dim(x.rank() - 1) == 2), what,
               ": the input must be [batch, ..., 1 or 2], got ", dims_str(x.shape()));
  const int64_t axis = ref::normalize_axis(ctx.node.attr_int("axis", 1), x.rank() - 1, ctx.node);
  NNFUSE_CHECK(axis >= 1, what, ": axis 0 is the batch axis");
  const int64_t n = x.dim(axis), parts = x.dim(x.rank() - 1);
  const int64_t length = ctx.has_input(1) ? scalar_input(ctx, 1, "dft_length") : n;
  NNFUSE_CHECK(length >= 1, what, ": dft_length ", length, " is not positive");
  const bool inverse = ctx.node.attr_int("inverse", 0) != 0;
  const int64_t bins = ctx.node.attr_int("onesided", 0) != 0 ? length / 2 + 1 : length;
  Dims out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = bins;
  out_shape.back() = 2;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dim(i);
  for (int64_t i = axis + 1; i < x.rank() - 1; ++i) inner *= x.dim(i);
  std::vector<double> out(static_cast<size_t>(outer * bins * inner * 2));
  std::vector<Complex> sig(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      for (int64_t t = 0; t < n; ++t) {
        const int64_t at = ((o * n + t) * inner + in) * parts;
        sig[static_cast<size_t>(t)] =
            Complex(x.double_at(at), parts == 2 ? x.double_at(at + 1) : 0);
      }
      const std::vector<Complex> y = dft(sig, length, bins, inverse);
      for (int64_t k = 0; k < bins; ++k) {
        const size_t at = static_cast<size_t>(((o * bins + k) * inner + in) * 2);
        out[at] = y[static_cast<size_t>(k)].real();
        out[at + 1] = y[static_cast<size_t>(k)].imag();
      }
    }
  }
  ctx.outputs[0] = of_type(x.dtype(), out_shape, out, what);
}

void run_stft(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::string what = ctx.node.describe();
  NNFUSE_CHECK(x.rank() == 3 && (x.dim(2) == 1 || x.dim(2) == 2), what,
               ": the signal must be [batch, length, 1 or 2], got ", dims_str(x.shape()));
  const int64_t batch = x.dim(0), n = x.dim(1), parts = x.dim(2);
  const int64_t step = scalar_input(ctx, 1, "frame_step");
  const bool has_window = ctx.has_input(2);
  int64_t frame = has_window ? ctx.in(2).numel() : 0;
  if (ctx.has_input(3)) frame = scalar_input(ctx, 3, "frame_length");
  NNFUSE_CHECK(frame >= 1 && frame <= n && step >= 1, what, ": frame_length ", frame,
               " and frame_step ", step, " do not fit a signal of ", n, " samples");
  NNFUSE_CHECK(!has_window || ctx.in(2).numel() == frame, what, ": the window has ",
               ctx.in(2).numel(), " samples for frames of ", frame);
  const int64_t frames = (n - frame) / step + 1;
  const int64_t bins = ctx.node.attr_int("onesided", 1) != 0 ? frame / 2 + 1 : frame;
  std::vector<double> out(static_cast<size_t>(batch * frames * bins * 2));
  std::vector<Complex> sig(static_cast<size_t>(frame));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < frame; ++t) {
        const int64_t at = (b * n + f * step + t) * parts;
        const double w = has_window ? ctx.in(2).double_at(t) : 1.0;
        sig[static_cast<size_t>(t)] =
            w * Complex(x.double_at(at), parts == 2 ? x.double_at(at + 1) : 0);
      }
      const std::vector<Complex> y = dft(sig, frame, bins, false);
      for (int64_t k = 0; k < bins; ++k) {
        const size_t at = static_cast<size_t>(((b * frames + f) * bins + k) * 2);
        out[at] = y[static_cast<size_t>(k)].real();
        out[at + 1] = y[static_cast<size_t>(k)].imag();
      }
    }
  }
  ctx.outputs[0] = of_type(x.dtype(), {batch, frames, bins, 2}, out, what);
}

std::string stft_support(const Node& n, int64_t) {
  std::string why = ref::require_input_types(n, {DType::kFloat32, DType::kFloat64}, 0, 1);
  if (why.empty()) why = ref::require_input_types(n, {DType::kInt32, DType::kInt64}, 1, 1);
  if (why.empty()) why = ref::require_input_types(n, {DType::kFloat32, DType::kFloat64}, 2, 1);
  return why.empty() ? ref::require_input_types(n, {DType::kInt32, DType::kInt64}, 3, 1) : why;
}

void run_mel_weight_matrix(KernelContext& ctx) {
  const std::string what = ctx.node.describe();
  const int64_t mels = scalar_input(ctx, 0, "num_mel_bins");
  const int64_t dft_length = scalar_input(ctx, 1, "dft_length");
  const int64_t rate = scalar_input(ctx, 2, "sample_rate");
  NNFUSE_CHECK(mels >= 1 && dft_length >= 1 && rate >= 1, what,
               ": num_mel_bins, dft_length and sample_rate must be positive");
  NNFUSE_CHECK(ctx.in(3).numel() == 1 && ctx.in(4).numel() == 1, what,
               ": the edge frequencies must hold one value each");
  const double lo = ctx.in(3).double_at(0), hi = ctx.in(4).double_at(0);
  auto mel = [](double f) { return 2595 * std::log10(1 + f / 700); };
  const double mel_lo = mel(lo), step = (mel(hi) - mel_lo) / static_cast<double>(mels + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (mel_lo + static_cast<double>(i) * step) / 2595) - 1);
    edge[static_cast<size_t>(i)] =
        static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / rate));
  }
  const int64_t bins = dft_length / 2 + 1;
  std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    NNFUSE_CHECK(j >= 0 && j < bins, what, ": upper_edge_hertz lies past the last DFT bin");
    return w[static_cast<size_t>(j * mels + i)];
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t left = edge[static_cast<size_t>(i)], center = edge[static_cast<size_t>(i + 1)],
                  right = edge[static_cast<size_t>(i + 2)];
    if (center == left) {
      at(center, i) = 1;
    } else {
      for (int64_t j = left; j <= center; ++j) {
        at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
      }
    }
    for (int64_t j = center; j < right; ++j) {
      at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
    }
  }
  ctx.outputs[0] = of_type(output_datatype(ctx.node), {bins, mels}, w, what);
}

std::string mel_support(const Node& n, int64_t) {
  const DType t = output_datatype(n);
  if (t != DType::kFloat32 && t != DType::kFloat64 && !dtype_is_integer(t)) {
    return "output_datatype " + dtype_name(t) + " is not supported";
  }
  std::string why = ref::require_input_types(n, {DType::kInt32, DType::kInt64}, 0, 3);
  return why.empty() ? ref::require_input_types(n, {DType::kFloat32, DType::kFloat64}, 3, 2) : why;
}

}  // namespace

void append_signal_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"HannWindow", run_window<Window::kHann>, window_support});
  t.push_back({"HammingWindow", run_window<Window::kHamming>, window_support});
  t.push_back({"BlackmanWindow", run_window<Window::kBlackman>, window_support});
  t.push_back({"DFT", run_dft, dft_support});
  t.push_back({"STFT", run_stft, stft_support});
  t.push_back({"MelWeightMatrix", run_mel_weight_matrix, mel_support});
}

}  // namespace nnfuse
