#include "kernels/cpu/cpu_winograd.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/cpu/test_util.h"

namespace nnfuse {
namespace cpu_winograd_test {

using cpu::WinogradConv;
using cpu::WinogradGeometry;
using testing::noise;

// The 3x3 conv in double, NHWC in and out, with the bias, residual and activation.
std::vector<double> direct(const WinogradGeometry& g, const std::vector<float>& x,
                           const std::vector<float>& w, const std::vector<float>& b,
                           const std::vector<float>* sum, const ref::Activation& act) {
  std::vector<double> y(static_cast<size_t>(g.n * g.oh * g.ow * g.cout));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const int64_t pix = (n * g.oh + oy) * g.ow + ox;
        for (int64_t co = 0; co < g.cout; ++co) {
          double acc = b.empty() ? 0.0 : b[co];
          for (int64_t ky = 0; ky < 3; ++ky) {
            const int64_t iy = oy + ky - g.pad_t;
            if (iy < 0 || iy >= g.h) continue;
            for (int64_t kx = 0; kx < 3; ++kx) {
              const int64_t ix = ox + kx - g.pad_l;
              if (ix < 0 || ix >= g.w) continue;
              const float* xp = &x[((n * g.h + iy) * g.w + ix) * g.cin];
              for (int64_t ci = 0; ci < g.cin; ++ci) {
                acc += static_cast<double>(xp[ci]) * w[((co * g.cin + ci) * 3 + ky) * 3 + kx];
              }
            }
          }
          if (sum) acc += (*sum)[pix * g.cout + co];
          switch (act.kind) {
            case ref::ActivationKind::kRelu:
              acc = std::max(acc, 0.0);
              break;
            case ref::ActivationKind::kLeakyRelu:
              acc = acc >= 0 ? acc : acc * act.alpha;
              break;
            case ref::ActivationKind::kClip:
              acc = std::min<double>(std::max<double>(acc, act.alpha), act.beta);
              break;
            default:
              break;
          }
          y[pix * g.cout + co] = acc;
        }
      }
    }
  }
  return y;
}

struct Case {
  int64_t n, cin, h, w, cout, pad_t, pad_l, pad_b, pad_r;
};

// Runs the Winograd conv on `threads` threads and bounds its error against the direct conv:
// below 1e-5 of the outputs' largest magnitude.
WinogradGeometry geometry(const Case& c) {
  WinogradGeometry g;
  g.n = c.n;
  g.cin = c.cin;
  g.h = c.h;
  g.w = c.w;
  g.cout = c.cout;
  g.pad_t = c.pad_t;
  g.pad_l = c.pad_l;
  g.oh = c.h + c.pad_t + c.pad_b - 2;
  g.ow = c.w + c.pad_l + c.pad_r - 2;
  return g;
}

void check(const Case& c, const ref::Activation& act, bool bias, bool with_sum, int64_t pitch_extra,
           int threads) {
  const WinogradGeometry g = geometry(c);
  const std::vector<float> x = noise(c.n * c.h * c.w * c.cin, 1, 1.0f);
  const std::vector<float> w = noise(c.cout * c.cin * 9, 2, 1.0f / std::sqrt(9.0f * c.cin));
  const std::vector<float> b = bias ? noise(c.cout, 3, 0.5f) : std::vector<float>{};
  const int64_t pixels = g.n * g.oh * g.ow;
  const std::vector<float> sum = noise(pixels * c.cout, 4, 1.0f);
  const std::vector<double> want = direct(g, x, w, b, with_sum ? &sum : nullptr, act);

  WinogradConv conv(g, w.data(), bias ? b.data() : nullptr, act);
  const int64_t pitch = c.cout + pitch_extra;
  std::vector<float> y(static_cast<size_t>(pixels * pitch), -7.0f);
  auto scratch = std::make_unique<std::byte[]>(conv.scratch_bytes() + 64);
  std::byte* aligned = scratch.get() + (64 - reinterpret_cast<uintptr_t>(scratch.get()) % 64) % 64;
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  conv.run(x.data(), y.data(), pitch, with_sum ? sum.data() : nullptr, aligned);
  omp_set_num_threads(saved);

  double scale = 1e-3;
  for (double v : want) scale = std::max(scale, std::abs(v));
  double worst = 0;
  for (int64_t p = 0; p < pixels; ++p) {
    for (int64_t co = 0; co < c.cout; ++co) {
      worst = std::max(worst, std::abs(y[p * pitch + co] - want[p * c.cout + co]));
    }
    for (int64_t e = c.cout; e < pitch; ++e) {
      ASSERT_EQ(y[p * pitch + e], -7.0f) << "wrote past its channels at pixel " << p;
    }
  }
  EXPECT_LT(worst / scale, 1e-5) << "n" << c.n << " cin" << c.cin << " " << c.h << "x" << c.w
                                 << " cout" << c.cout << " pads " << c.pad_t << c.pad_l << c.pad_b
                                 << c.pad_r << " width " << conv.width() << " threads " << threads;
}

const Case kCases[] = {
    {1, 32, 14, 14, 64, 1, 1, 1, 1},  // whole tiles' worth of channels, a ragged edge
    {1, 16, 8, 8, 32, 1, 1, 1, 1},    // whole tiles
    {2, 3, 9, 11, 5, 1, 1, 1, 1},     // channels below one vector, two images
    {1, 20, 7, 7, 40, 0, 0, 0, 0},    // no pads: 5x5 outputs
    {1, 17, 13, 6, 33, 2, 0, 1, 2},   // uneven pads, channel tails in and out
    {1, 48, 28, 28, 96, 1, 1, 1, 1},  // many tiles (several row blocks)
    {1, 64, 3, 3, 24, 1, 1, 1, 1},    // one tile, mostly padding
};

TEST(CpuWinograd, MatchesDirectConvAtEveryWidth) {
  for (const char* isa : {"", "avx2", "sse2"}) {
    if (*isa) {
      setenv("NNFUSE_WINOGRAD_ISA", isa, 1);
    } else {
      unsetenv("NNFUSE_WINOGRAD_ISA");
    }
    for (const Case& c : kCases) check(c, {}, true, false, 0, 1);
  }
  unsetenv("NNFUSE_WINOGRAD_ISA");
}

TEST(CpuWinograd, ActivationsResidualAndPitch) {
  using K = ref::ActivationKind;
  const ref::Activation acts[] = {
      {K::kRelu, 0, 0}, {K::kLeakyRelu, 0.1f, 0}, {K::kClip, -0.5f, 0.6f}};
  for (const ref::Activation& act : acts) {
    check(kCases[0], act, true, false, 0, 1);
    check(kCases[4], act, false, true, 0, 1);
  }
  check(kCases[0], {K::kRelu, 0, 0}, true, false, 96, 1);  // a part of a Concat's rows
  check(kCases[4], {}, true, false, 3, 1);
}

// The quantize round trip in the output transform gives exactly the conv's float outputs
// rounded to the grid (ops::quantize_dequantize), at every vector width.
TEST(CpuWinograd, QuantizeRoundTripRoundsTheSameOutputs) {
  const Case& c = kCases[4];
  const WinogradGeometry g = geometry(c);
  const std::vector<float> x = noise(c.n * c.h * c.w * c.cin, 1, 1.0f);
  const std::vector<float> w = noise(c.cout * c.cin * 9, 2, 1.0f / std::sqrt(9.0f * c.cin));
  const std::vector<float> b = noise(c.cout, 3, 0.5f);
  const size_t n = static_cast<size_t>(g.n * g.oh * g.ow * c.cout);
  const ref::Activation q{ref::ActivationKind::kQuantize, 0.02f, -7.0f};
  for (const char* isa : {"", "avx2", "sse2"}) {
    if (*isa) {
      setenv("NNFUSE_WINOGRAD_ISA", isa, 1);
    } else {
      unsetenv("NNFUSE_WINOGRAD_ISA");
    }
    std::vector<float> plain(n), rounded(n);
    for (auto [act, y] : {std::pair{ref::Activation{}, &plain}, std::pair{q, &rounded}}) {
      WinogradConv conv(g, w.data(), b.data(), act);
      auto scratch = std::make_unique<std::byte[]>(conv.scratch_bytes() + 64);
      std::byte* aligned =
          scratch.get() + (64 - reinterpret_cast<uintptr_t>(scratch.get()) % 64) % 64;
      conv.run(x.data(), y->data(), c.cout, nullptr, aligned);
    }
    size_t clipped = 0;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(rounded[i], ops::quantize_dequantize(plain[i], q.alpha, q.beta)) << isa << " " << i;
      clipped += rounded[i] == q.alpha * q.beta || rounded[i] == q.alpha * (q.beta + 255);
    }
    EXPECT_GT(clipped, 0u);  // both the grid and its saturation are exercised
  }
  unsetenv("NNFUSE_WINOGRAD_ISA");
}

TEST(CpuWinograd, ThreadsSplitTheTilesOrTheChannels) {
  // 28x28 (49 tiles) splits the tiles between 2 threads; the smaller maps split the channels.
  for (int threads : {2, 3}) {
    for (const Case& c : kCases)
      check(c, {ref::ActivationKind::kRelu, 0, 0}, true, true, 0, threads);
  }
}

TEST(CpuWinograd, DeclinesActivationsItCannotApply) {
  EXPECT_EQ(cpu::winograd_declines({}), "");
  EXPECT_EQ(cpu::winograd_declines({ref::ActivationKind::kRelu, 0, 0}), "");
  EXPECT_NE(cpu::winograd_declines({ref::ActivationKind::kSiLU, 0, 0}), "");
}

}  // namespace cpu_winograd_test
}  // namespace nnfuse
