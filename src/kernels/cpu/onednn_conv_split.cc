// FusedConvSplit on oneDNN: the conv writes all of its output channels into an NHWC buffer in the
// run's scratch, and each output's part is copied out of it pixel by pixel while that buffer is
// still in cache (a Split of a conv's channels without a pass over memory of its own).
#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/onednn_conv.h"

namespace nnfuse::onednn {

using dnnl::memory;

namespace {

class ConvSplitKernel : public ConvBase {
 public:
  ConvSplitKernel(const NodeInfo& info, const ConvSpec& spec) : ConvBase(info, spec) {
    rows_pitch_.assign(s_.split.size(), 0);
    ThreadScope threads(info.num_threads);
    guarded(what_, [&] {
      dst_ = scratch_memory(cp_.pd.dst_desc(0));
      args_[DNNL_ARG_DST] = dst_;
      // A plain input is reordered into a buffer of our own (see ConvKernel), as is a subsampled
      // one.
      const bool plain_in = s_.in_layout == Layout::kPlain;
      const bool one_pixel = plain_in && checked_numel(s_.x_shape) == s_.x_shape[0] * s_.x_shape[1];
      bind_src((plain_in && !one_pixel && !cp_.nchw_in) || s_.subsample);
    });
  }

  // Concat in place: each part is copied anyway, so it is copied at the Concat's pitch.
  bool write_output_rows(size_t k, int64_t pitch) override {
    if (s_.out_layout != Layout::kNHWC || s_.y_shape.size() != 4 || k >= rows_pitch_.size() ||
        rows_pitch_[k] != 0 || pitch < s_.split[k]) {
      return false;
    }
    rows_pitch_[k] = pitch;
    return true;
  }

  // The conv into the scratch buffer dst_ ([N, H, W, C] of all the parts), then each pixel's
  // channels of part k copied into output k (at its pitch for a part of a Concat in place), the
  // threads over the pixels.
  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    check_input(x, s_.x_shape, s_.in_layout, what_, 0);
    for (size_t k = 0; k < rows_pitch_.size(); ++k) {
      NNFUSE_CHECK(rows_pitch_[k] == 0 || io.outputs[k].defined(), what_, ": output ", k,
                   " is a part of a Concat in place but has no planned storage");
    }
    std::vector<float*> outs;
    std::vector<int64_t> pitch;
    for (size_t k = 0; k < s_.split.size(); ++k) {
      Dims shape = s_.y_shape;
      shape[1] = s_.split[k];
      outs.push_back(io.output(k, DType::kFloat32, shape, s_.out_layout).data<float>());
      pitch.push_back(rows_pitch_[k] != 0 ? rows_pitch_[k] : s_.split[k]);
    }
    std::lock_guard<std::mutex> lock(mu_);
    bind_scratch(io.scratch);
    guarded(what_, [&] {
      bind_x(x);
      execute(prim_, args_);
    });
    const float* all = static_cast<const float*>(dst_.get_data_handle());
    const int64_t c = s_.y_shape[1], pixels = s_.y_shape[0] * s_.y_shape[2] * s_.y_shape[3];
    cpu::parallel_range(pixels, std::max<int64_t>(1, cpu::kParallelGrain / c),
                        [&](int64_t lo, int64_t hi) {
                          for (int64_t p = lo; p < hi; ++p) {
                            const float* from = all + p * c;
                            for (size_t k = 0; k < outs.size(); ++k) {
                              std::memcpy(outs[k] + p * pitch[k], from,
                                          static_cast<size_t>(s_.split[k]) * sizeof(float));
                              from += s_.split[k];
                            }
                          }
                        });
  }

 private:
  // Per output: the pitch of its rows as a part of a Concat in place, or 0.
  std::vector<int64_t> rows_pitch_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv_split_kernel(const NodeInfo& info, const ConvSpec& s) {
  return std::make_unique<ConvSplitKernel>(info, s);
}

}  // namespace nnfuse::onednn
