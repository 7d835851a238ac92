// Reference normalizations: BatchNormalization (inference form), LayerNormalization,
// InstanceNormalization, LRN and MeanVarianceNormalization. Means and variances are taken in
// double, with the two-pass formula (mean first, then the mean squared deviation).
#include <algorithm>
#include <cmath>

#include "kernels/ref/nn_internal.h"
#include "kernels/ref/util.h"

namespace nnfuse::ref {
namespace {

int64_t numel_of(const Dims& shape, size_t from, size_t to) {
  return checked_numel(std::span<const int64_t>(shape.data() + from, to - from));
}

// Reads a per-channel parameter (shape [C]) as doubles.
std::vector<double> channel_param(const KernelContext& ctx, size_t i, int64_t channels,
                                  const char* what) {
  const Tensor& t = ctx.in(i);
  NNFUSE_CHECK(t.rank() == 1 && t.dim(0) == channels, ctx.node.describe(), ": ", what,
               " has shape ", dims_str(t.shape()), ", expected [", channels, "]");
  std::vector<double> v(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) v[c] = t.double_at(c);
  return v;
}

// ---- BatchNormalization: y = (x - mean) / sqrt(var + epsilon) * scale + B ----
//
// In training mode (opset 14+, training_mode 1) mean and var are the batch's own (over every
// axis but the channels; var the population variance), and the optional outputs 1 and 2 are
// the running statistics: input_mean * momentum + mean * (1 - momentum), and likewise var.

std::string support_batch_norm(const Node& node, int64_t opset) {
  std::string why = float_inputs_reason(node);
  if (!why.empty()) return why;
  const bool training = node.attr_int("training_mode", 0) != 0;
  if (training && opset < 14) return "training_mode before opset 14";
  for (size_t k = 1; k < node.num_outputs(); ++k) {
    if (node.output(k) && !training) {
      return "running-statistics outputs without training_mode (opset 9 and earlier)";
    }
  }
  return "";
}

void run_batch_norm(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  NNFUSE_CHECK(x.rank() >= 2, ctx.node.describe(), ": input must have rank >= 2 (N, C, ...),",
               " got shape ", dims_str(x.shape()));
  const int64_t n = x.dim(0), c = x.dim(1), inner = numel_of(x.shape(), 2, x.shape().size());
  const std::vector<double> scale = channel_param(ctx, 1, c, "scale");
  const std::vector<double> bias = channel_param(ctx, 2, c, "B");
  const std::vector<double> input_mean = channel_param(ctx, 3, c, "mean");
  const std::vector<double> input_var = channel_param(ctx, 4, c, "var");
  std::vector<double> mean = input_mean, var = input_var;
  const bool training = ctx.node.attr_int("training_mode", 0) != 0;
  const double eps = ctx.node.attr_float("epsilon", 1e-5f);
  Tensor y(x.dtype(), x.shape());
  dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
    if (training) {
      for (int64_t ch = 0; ch < c; ++ch) {
        double s = 0, sq = 0;
        for (int64_t b = 0; b < n; ++b) {
          for (int64_t i = 0; i < inner; ++i)
            s += static_cast<double>(xd[(b * c + ch) * inner + i]);
        }
        const double count = static_cast<double>(n * inner);
        mean[ch] = s / count;
        for (int64_t b = 0; b < n; ++b) {
          for (int64_t i = 0; i < inner; ++i) {
            const double d = static_cast<double>(xd[(b * c + ch) * inner + i]) - mean[ch];
            sq += d * d;
          }
        }
        var[ch] = sq / count;
      }
    }
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        const double sd = std::sqrt(var[ch] + eps);
        const int64_t base = (b * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          double v = (static_cast<double>(xd[base + i]) - mean[ch]) / sd;
          yd[base + i] = static_cast<T>(v * scale[ch] + bias[ch]);
        }
      }
    }
    const double momentum = ctx.node.attr_float("momentum", 0.9f);
    for (size_t k = 1; k < 3 && k < ctx.outputs.size(); ++k) {
      const std::vector<double>& in = k == 1 ? input_mean : input_var;
      const std::vector<double>& cur = k == 1 ? mean : var;
      Tensor r(ctx.in(k + 2).dtype(), {c});
      dispatch_float(r.dtype(), ctx.node.describe(), [&](auto rtag) {
        using R = decltype(rtag);
        for (int64_t ch = 0; ch < c; ++ch) {
          r.data<R>()[ch] = static_cast<R>(in[ch] * momentum + cur[ch] * (1 - momentum));
        }
      });
      ctx.outputs[k] = std::move(r);
    }
  });
  ctx.outputs[0] = std::move(y);
}

// ---- LayerNormalization (opset 17): normalizes over dims [axis, rank) ----

std::string support_layer_norm(const Node& node, int64_t /*opset*/) {
  std::string why = float_inputs_reason(node);
  if (!why.empty()) return why;
  int64_t stash = node.attr_int("stash_type", 1);
  if (stash != 1) return "stash_type " + std::to_string(stash) + " is not supported";
  return "";
}

void run_layer_norm(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  const Tensor& scale = ctx.in(1);
  check_input_dtype(ctx, 1, x.dtype());
  check_input_dtype(ctx, 2, x.dtype());
  NNFUSE_CHECK(x.rank() >= 1, node.describe(), ": input must have rank >= 1");
  const size_t rank = x.shape().size();
  const size_t axis =
      static_cast<size_t>(normalize_axis(node.attr_int("axis", -1), x.rank(), node));
  const int64_t outer = numel_of(x.shape(), 0, axis), inner = numel_of(x.shape(), axis, rank);
  const double eps = node.attr_float("epsilon", 1e-5f);
  // Scale and B broadcast to X (numpy rules) without changing its shape.
  std::vector<Dims> strides;
  for (size_t i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    const Dims& s = ctx.in(i).shape();
    NNFUSE_CHECK(s.size() <= rank && broadcast_shapes(s, x.shape(), node) == x.shape(),
                 node.describe(), ": input ", i, " of shape ", dims_str(s),
                 " does not broadcast to ", dims_str(x.shape()));
    strides.push_back(broadcast_strides(s, x.shape()));
  }
  const bool has_bias = ctx.has_input(2);
  Dims stat_shape = x.shape();
  for (size_t i = axis; i < rank; ++i) stat_shape[i] = 1;
  Tensor y(x.dtype(), x.shape());
  Tensor mean_t(DType::kFloat32, stat_shape), inv_t(DType::kFloat32, stat_shape);
  std::vector<double> mean(static_cast<size_t>(outer)), inv(static_cast<size_t>(outer));
  dispatch_float(x.dtype(), node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    for (int64_t r = 0; r < outer; ++r) {
      const T* xr = xd + r * inner;
      double s = 0;
      for (int64_t i = 0; i < inner; ++i) s += static_cast<double>(xr[i]);
      const double mu = s / static_cast<double>(inner);
      double ss = 0;
      for (int64_t i = 0; i < inner; ++i) {
        const double dv = static_cast<double>(xr[i]) - mu;
        ss += dv * dv;
      }
      mean[r] = mu;
      inv[r] = 1.0 / std::sqrt(ss / static_cast<double>(inner) + eps);
      mean_t.data<float>()[r] = static_cast<float>(mu);
      inv_t.data<float>()[r] = static_cast<float>(inv[r]);
    }
    const T* sd = scale.data<T>();
    const T* bd = has_bias ? ctx.in(2).data<T>() : nullptr;
    T* yd = y.data<T>();
    for (BroadcastIter it(x.shape(), strides); !it.done(); it.next()) {
      const int64_t i = it.linear(), r = i / inner;
      double v = (static_cast<double>(xd[i]) - mean[r]) * inv[r];
      v *= static_cast<double>(sd[it.offset(0)]);
      if (bd) v += static_cast<double>(bd[it.offset(1)]);
      yd[i] = static_cast<T>(v);
    }
  });
  ctx.outputs[0] = std::move(y);
  if (ctx.wants_output(1)) ctx.outputs[1] = std::move(mean_t);
  if (ctx.wants_output(2)) ctx.outputs[2] = std::move(inv_t);
}

// ---- InstanceNormalization: per (n, c), normalize over the spatial dims ----

void run_instance_norm(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  NNFUSE_CHECK(x.rank() >= 3, ctx.node.describe(),
               ": input must have rank >= 3 (N, C, spatial...), got shape ", dims_str(x.shape()));
  const int64_t n = x.dim(0), c = x.dim(1), inner = numel_of(x.shape(), 2, x.shape().size());
  const std::vector<double> scale = channel_param(ctx, 1, c, "scale");
  const std::vector<double> bias = channel_param(ctx, 2, c, "B");
  const double eps = ctx.node.attr_float("epsilon", 1e-5f);
  Tensor y(x.dtype(), x.shape());
  dispatch_float(x.dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t p = 0; p < n * c; ++p) {
      const T* xp = x.data<T>() + p * inner;
      T* yp = y.data<T>() + p * inner;
      double s = 0;
      for (int64_t i = 0; i < inner; ++i) s += static_cast<double>(xp[i]);
      const double mu = s / static_cast<double>(inner);
      double ss = 0;
      for (int64_t i = 0; i < inner; ++i) {
        const double dv = static_cast<double>(xp[i]) - mu;
        ss += dv * dv;
      }
      const double sd = std::sqrt(ss / static_cast<double>(inner) + eps);
      const int64_t ch = p % c;
      for (int64_t i = 0; i < inner; ++i) {
        yp[i] = static_cast<T>((static_cast<double>(xp[i]) - mu) / sd * scale[ch] + bias[ch]);
      }
    }
  });
  ctx.outputs[0] = std::move(y);
}

// ---- LRN: y = x / (bias + alpha / size * sum of x^2 over the nearby channels) ^ beta ----

void run_lrn(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  NNFUSE_CHECK(x.rank() >= 2, node.describe(), ": input must have rank >= 2 (N, C, ...)");
  NNFUSE_CHECK(node.has_attr("size"), node.describe(), ": the size attribute is required");
  const int64_t size = node.attr_int("size", 1);
  NNFUSE_CHECK(size >= 1 && size <= kMaxGeometryValue, node.describe(), ": bad size ", size);
  const double alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f);
  const double bias = node.attr_float("bias", 1.0f);
  const int64_t n = x.dim(0), c = x.dim(1), inner = numel_of(x.shape(), 2, x.shape().size());
  const int64_t before = (size - 1) / 2, after = size - 1 - before;  // floor and ceil
  Tensor y(x.dtype(), x.shape());
  dispatch_float(x.dtype(), node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t lo = std::max<int64_t>(0, ch - before);
        const int64_t hi = std::min<int64_t>(c - 1, ch + after);
        for (int64_t i = 0; i < inner; ++i) {
          double sq = 0;
          for (int64_t q = lo; q <= hi; ++q) {
            const double v = static_cast<double>(xd[(b * c + q) * inner + i]);
            sq += v * v;
          }
          const int64_t at = (b * c + ch) * inner + i;
          const double den = std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
          yd[at] = static_cast<T>(static_cast<double>(xd[at]) / den);
        }
      }
    }
  });
  ctx.outputs[0] = std::move(y);
}

// ---- MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes` ----

void run_mvn(KernelContext& ctx) {
  const Node& node = ctx.node;
  const Tensor& x = ctx.in(0);
  Dims stat_shape = x.shape();
  for (int64_t a : node.attr_ints("axes", {0, 2, 3})) {
    stat_shape[static_cast<size_t>(normalize_axis(a, x.rank(), node))] = 1;
  }
  const int64_t stats = checked_numel(stat_shape);
  const double count =
      stats == 0 ? 0.0 : static_cast<double>(x.numel()) / static_cast<double>(stats);
  const std::vector<Dims> strides = {broadcast_strides(stat_shape, x.shape())};
  std::vector<double> mean(static_cast<size_t>(stats), 0.0), var(static_cast<size_t>(stats), 0.0);
  Tensor y(x.dtype(), x.shape());
  dispatch_float(x.dtype(), node.describe(), [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
    for (BroadcastIter it(x.shape(), strides); !it.done(); it.next()) {
      mean[it.offset(0)] += static_cast<double>(xd[it.linear()]);
    }
    for (double& m : mean) m /= count;
    for (BroadcastIter it(x.shape(), strides); !it.done(); it.next()) {
      const double dv = static_cast<double>(xd[it.linear()]) - mean[it.offset(0)];
      var[it.offset(0)] += dv * dv;
    }
    for (double& v : var) v = std::sqrt(v / count) + 1e-9;
    for (BroadcastIter it(x.shape(), strides); !it.done(); it.next()) {
      const int64_t i = it.linear();
      yd[i] = static_cast<T>((static_cast<double>(xd[i]) - mean[it.offset(0)]) / var[it.offset(0)]);
    }
  });
  ctx.outputs[0] = std::move(y);
}

std::string support_float(const Node& node, int64_t /*opset*/) { return float_inputs_reason(node); }

}  // namespace

void append_norm_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"BatchNormalization", run_batch_norm, support_batch_norm});
  t.push_back({"LayerNormalization", run_layer_norm, support_layer_norm});
  t.push_back({"InstanceNormalization", run_instance_norm, support_float});
  t.push_back({"LRN", run_lrn, support_float});
  t.push_back({"MeanVarianceNormalization", run_mvn, support_float});
}

}  // namespace nnfuse::ref
