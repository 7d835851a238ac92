// Tests of the window functions, DFT, STFT and MelWeightMatrix on hand-computed cases.
#include <cmath>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace signal_test {

using testing::run_ref1;
using testing::values;
using F = std::vector<float>;

Tensor i64(int64_t v) { return Tensor::scalar<int64_t>(v); }

TEST(RefSignal, Windows) {
  Tensor hann = run_ref1("HannWindow", {i64(4)}, {}, 17);
  EXPECT_EQ(hann.shape(), (Dims{4}));
  const F h = values<float>(hann);
  EXPECT_NEAR(h[0], 0, 1e-7);
  EXPECT_NEAR(h[1], 0.5, 1e-6);
  EXPECT_NEAR(h[2], 1, 1e-6);
  // Symmetric: N = size - 1, so the last sample is 0 again.
  const F s = values<float>(run_ref1("HannWindow", {i64(3)}, {{"periodic", attr_int(0)}}, 17));
  EXPECT_NEAR(s[1], 1, 1e-6);
  EXPECT_NEAR(s[2], 0, 1e-6);
  EXPECT_NEAR(values<float>(run_ref1("HammingWindow", {i64(4)}, {}, 17))[0], 4.0 / 46, 1e-6);
  EXPECT_NEAR(values<float>(run_ref1("BlackmanWindow", {i64(4)}, {}, 17))[2], 1, 1e-6);
}

TEST(RefSignal, DftOfAnImpulseAndItsInverse) {
  // A real impulse at t = 1 of length 4: X[k] = exp(-i pi k / 2).
  Tensor x = Tensor::from_vector<float>({1, 4, 1}, {0, 1, 0, 0});
  const F y = values<float>(run_ref1("DFT", {x}, {}, 17));
  const F want = {1, 0, 0, -1, -1, 0, 0, 1};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << i;
  Tensor back = Tensor::from_vector<float>({1, 4, 2}, want);
  const F z = values<float>(run_ref1("DFT", {back}, {{"inverse", attr_int(1)}}, 17));
  const F impulse = {0, 0, 1, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < impulse.size(); ++i) EXPECT_NEAR(z[i], impulse[i], 1e-6) << i;
  Tensor onesided = run_ref1("DFT", {x}, {{"onesided", attr_int(1)}}, 17);
  EXPECT_EQ(onesided.shape(), (Dims{1, 3, 2}));
}

TEST(RefSignal, StftFramesAndMelFilters) {
  Tensor sig = Tensor::from_vector<float>({1, 6, 1}, {1, 1, 1, 1, 1, 1});
  Tensor st = run_ref1("STFT", {sig, i64(2), Tensor(), i64(4)}, {}, 17);
  EXPECT_EQ(st.shape(), (Dims{1, 2, 3, 2}));   // 2 frames of 4, 3 one-sided bins
  EXPECT_NEAR(values<float>(st)[0], 4, 1e-6);  // the DC bin of a constant frame
  EXPECT_NEAR(values<float>(st)[2], 0, 1e-6);
  Tensor mel = run_ref1(
      "MelWeightMatrix",
      {i64(8), i64(16), i64(8192), Tensor::scalar<float>(0), Tensor::scalar<float>(4096)}, {}, 17);
  EXPECT_EQ(mel.shape(), (Dims{9, 8}));
  float peak = 0;
  for (float v : values<float>(mel)) peak = std::max(peak, v);
  EXPECT_EQ(peak, 1.0f);
  EXPECT_THROW(run_ref1("STFT", {sig, i64(2), Tensor(), i64(9)}, {}, 17), Error);
}

}  // namespace signal_test
}  // namespace nnfuse
