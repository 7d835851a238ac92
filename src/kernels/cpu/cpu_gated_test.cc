// activation_row and gated_row against the reference activations, for every kind they take
// (vectorized or not), on rows longer and shorter than a vector, with NaN passing through.
#include "kernels/cpu/cpu_gated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

}  // namespace cpu_gated_test
}  // namespace nnfuse
