// Resize (opsets 11-17) on float32: nearest (every nearest_mode), linear and cubic
// (exclude_outside, cubic_coeff_a) over at most the last three axes, with the coordinate modes
// half_pixel, pytorch_half_pixel, align_corners, asymmetric and tf_half_pixel_for_nn. Plain
// layout, or channels-last 4-D input when N and C are kept: the output stays channels-last (a
// Resize between convolutions needs no reorder), except a graph output, written plain directly.
// Scales or sizes must be constants. tf_crop_and_resize (roi and extrapolation) is left to the
// reference kernel.
//
// Our own loop, not oneDNN's resampling primitive: that maps coordinates by half_pixel with
// F = out / in only and has no nearest_mode choice nor cubic, so most ONNX attribute sets would
// not match it. Shapes are static, so each axis's taps (input index and weight per output
// position, computed in double exactly as the reference kernel does) are built once at plan
// time. A run goes one output row at a time, in two separable passes: the row taps blend whole
// rows (contiguous and vectorized; skipped for a single tap of weight 1, as in nearest mode),
// and the last axis's taps gather within a row. Channels-last rows gather whole pixels. Plain
// rows, where gathers cost most, do the last axis first when that is cheaper (upsampling): each
// source row is resized once into a small per-thread cache and output rows blend cached rows.
// Nearest output is a pure copy, bit-equal to the reference; interpolation accumulates in float.
//
// The Plan is made in cpu_resize_plan.cc; this file runs it.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "kernels/cpu/batch_loop.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_resize_internal.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {
namespace {

using resize::make_plan;
using resize::Plan;
using resize::single_copy;

// dst[0, n) = sum_t w[t] * src[t][0, n) over `taps` rows.
NNFUSE_TARGET_CLONES void combine_rows(const float* const* src, const float* w, int64_t taps,
                                       int64_t n, float* dst) {
  if (taps == 2) {
    const float *a = src[0], *b = src[1];
    const float wa = w[0], wb = w[1];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dst[i] = wa * a[i] + wb * b[i];
    return;
  }
  const float* a = src[0];
  const float wa = w[0];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = wa * a[i];
  for (int64_t t = 1; t < taps; ++t) {
    const float* b = src[t];
    const float wb = w[t];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dst[i] += wb * b[i];
  }
}

// One output row of a plain tensor from its source row: dst[o] = sum_k w[k][o] * src[idx[k][o]].
NNFUSE_TARGET_CLONES void gather_cols(const float* src, const int32_t* idx, const float* w, int k,
                                      int64_t n, float* dst) {
  if (k == 1) {
#pragma omp simd
    for (int64_t o = 0; o < n; ++o) dst[o] = src[idx[o]];
  } else if (k == 2) {
#pragma omp simd
    for (int64_t o = 0; o < n; ++o) dst[o] = w[o] * src[idx[o]] + w[n + o] * src[idx[n + o]];
  } else {
#pragma omp simd
    for (int64_t o = 0; o < n; ++o) {
      dst[o] = w[o] * src[idx[o]] + w[n + o] * src[idx[n + o]] +
               w[2 * n + o] * src[idx[2 * n + o]] + w[3 * n + o] * src[idx[3 * n + o]];
    }
  }
}

// The channels-last form: pixels of `vec` channels, each combined channel-wise.
NNFUSE_TARGET_CLONES void gather_pixels(const float* src, const int32_t* idx, const float* w, int k,
                                        int64_t n, int64_t vec, float* dst) {
  for (int64_t o = 0; o < n; ++o) {
    float* d = dst + o * vec;
    if (k == 1) {
      std::memcpy(d, src + idx[o], static_cast<size_t>(vec) * sizeof(float));
      continue;
    }
    const float* s0 = src + idx[o];
    const float w0 = w[o];
#pragma omp simd
    for (int64_t c = 0; c < vec; ++c) d[c] = w0 * s0[c];
    for (int t = 1; t < k; ++t) {
      const float* s = src + idx[t * n + o];
      const float wt = w[t * n + o];
#pragma omp simd
      for (int64_t c = 0; c < vec; ++c) d[c] += wt * s[c];
    }
  }
}

// [rows, cols] -> [cols, rows]: a channels-last row of pixels into the plain rows of its
// channels, `stride` apart.
NNFUSE_TARGET_CLONES void scatter_channels(const float* src, int64_t pixels, int64_t channels,
                                           float* dst, int64_t stride) {
  for (int64_t c = 0; c < channels; ++c) {
    float* d = dst + c * stride;
#pragma omp simd
    for (int64_t o = 0; o < pixels; ++o) d[o] = src[o * channels + c];
  }
}

class ResizeKernel : public Kernel {
 public:
  ResizeKernel(const NodeInfo& info, Plan p) : who_(info.node.describe()), p_(std::move(p)) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    if (x.shape() != p_.in_shape || x.layout() != p_.layout) {
      fail(ErrorKind::kRuntime, who_, ": input is ", dims_str(x.shape()), " ",
           layout_name(x.layout()), ", planned ", dims_str(p_.in_shape), " ",
           layout_name(p_.layout));
    }
    Tensor& y = io.output(0, DType::kFloat32, p_.out_shape, p_.out_layout);
    if (y.numel() == 0) return;
    const int64_t taps = static_cast<int64_t>(p_.row_w.size()) / p_.out_rows;
    const int64_t work = y.numel() * (p_.col_k + taps);
    const float* px = x.data<float>();
    float* py = y.data<float>();
    parallel_blocks(p_.outer * p_.out_rows, work,
                    [&](int64_t begin, int64_t end) { run_rows(px, py, begin, end); });
  }

 private:
  // Output rows [begin, end) of the [outer * out_rows] rows.
  void run_rows(const float* px, float* py, int64_t begin, int64_t end) const {
    const int64_t in_len = p_.in_cols * p_.vec, out_len = p_.out_cols * p_.vec;
    const bool to_plain = p_.layout == Layout::kNHWC && p_.out_layout == Layout::kPlain;
    std::vector<float> tmp(static_cast<size_t>(in_len)), row_out;
    if (to_plain) row_out.resize(static_cast<size_t>(out_len));
    std::vector<const float*> rows;
    RowCache cache(p_.cache_rows, p_.out_cols);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t plane = t / p_.out_rows, row = t % p_.out_rows;
      float* dst = to_plain ? row_out.data() : py + t * out_len;
      const bool repeat = p_.row_repeats[static_cast<size_t>(row)] && t > begin;
      if (repeat && !to_plain) {
        std::memcpy(dst, dst - out_len, static_cast<size_t>(out_len) * sizeof(float));
        continue;
      }
      const float* base = px + plane * p_.in_rows * in_len;
      const size_t b = static_cast<size_t>(p_.row_begin[static_cast<size_t>(row)]);
      const size_t e = static_cast<size_t>(p_.row_begin[static_cast<size_t>(row) + 1]);
      if (repeat) {
        // row_out still holds the previous row's pixels.
      } else if (single_copy(p_, row)) {
        resize_cols(base + p_.row_src[b] * in_len, dst);
      } else if (p_.cache_rows > 0) {
        rows.clear();
        for (size_t i = b; i < e; ++i) {
          const int64_t src = plane * p_.in_rows + p_.row_src[i];
          float* r = cache.find(src);
          if (!r) resize_cols(base + p_.row_src[i] * in_len, r = cache.insert(src));
          rows.push_back(r);
        }
        combine_rows(rows.data(), p_.row_w.data() + b, static_cast<int64_t>(e - b), out_len, dst);
      } else {
        rows.clear();
        for (size_t i = b; i < e; ++i) rows.push_back(base + p_.row_src[i] * in_len);
        float* into = p_.col_identity ? dst : tmp.data();
        combine_rows(rows.data(), p_.row_w.data() + b, static_cast<int64_t>(e - b), in_len, into);
        if (!p_.col_identity) resize_cols(into, dst);
      }
      if (to_plain) {
        const int64_t plane_len = p_.out_rows * p_.out_cols;
        scatter_channels(dst, p_.out_cols, p_.vec,
                         py + plane * p_.vec * plane_len + row * p_.out_cols, plane_len);
      }
    }
  }

  // One row along the last axis.
  void resize_cols(const float* src, float* dst) const {
    if (p_.col_identity) {
      std::memcpy(dst, src, static_cast<size_t>(p_.out_cols * p_.vec) * sizeof(float));
    } else if (p_.vec == 1) {
      gather_cols(src, p_.col_src.data(), p_.col_w.data(), p_.col_k, p_.out_cols, dst);
    } else {
      gather_pixels(src, p_.col_src.data(), p_.col_w.data(), p_.col_k, p_.out_cols, p_.vec, dst);
    }
  }

  // Source rows already resized along the last axis. The least recently used is evicted:
  // holding twice an output row's taps, that is never one the current output row uses.
  class RowCache {
   public:
    RowCache(int64_t rows, int64_t len)
        : len_(len),
          keys_(static_cast<size_t>(rows), -1),
          used_(static_cast<size_t>(rows), 0),
          buf_(static_cast<size_t>(rows * len)) {}
    float* find(int64_t key) {
      for (size_t i = 0; i < keys_.size(); ++i) {
        if (keys_[i] == key) return slot(i);
      }
      return nullptr;
    }
    float* insert(int64_t key) {
      const size_t i =
          static_cast<size_t>(std::min_element(used_.begin(), used_.end()) - used_.begin());
      keys_[i] = key;
      return slot(i);
    }

   private:
    float* slot(size_t i) {
      used_[i] = ++clock_;
      return buf_.data() + static_cast<int64_t>(i) * len_;
    }
    int64_t len_;
    std::vector<int64_t> keys_;
    std::vector<uint64_t> used_;
    std::vector<float> buf_;
    uint64_t clock_ = 0;
  };

  std::string who_;
  Plan p_;
};

std::string resize_declines(const NodeInfo& info) {
  std::string why;
  if (!make_plan(info, &why) && why.empty()) why = "does not support this configuration";
  return why;
}

std::unique_ptr<Kernel> resize_create(const NodeInfo& info) {
  std::string why;
  std::optional<Plan> p = make_plan(info, &why);
  if (!p) fail(ErrorKind::kInternal, info.node.describe(), ": cpu.resize declines: ", why);
  return std::make_unique<ResizeKernel>(info, std::move(*p));
}

Layout resize_output_layout(const NodeInfo& info, size_t /*k*/) {
  std::optional<Plan> p = make_plan(info, nullptr);
  return p ? p->out_layout : Layout::kPlain;
}

KernelFactory resize_factory() {
  KernelFactory f{"cpu.resize", accepts_unless_declined<resize_declines>, resize_output_layout,
                  resize_create, nullptr};
  f.declines = resize_declines;
  return f;
}

// A Resize runs image by image only where it keeps the batch: scales with a first entry of 1
// (sizes would name the batch it was exported with).
std::string keeps_batch(const NodeInfo& info) {
  if (info.has_input(3)) {
    const Tensor* sizes = info.constant(3);
    if (!sizes || sizes->numel() != 0) return "sizes given: it names a batch";
  }
  const Tensor* scales = info.has_input(2) ? info.constant(2) : nullptr;
  if (!scales || scales->numel() == 0 || scales->double_at(0) != 1.0) {
    return "scales that do not keep the batch";
  }
  return "";
}

}  // namespace

void append_resize_kernels(FactoryTable& t) {
  t.emplace_back("Resize", resize_factory());
  // The batch known only at run time (Keypoint R-CNN's heatmaps of its detections).
  t.emplace_back("Resize", batch_loop_factory<resize_factory, 1u, keeps_batch>("cpu.resize_batch"));
}

}  // namespace nnfuse::cpu
