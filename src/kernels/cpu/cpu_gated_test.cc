// activation_row and gated_row against the reference activations, for every kind they take
// (vectorized or not), on rows longer and shorter than a vector, with NaN passing through.
#include "kernels/cpu/cpu_gated.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_gated_test {

using ref::Activation;
using ref::ActivationKind;

TEST(CpuActivationRow, MatchesTheReferenceActivations) {
  const Activation acts[] = {{ActivationKind::kNone},
                             {ActivationKind::kRelu},
                             {ActivationKind::kLeakyRelu, 0.1f},
                             {ActivationKind::kClip, -1.0f, 2.0f},
                             {ActivationKind::kSigmoid},
                             {ActivationKind::kTanh},
                             {ActivationKind::kHardSigmoid, 0.2f, 0.5f},
                             {ActivationKind::kHardSwish},
                             {ActivationKind::kSiLU},
                             {ActivationKind::kGelu},
                             {ActivationKind::kGeluTanh},
                             {ActivationKind::kSwish, 1.5f}};
  for (const Activation& a : acts) {
    for (int64_t n : {1, 7, 16, 101}) {
      SCOPED_TRACE("kind " + std::to_string(static_cast<int>(a.kind)) + " n " + std::to_string(n));
      const Tensor x = testing::random_tensor({n}, static_cast<uint32_t>(n), -8.0f, 8.0f);
      std::vector<float> y(x.data<float>(), x.data<float>() + n);
      y[0] = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> u(static_cast<size_t>(n), 1.5f), g(static_cast<size_t>(n));
      cpu::activation_row(a, y.data(), n);
      cpu::gated_row(a, x.data<float>(), u.data(), g.data(), n);
      EXPECT_TRUE(std::isnan(y[0]));
      for (int64_t i = 0; i < n; ++i) {
        const double want = ref::apply_activation(a, x.data<float>()[i]);
        if (i > 0) {
          EXPECT_NEAR(y[i], want, 1e-6 + 1e-6 * std::fabs(want)) << "at " << i;
        }
        EXPECT_NEAR(g[i], want * 1.5, 1e-6 + 1e-6 * std::fabs(want)) << "gated at " << i;
      }
    }
  }
}

// The round trip equals QuantizeLinear then DequantizeLinear bit for bit: float32 division,
// ties to even, saturation at both ends of the type, NaN to the zero point (0 after).
TEST(CpuActivationRow, QuantizeRoundTripIsQuantizeThenDequantize) {
  const float s = 0.05f;
  for (const auto& [lo, qmin, zp] : {std::tuple{-3.0f, 0, 3}, std::tuple{-123.0f, -128, -5}}) {
    const Activation a{ActivationKind::kQuantize, s, lo};
    std::vector<float> x;
    for (int k = -300; k <= 300; ++k) x.push_back((static_cast<float>(k) + 0.5f) * s);  // ties
    const Tensor r = testing::random_tensor({101}, 3, -20.0f, 20.0f);
    x.insert(x.end(), r.data<float>(), r.data<float>() + r.numel());
    x.push_back(std::numeric_limits<float>::quiet_NaN());
    x.push_back(std::numeric_limits<float>::infinity());
    x.push_back(-std::numeric_limits<float>::infinity());
    std::vector<float> y = x;
    cpu::activation_row(a, y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      float q = std::isnan(x[i]) ? static_cast<float>(zp) : std::nearbyint(x[i] / s) + zp;
      q = std::min(std::max(q, static_cast<float>(qmin)), static_cast<float>(qmin + 255));
      const float want = (q - static_cast<float>(zp)) * s;
      EXPECT_EQ(y[i], want) << "x " << x[i];
      EXPECT_EQ(static_cast<float>(ref::apply_activation(a, x[i])), want) << "x " << x[i];
    }
  }
}

}  // namespace cpu_gated_test
}  // namespace nnfuse
