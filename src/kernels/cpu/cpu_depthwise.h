// Depthwise convolution of the project's own, channels-last in and out: each channel convolved
// with its own k x k kernel (k 3 or 5, stride 1, any pads under k, undilated), with the bias and
// the activation applied as the outputs are written.
//
// MobileNet-style networks (MobileNetV2 and V3, EfficientNet, MnasNet) run one after every 1x1
// expansion. oneDNN 2.6 runs them on its brgemm-based depthwise kernel (brdgmm), which took 1.4
// to 2x this kernel's time on MobileNetV3's unstrided layers with their inputs in cache (AMD Zen
// 5, 2 threads): 672 channels on 14x14, 0.59x; 72 on 56x56, 0.67x; 120 on 28x28 (5x5), 0.65x;
// 960 on 7x7 (5x5), 0.74x. With the caches evicted first, 0.62-0.66x on 14x14 and 7x7 maps but
// 1.06-1.21x on 28x28 and 56x56 ones of few channels (which is why a conv's kernel is measured:
// conv_factories.cc). Strided layers are oneDNN's: this kernel's blocks read twice the input per
// output there and took 0.9-1.0x its time warm, 1.2-1.7x evicted.
//
// A block of 8 output pixels of one channel vector (4 below AVX-512) is computed at a time: the
// inputs of each input row it reads are loaded once into registers and serve every tap that
// reads them, the k x k weights come from L1. A block computes every channel before the next
// block starts, so its input pixels are read whole, in memory order. Blocks whose window reaches
// into the padding read zeros for the columns outside the image (a compile-time loop with a
// run-time test per column); the others read without a test. The threads split the output rows
// (all images' rows in one range) or, where that leaves them less even, the channels in vectors
// of 16.
//
// Channels run in vectors of the CPU's width (vector_width: 16 with AVX-512, 8 with AVX2 and FMA,
// else 4), then one of 8 (a multiple of 8 channels needs no partial vector), the last partial one
// loaded and stored by lanes. None, ReLU, Clip, HardSigmoid and HardSwish are applied in
// registers, all with the same instructions (cpu_vec.h: ClampForm); any other activation over each
// output row just written (cpu_gated.h: activation_row).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_vec.h"
#include "kernels/ref/fused.h"

namespace nnfuse::cpu {

struct DepthwiseGeometry {
  int64_t n = 1, c = 0, h = 0, w = 0;  // input [n, h, w, c] (NHWC)
  int64_t oh = 0, ow = 0;              // output [n, oh, ow, c]
  int64_t k = 3, stride = 1;           // k x k kernel, the same stride along both axes (1)
  int64_t pad_t = 0, pad_l = 0;        // leading pads; trailing ones follow from oh and ow
};

// "" when the kernel computes this geometry, else why not (3x3 and 5x5 kernels, stride 1, pads
// from 0 to k - 1 on every side, no empty dimension).
std::string depthwise_declines(const DepthwiseGeometry& g);

class DepthwiseConv {
 public:
  // weights: [c, 1, k, k]; bias: [c] or null. A run uses up to `threads` threads (0:
  // omp_get_max_threads() now).
  DepthwiseConv(const DepthwiseGeometry& g, const float* weights, const float* bias,
                ref::Activation act, int threads = 0);

  // y [n, oh, ow, c] from x [n, h, w, c]; y may not overlap x. Runs on omp_get_max_threads()
  // threads, at most the `threads` it was made for; on one inside a parallel region.
  void run(const float* x, float* y) const;

  // The vector width the run uses (16, 8 or 4 floats).
  int width() const { return width_; }

 private:
  DepthwiseGeometry g_;
  ref::Activation act_;
  bool in_registers_ = false;  // act_ has a clamp form (form_), applied as outputs are written
  ClampForm form_;
  int width_ = 4;
  int threads_ = 1;
  int64_t c_pad_ = 0;        // channels rounded up to 16: the weights' and bias's row length
  std::vector<float> wt_;    // [c_pad / 16][k * k][16]: the taps of each 16 channels, zero padded
  std::vector<float> bias_;  // [c_pad]
};

}  // namespace nnfuse::cpu
