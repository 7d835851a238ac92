// Where an unstrided, undilated, ungrouped 3x3 convolution runs oneDNN's Winograd algorithm
// (F(2x2, 3x3), through a blocked buffer of the conv kernel's own, with reorders into and out of
// it) instead of the direct one: where there is enough work per output tile to amortize the
// transforms. The conv kernels decide with it, and ConvMaxPoolFusionPass, whose pool reads that
// blocked buffer, fuses only where it holds.
//
// Measured against the direct algorithm (3x3 stride 1 between 1x1 convs, 2 threads, AVX-512;
// Cin and Cout from 32 to 256, outputs 7x7 to 71x71: bench/winograd_rule.py): Winograd loses
// at 32 output channels at every size (up to 1.2x slower; DenseNet's growth convs) and on 7x7
// outputs (1.1-3x slower); from 48 output channels it wins on 28x28 and larger outputs
// (0.5-0.85x the time), and from 96 on 14x14 to 17x17 ones (0.68-0.95x), where 48 and 64
// output channels are even or lose.
#pragma once

#include <cstdint>

namespace nnfuse {

inline bool winograd_pays(int64_t cin, int64_t cout, int64_t out_h, int64_t out_w) {
  if (cin < 32 || cout < 48) return false;
  const int64_t area = out_h * out_w;
  return area >= 28 * 28 || (area >= 14 * 14 && cout >= 96);
}

}  // namespace nnfuse
