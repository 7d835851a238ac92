// RoiAlign on float32: the reference kernel's sampling (kernels/ref/roi_align.h: each roi's
// sample positions and bilinear weights, computed in double once for all its channels), then
// every (roi, channel) plane of the output in parallel, accumulated in float. X plain
// [N, C, H, W], rois [R, 4] float32 (R may be known only at run time: a detector's regions),
// batch_indices int64 or int32; modes avg and max, as the reference kernel computes them.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/ref/roi_align.h"
#include "kernels/ref/util.h"

namespace nnfuse::cpu {
namespace {

std::string roi_align_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() != 3 || n.num_outputs() != 1 || !info.has_input(2)) {
    return "not a RoiAlign with X, rois and batch_indices";
  }
  if (std::string why = ref_unsupported_reason(n, info.opset); !why.empty()) return why;
  if (info.input_dtype(0) != DType::kFloat32 || info.input_dtype(1) != DType::kFloat32) {
    return "X and rois are not float32";
  }
  for (size_t i = 0; i < 3; ++i) {
    if (input_layout(info, i) != Layout::kPlain) return input_label(info, i) + " is not plain";
  }
  const Shape& x = info.input(0)->shape();
  if (x.has_rank && x.dims.size() != 4) return "X of rank " + std::to_string(x.dims.size());
  return "";
}

class RoiAlignKernel : public Kernel {
 public:
  explicit RoiAlignKernel(const NodeInfo& info)
      : what_(info.node.describe()), g_(ref::roi_align_geometry(info.node, info.opset)) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const Tensor& rois = io.in(1);
    const Tensor& bi = io.in(2);
    NNFUSE_CHECK(x.dtype() == DType::kFloat32 && x.layout() == Layout::kPlain && x.rank() == 4,
                 what_, ": X must be plain float32 [N, C, H, W], got ", dims_str(x.shape()));
    NNFUSE_CHECK(rois.dtype() == DType::kFloat32 && rois.rank() == 2 && rois.dim(1) == 4, what_,
                 ": rois must be float32 [num_rois, 4], got ", dims_str(rois.shape()));
    NNFUSE_CHECK(bi.rank() == 1 && bi.dim(0) == rois.dim(0), what_, ": batch_indices ",
                 dims_str(bi.shape()), " must be [num_rois] for rois ", dims_str(rois.shape()));
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), nr = rois.dim(0);
    NNFUSE_CHECK(nr == 0 || (h > 0 && w > 0), what_, ": X ", dims_str(x.shape()),
                 " has an empty spatial extent");
    Tensor& y = io.output(0, DType::kFloat32, {nr, c, g_.out_h, g_.out_w});
    if (nr == 0 || c == 0) return;
    const int64_t bins = g_.out_h * g_.out_w;
    // Each roi's samples (in double, as the reference kernel places them), then float weights.
    std::vector<std::vector<int64_t>> pos(static_cast<size_t>(nr));
    std::vector<std::vector<float>> wt(static_cast<size_t>(nr));
    std::vector<size_t> per_bin(static_cast<size_t>(nr));
    std::vector<float> inv_count(static_cast<size_t>(nr));
    std::vector<int64_t> batch(static_cast<size_t>(nr));
    const float* pr = rois.data<float>();
    std::vector<ref::RoiSample> samples;
    // Serial: the checks throw, and a roi's samples cost a channel's work.
    for (int64_t r = 0; r < nr; ++r) {
      const size_t ri = static_cast<size_t>(r);
      batch[ri] = bi.int_at(r);
      NNFUSE_CHECK(batch[ri] >= 0 && batch[ri] < n, what_, ": batch index ", batch[ri], " of roi ",
                   r, " is outside [0, ", n, ")");
      const double roi[4] = {pr[r * 4], pr[r * 4 + 1], pr[r * 4 + 2], pr[r * 4 + 3]};
      const double count = ref::roi_bin_samples(g_, roi, h, w, samples, &per_bin[ri], what_, r);
      inv_count[ri] = static_cast<float>(1.0 / count);
      pos[ri].resize(samples.size() * 4);
      wt[ri].resize(samples.size() * 4);
      for (size_t k = 0; k < samples.size(); ++k) {
        for (int j = 0; j < 4; ++j) {
          pos[ri][k * 4 + static_cast<size_t>(j)] = samples[k].pos[j];
          wt[ri][k * 4 + static_cast<size_t>(j)] = static_cast<float>(samples[k].w[j]);
        }
      }
    }
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const bool is_max = g_.is_max;
    parallel_tasks(nr * c, nr * c * bins * 16, [&](int64_t t) {
      const size_t ri = static_cast<size_t>(t / c);
      const int64_t ch = t % c;
      const float* plane = px + (batch[ri] * c + ch) * h * w;
      float* out = py + t * bins;
      const int64_t* p = pos[ri].data();
      const float* wk = wt[ri].data();
      const size_t pb = per_bin[ri];
      for (int64_t bin = 0; bin < bins; ++bin) {
        float acc = 0.0f;
        for (size_t k = 0; k < pb; ++k) {
          const size_t s = (static_cast<size_t>(bin) * pb + k) * 4;
          if (is_max) {
            float v = wk[s] * plane[p[s]];
            for (size_t j = 1; j < 4; ++j) v = std::max(v, wk[s + j] * plane[p[s + j]]);
            acc = k == 0 ? v : std::max(acc, v);
          } else {
            acc += wk[s] * plane[p[s]] + wk[s + 1] * plane[p[s + 1]] + wk[s + 2] * plane[p[s + 2]] +
                   wk[s + 3] * plane[p[s + 3]];
          }
        }
        out[bin] = is_max ? acc : acc * inv_count[ri];
      }
    });
  }

 private:
  std::string what_;
  ref::RoiAlignGeometry g_;
};

std::unique_ptr<Kernel> make_roi_align(const NodeInfo& info) {
  return std::make_unique<RoiAlignKernel>(info);
}

}  // namespace

void append_roi_align_kernels(FactoryTable& t) {
  t.emplace_back("RoiAlign",
                 KernelFactory{"cpu.roi_align", accepts_unless_declined<roi_align_declines>,
                               nullptr, make_roi_align, nullptr, roi_align_declines});
}

}  // namespace nnfuse::cpu
