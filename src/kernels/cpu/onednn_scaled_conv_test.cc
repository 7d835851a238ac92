// ScaledConv (a 1x1 conv of a channel-scaled input) on oneDNN against its reference kernel:
// channels-last and plain X, a scale per image or shared, with and without bias, residual Sum
// and activation; and the reference kernel against the Mul and Conv it replaces.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_test_support.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace onednn_scaled_conv_test {

using testing::expect_close;
using testing::expect_matches_ref;
using testing::FastInput;
using testing::random_tensor;
using testing::run_kernel;
using testing::run_ref1;

constexpr float kTol = 1e-4f;
using Attrs = std::map<std::string, Attribute>;

struct Case {
  Dims x;
  int64_t o;
  bool per_image = false, bias = true, sum = false;  // a Sum comes with a bias
  std::string act = "";
  Layout layout = Layout::kNHWC;
};

std::vector<FastInput> inputs_of(const Case& c, uint32_t seed) {
  const Dims s = {c.per_image ? c.x[0] : 1, c.x[1], 1, 1};
  std::vector<FastInput> in = {{random_tensor(c.x, seed, -2.0f, 2.0f), false, c.layout},
                               {random_tensor(s, seed + 1, 0.0f, 1.0f), false},
                               {random_tensor({c.o, c.x[1], 1, 1}, seed + 2), true}};
  if (c.bias) in.push_back({random_tensor({c.o}, seed + 3), true});
  if (c.sum)
    in.push_back({random_tensor({c.x[0], c.o, c.x[2], c.x[3]}, seed + 4), false, c.layout});
  return in;
}

TEST(OnednnScaledConv, MatchesTheReference) {
  const std::vector<Case> cases = {
      {{1, 32, 14, 14}, 16, false, true, false, ""},
      {{1, 24, 7, 9}, 40, false, true, true, ""},
      {{2, 16, 5, 6}, 8, true, true, false, "Relu"},
      {{2, 16, 5, 6}, 8, false, true, true, "SiLU"},
      {{1, 16, 5, 6}, 8, false, false, false, "Relu"},
      {{1, 48, 8, 8}, 24, false, true, true, "", Layout::kPlain},
      {{2, 8, 3, 5}, 12, true, true, false, "Sigmoid", Layout::kPlain},
      {{1, 96, 28, 28}, 24, false, true, true, ""},
  };
  uint32_t seed = 10;
  for (const Case& c : cases) {
    SCOPED_TRACE(dims_str(c.x) + " -> " + std::to_string(c.o) + " " + layout_name(c.layout) +
                 (c.per_image ? " per image" : "") + (c.bias ? " bias" : "") +
                 (c.sum ? " sum" : "") + " act=" + c.act);
    Attrs attrs;
    if (!c.act.empty()) attrs["activation"] = attr_string(c.act);
    std::vector<FastInput> in = inputs_of(c, seed += 10);
    expect_matches_ref("onednn.scaled_conv", "ScaledConv", in, attrs, 1, kTol, kTol);
  }
}

TEST(OnednnScaledConv, ReferenceIsTheMulAndTheConv) {
  const Tensor x = random_tensor({2, 6, 4, 5}, 1), s = random_tensor({2, 6, 1, 1}, 2);
  const Tensor w = random_tensor({3, 6, 1, 1}, 3), b = random_tensor({3}, 4);
  const Tensor scaled = run_ref1("Mul", {x, s});
  const Tensor want = run_ref1("Conv", {scaled, w, b});
  expect_close(run_ref1("ScaledConv", {x, s, w, b}), want, 1e-5f, 1e-5f);
}

TEST(OnednnScaledConv, DeclinesWhatItDoesNotRun) {
  Case c{{1, 8, 4, 4}, 4, false, true, false, ""};
  std::vector<FastInput> in = inputs_of(c, 1);
  EXPECT_EQ(run_kernel("ScaledConv", in, {}).kernel, "onednn.scaled_conv");
  // A 3x3 kernel, a scale over more than the channels, weights known only at run time.
  std::vector<FastInput> k3 = in;
  k3[2].value = random_tensor({4, 8, 3, 3}, 5);
  EXPECT_FALSE(testing::fast_accepts("onednn.scaled_conv", "ScaledConv", k3));
  std::vector<FastInput> wide = in;
  wide[1].value = random_tensor({1, 8, 4, 1}, 6);
  EXPECT_FALSE(testing::fast_accepts("onednn.scaled_conv", "ScaledConv", wide));
  std::vector<FastInput> dyn = in;
  dyn[2].constant = false;
  EXPECT_FALSE(testing::fast_accepts("onednn.scaled_conv", "ScaledConv", dyn));
}

}  // namespace onednn_scaled_conv_test
}  // namespace nnfuse
