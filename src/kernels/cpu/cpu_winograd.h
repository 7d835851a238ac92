// Winograd F(4x4, 3x3) convolution of the project's own, channels-last in and out: an
// unstrided, undilated, ungrouped 3x3 conv computed as 36 matrix products of the transformed
// input tiles ([tiles, Cin]) with the transformed kernels ([Cin, Cout]): 2.25 multiplications
// per output instead of 9 (fewer by the tiles' overhang at the edges: a 14x14 output takes
// 16x16 of tiles).
//
// Unlike oneDNN's Winograd kernels it reads NHWC and writes NHWC (at any row pitch, so into a
// Concat's buffer) with no reorder into a blocked layout and back; it runs where oneDNN has no
// Winograd kernel (AVX2 and SSE2 machines: oneDNN's need AVX-512); and it reads the kernels as
// 3x3 ones, transforming them as it goes, so a network's weights cost no more memory traffic
// than on the direct algorithm (4x as many transformed weights, read from memory inside a
// network, made a 14x14 conv with a few hundred channels as slow as the direct one).
//
// Each thread transforms input tiles (B^T d B, vectors across channels) into V [36][tiles][Cin]
// of its own, then for each block of 2 vectors of output channels: the block's kernels (G g G^T,
// two rows of points at a time, into a buffer of 12 points), the products M[p] = V[p] U[p] in
// register tiles of up to 12 tiles by 2 vectors (AVX-512; 4 by 2 otherwise), and the output
// transform (A^T m A) with the bias, an optional residual and the activation, written into Y.
// The threads split the tiles where there are many and the blocks otherwise (see Part in the
// .cc). Accumulation is in float32; the error is about 1e-5 of the outputs' largest magnitude
// (cpu_winograd_test.cc bounds it against a double-precision conv), from the transforms'
// interpolation points 0, +-1 and +-2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/ref/fused.h"

namespace nnfuse::cpu {

struct WinogradGeometry {
  int64_t n = 1, cin = 0, h = 0, w = 0;  // input [n, h, w, cin] (NHWC)
  int64_t cout = 0, oh = 0, ow = 0;      // output [n, oh, ow, cout]
  int64_t pad_t = 0, pad_l = 0;          // leading pads; trailing ones follow from oh and ow
};

// "" when the kernel computes `act` on this CPU, else why not (it runs ReLU, LeakyReLU, Clip
// and none, on AVX-512, AVX2 or SSE2).
std::string winograd_declines(const ref::Activation& act);

class WinogradConv {
 public:
  // weights: [cout, cin, 3, 3]; bias: [cout] or null. A run uses up to `threads` threads (0:
  // omp_get_max_threads() now).
  WinogradConv(const WinogradGeometry& g, const float* weights, const float* bias,
               ref::Activation act, int threads = 0);

  // Bytes of scratch run() needs (a multiple of 64).
  size_t scratch_bytes() const;

  // y[n, oy, ox, c] at y + ((n * oh + oy) * ow + ox) * y_pitch + c; sum (dense NHWC, may be y
  // when y_pitch == cout) is added before the activation when given. scratch: scratch_bytes(),
  // 64-byte aligned. Runs on omp_get_max_threads() threads, at most the `threads` it was made for.
  void run(const float* x, float* y, int64_t y_pitch, const float* sum, std::byte* scratch) const;

  // The vector width the run uses (16, 8 or 4 floats).
  int width() const { return width_; }

 private:
  WinogradGeometry g_;
  ref::Activation act_;
  int width_ = 4;
  int threads_ = 1;  // the most threads a run uses: each has a part of the scratch
  int64_t tiles_h_ = 0, tiles_w_ = 0, tiles_ = 0;
  int64_t cin_pad_ = 0, cout_pad_ = 0;  // channels rounded up to the vector width
  int64_t chunk_ = 0;                   // the most tiles a thread transforms at once
  // Each thread's part of the scratch (at per_thread bytes apart): its V, its M of one block
  // of output channels and its transformed kernels (byte offsets), and the floats from one
  // point's matrix of V or M to the next. A point's matrix takes a cache line more than its
  // tiles, so the 36 points of one tile, which the transforms read or write together, fall in
  // different cache sets even where the tiles' floats are a multiple of 4 KiB.
  struct Scratch {
    int64_t v, m, ub, per_thread, v_plane, m_plane;
  };
  Scratch scratch_layout() const;
  std::vector<float> wt_;    // the 3x3 kernels, per column block of output channels
  std::vector<float> bias_;  // [cout_pad_], zeros past cout
};

}  // namespace nnfuse::cpu
