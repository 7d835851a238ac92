// GridSample on float32, 4-D X [N, C, H, W] in plain layout (RAFT's correlation lookups, spatial
// transformers, flow warping): the taps and weights of a block of output points from the
// reference kernel's geometry (kernels/ref/grid_sample.h, in double), then every channel of the
// block as float sums over them; blocks of points across threads.
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/ref/grid_sample.h"

namespace nnfuse::cpu {
namespace {

constexpr int64_t kBlock = 256;  // output points whose taps are computed together

class GridSampleKernel : public Kernel {
 public:
  explicit GridSampleKernel(const NodeInfo& info) : node_(info.node), opset_(info.opset) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const Tensor& grid = io.in(1);
    if (x.rank() != 4 || grid.rank() != 4 || grid.dim(3) != 2 || grid.dim(0) != x.dim(0) ||
        x.dtype() != DType::kFloat32 || grid.dtype() != DType::kFloat32 ||
        x.layout() != Layout::kPlain || grid.layout() != Layout::kPlain) {
      return run_reference(node_, opset_, io);  // its checks name what is wrong
    }
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    const int64_t oh = grid.dim(1), ow = grid.dim(2), points = oh * ow;
    if ((h == 0 || w == 0) && n * points > 0) return run_reference(node_, opset_, io);
    Tensor& y = io.output(0, DType::kFloat32, {n, c, oh, ow});
    if (y.numel() == 0) return;
    const ref::GridSampleGeometry geo(node_, opset_, h, w);
    const float* px = x.data<float>();
    const float* pg = grid.data<float>();
    float* py = y.data<float>();
    const int64_t blocks = (points + kBlock - 1) / kBlock;
    parallel_tasks(n * blocks, n * points * c * 4, [&](int64_t task) {
      const int64_t b = task / blocks, p0 = task % blocks * kBlock;
      const int64_t p1 = std::min(points, p0 + kBlock);
      // Per point: its taps (index, weight), zeros dropped; a NaN point has none and n = -1.
      int32_t count[kBlock];
      int64_t idx[kBlock][16];
      float wt[kBlock][16];
      ref::GsTaps t;
      for (int64_t p = p0; p < p1; ++p) {
        const float* g = pg + (b * points + p) * 2;
        geo.taps(g[0], g[1], t);
        const int64_t q = p - p0;
        int32_t m = 0;
        for (int k = 0; k < t.n; ++k) {
          if (t.idx[k] < 0) continue;
          idx[q][m] = t.idx[k];
          wt[q][m] = static_cast<float>(t.w[k]);
          ++m;
        }
        count[q] = t.nan ? -1 : m;
      }
      for (int64_t ch = 0; ch < c; ++ch) {
        const float* plane = px + (b * c + ch) * h * w;
        float* out = py + (b * c + ch) * points;
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t q = p - p0;
          if (count[q] < 0) {
            out[p] = std::numeric_limits<float>::quiet_NaN();
            continue;
          }
          float v = 0;
          for (int32_t k = 0; k < count[q]; ++k) v += wt[q][k] * plane[idx[q][k]];
          out[p] = v;
        }
      }
    });
  }

 private:
  const Node& node_;
  int64_t opset_;
};

std::string grid_sample_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() != 2 || !single_output(n)) return "not a plain node";
  for (size_t i = 0; i < 2; ++i) {
    if (!info.has_input(i)) return input_label(info, i) + " is missing";
    if (info.input_dtype(i) != DType::kFloat32) {
      return input_label(info, i) + " is " + dtype_name(info.input_dtype(i)) + ", not float32";
    }
    if (input_layout(info, i) != Layout::kPlain) return input_label(info, i) + " is not plain";
  }
  if (const Value* x = info.input(0); x->shape().has_rank && x->shape().dims.size() != 4) {
    return "X of rank " + std::to_string(x->shape().dims.size()) + " (4-D only)";
  }
  return ref::grid_sample_attrs_problem(n, info.opset);
}

std::unique_ptr<Kernel> make_grid_sample(const NodeInfo& info) {
  return std::make_unique<GridSampleKernel>(info);
}

}  // namespace

void append_grid_sample_kernels(FactoryTable& t) {
  t.emplace_back("GridSample",
                 KernelFactory{"cpu.grid_sample", accepts_unless_declined<grid_sample_declines>,
                               nullptr, make_grid_sample, nullptr, grid_sample_declines});
}

}  // namespace nnfuse::cpu
