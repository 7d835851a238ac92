#include "kernels/cpu/cpu_depthwise.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/test_util.h"
#include "kernels/ref/fused.h"

namespace nnfuse {
namespace cpu_depthwise_test {

using cpu::DepthwiseConv;
using cpu::DepthwiseGeometry;
using ref::Activation;
using ref::ActivationKind;
using testing::noise;

// The depthwise conv in double, NHWC in and out, with the bias and the activation.
std::vector<double> direct(const DepthwiseGeometry& g, const std::vector<float>& x,
                           const std::vector<float>& w, const std::vector<float>& b,
                           const Activation& act) {
  std::vector<double> y(static_cast<size_t>(g.n * g.oh * g.ow * g.c));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        for (int64_t c = 0; c < g.c; ++c) {
          double acc = b.empty() ? 0.0 : b[c];
          for (int64_t ky = 0; ky < g.k; ++ky) {
            const int64_t iy = oy * g.stride + ky - g.pad_t;
            if (iy < 0 || iy >= g.h) continue;
            for (int64_t kx = 0; kx < g.k; ++kx) {
              const int64_t ix = ox * g.stride + kx - g.pad_l;
              if (ix < 0 || ix >= g.w) continue;
              acc += static_cast<double>(x[((n * g.h + iy) * g.w + ix) * g.c + c]) *
                     w[(c * g.k + ky) * g.k + kx];
            }
          }
          y[((n * g.oh + oy) * g.ow + ox) * g.c + c] = ref::apply_activation(act, acc);
        }
      }
    }
  }
  return y;
}

struct Case {
  int64_t n, c, h, w, k, pad_t, pad_l, pad_b, pad_r;
};

DepthwiseGeometry geometry(const Case& c) {
  DepthwiseGeometry g;
  g.n = c.n;
  g.c = c.c;
  g.h = c.h;
  g.w = c.w;
  g.k = c.k;
  g.pad_t = c.pad_t;
  g.pad_l = c.pad_l;
  g.oh = c.h + c.pad_t + c.pad_b - c.k + 1;
  g.ow = c.w + c.pad_l + c.pad_r - c.k + 1;
  return g;
}

// Runs the kernel on `threads` threads and bounds its error against the direct conv: below
// 1e-6 of the outputs' largest magnitude (at most 25 products per output, summed in float).
// Every output is written (y starts as NaN).
void check(const Case& c, const Activation& act, bool bias, int threads) {
  const DepthwiseGeometry g = geometry(c);
  const std::vector<float> x = noise(c.n * c.h * c.w * c.c, 1, 1.0f);
  const std::vector<float> w = noise(c.c * c.k * c.k, 2, 1.0f / static_cast<float>(c.k));
  const std::vector<float> b = bias ? noise(c.c, 3, 0.5f) : std::vector<float>{};
  const std::vector<double> want = direct(g, x, w, b, act);

  DepthwiseConv conv(g, w.data(), bias ? b.data() : nullptr, act);
  std::vector<float> y(want.size(), std::numeric_limits<float>::quiet_NaN());
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  conv.run(x.data(), y.data());
  omp_set_num_threads(saved);

  double scale = 1e-3;
  for (double v : want) scale = std::max(scale, std::abs(v));
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_FALSE(std::isnan(y[i])) << "output " << i << " not written";
    worst = std::max(worst, std::abs(y[i] - want[i]));
  }
  EXPECT_LT(worst / scale, 1e-6) << "n" << c.n << " c" << c.c << " " << c.h << "x" << c.w << " k"
                                 << c.k << " pads " << c.pad_t << c.pad_l << c.pad_b << c.pad_r
                                 << " act " << static_cast<int>(act.kind) << " width "
                                 << conv.width() << " threads " << threads;
}

// Rows of 1 to 3 pixels, 4 to 7 (7: one block of 7 with AVX-512), 8 and wider (blocks of 8 or
// 4, the last one overlapping); channel counts of whole vectors, of a vector and 8, and with a
// partial vector; uneven and zero pads; two images; maps too small to split.
const Case kCases[] = {
    {1, 32, 14, 14, 3, 1, 1, 1, 1},  // MobileNet's 14x14
    {1, 72, 9, 7, 3, 1, 1, 1, 1},    // 4 vectors and 8 channels; rows of 7
    {2, 24, 6, 5, 3, 1, 1, 1, 1},    // two images; rows of 5
    {1, 20, 13, 29, 5, 2, 2, 2, 2},  // 5x5; 16 + 4 channels; a long row
    {1, 3, 4, 3, 3, 1, 1, 1, 1},     // a partial vector only; rows of 3
    {1, 17, 7, 7, 5, 2, 2, 2, 2},    // 5x5 on 7x7 (MobileNetV3's last blocks)
    {1, 40, 10, 12, 3, 0, 1, 2, 0},  // uneven pads
    {1, 8, 5, 9, 5, 0, 0, 0, 0},     // no pads: 1x5 outputs
    {1, 48, 30, 30, 3, 1, 1, 1, 1},  // enough rows for every thread
    {1, 100, 2, 1, 3, 1, 1, 1, 1},   // one pixel a row
};

TEST(CpuDepthwise, MatchesDirectConvAtEveryWidth) {
  const Activation none;
  for (const char* isa : {"", "avx2", "sse2"}) {
    const testing::ScopedEnv width("NNFUSE_DEPTHWISE_ISA", isa);
    for (const Case& c : kCases) {
      check(c, none, true, 1);
      check(c, none, false, 2);
      check(c, {ActivationKind::kHardSwish}, true, 3);
    }
  }
}

TEST(CpuDepthwise, AppliesEachActivation) {
  // In registers: ReLU, Clip, HardSigmoid, HardSwish; after each row: the others.
  const std::vector<Activation> acts = {
      {ActivationKind::kRelu},
      {ActivationKind::kClip, -0.25f, 0.5f},
      {ActivationKind::kClip, 0.0f, 6.0f},
      {ActivationKind::kHardSigmoid, 0.3f, 0.4f},
      {ActivationKind::kHardSwish},
      {ActivationKind::kLeakyRelu, 0.1f},
      {ActivationKind::kSiLU},
      {ActivationKind::kSigmoid},
  };
  for (const char* isa : {"", "sse2"}) {
    const testing::ScopedEnv width("NNFUSE_DEPTHWISE_ISA", isa);
    for (const Activation& a : acts) {
      for (const Case& c : {kCases[1], kCases[3], kCases[4]}) {
        check(c, a, true, 1);
        check(c, a, true, 2);
      }
    }
  }
}

TEST(CpuDepthwise, DeclinesWhatItDoesNotCompute) {
  DepthwiseGeometry g = geometry(kCases[0]);
  EXPECT_EQ(cpu::depthwise_declines(g), "");
  DepthwiseGeometry k7 = g;
  k7.k = 7;
  EXPECT_NE(cpu::depthwise_declines(k7).find("7x7"), std::string::npos);
  DepthwiseGeometry strided = g;
  strided.stride = 2;
  strided.oh = strided.ow = 7;
  EXPECT_NE(cpu::depthwise_declines(strided).find("stride 2"), std::string::npos);
  DepthwiseGeometry wide = g;
  wide.pad_t = 3;
  EXPECT_NE(cpu::depthwise_declines(wide), "");
  DepthwiseGeometry trailing = g;
  trailing.ow = 17;  // a trailing pad of 4
  EXPECT_NE(cpu::depthwise_declines(trailing), "");
  DepthwiseGeometry empty = g;
  empty.c = 0;
  EXPECT_NE(cpu::depthwise_declines(empty), "");
}

}  // namespace cpu_depthwise_test
}  // namespace nnfuse
