#include <gtest/gtest.h>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_group_norm_test {

using testing::expect_in_place_matches_ref;
using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::FastInput;
using testing::random_tensor;

// GroupNorm inputs for `x` with C = x.dim(1) channels: constant gamma and beta of [C].
std::vector<FastInput> gn_inputs(const Tensor& x, Layout layout, uint32_t seed) {
  const int64_t c = x.dim(1);
  return {{x, false, layout},
          {random_tensor({c}, seed, 0.5f, 1.5f), true},
          {random_tensor({c}, seed + 1, -0.5f, 0.5f), true}};
}

std::map<std::string, Attribute> gn_attrs(int64_t groups, const std::string& act = "") {
  std::map<std::string, Attribute> a = {{"num_groups", attr_int(groups)},
                                        {"epsilon", attr_float(1e-5f)}};
  if (!act.empty()) a["activation"] = attr_string(act);
  return a;
}

TEST(CpuGroupNorm, PlainAndChannelsLastMatchTheReference) {
  struct Case {
    Dims shape;
    int64_t groups;
    const char* act;
  };
  uint32_t seed = 1;
  for (const Case& k : std::vector<Case>{{{1, 32, 16, 16}, 8, "SiLU"},
                                         {{2, 64, 7, 9}, 32, ""},
                                         {{1, 6, 5, 5}, 6, "Relu"},  // InstanceNormalization
                                         {{1, 12, 3, 3}, 1, "Sigmoid"},
                                         {{2, 128, 33, 1}, 32, "GeluTanh"},
                                         {{1, 64, 70, 70}, 32, "SiLU"}}) {
    for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
      SCOPED_TRACE(dims_str(k.shape) + " groups " + std::to_string(k.groups) + " " + k.act +
                   (l == Layout::kNHWC ? " NHWC" : " plain"));
      ++seed;
      // Offset inputs: a mean far from 0 tests the two-pass variance.
      expect_matches_ref("cpu.group_norm", "GroupNorm",
                         gn_inputs(random_tensor(k.shape, seed, 5, 9), l, seed * 10),
                         gn_attrs(k.groups, k.act));
    }
  }
  // Rank 3 (GroupNorm over a sequence, wav2vec2's feature extractor) and 5 (a 3-D UNet's
  // InstanceNorm3d), plain and channels-last.
  for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
    expect_matches_ref("cpu.group_norm", "GroupNorm",
                       gn_inputs(random_tensor({2, 8, 50}, 3, -2, 2), l, 30), gn_attrs(4, "SiLU"));
    expect_matches_ref("cpu.group_norm", "GroupNorm",
                       gn_inputs(random_tensor({1, 8, 3, 4, 5}, 4, -2, 2), l, 40), gn_attrs(2));
    expect_matches_ref("cpu.group_norm", "GroupNorm",
                       gn_inputs(random_tensor({1, 16, 4, 6, 6}, 5, 3, 7), l, 50),
                       gn_attrs(16, "LeakyRelu"));
  }
}

// The addend: T per (image, channel) at run time, or the dense layer T x TW + TB.
TEST(CpuGroupNorm, AddendMatchesTheReference) {
  for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
    SCOPED_TRACE(l == Layout::kNHWC ? "NHWC" : "plain");
    const Tensor x = random_tensor({2, 32, 6, 7}, 11, -2, 2);
    std::vector<FastInput> in = gn_inputs(x, l, 110);
    in.push_back({random_tensor({2, 32, 1, 1}, 12, -3, 3), false});
    expect_matches_ref("cpu.group_norm", "GroupNorm", in, gn_attrs(8, "SiLU"));
    in[3] = {random_tensor({1, 32}, 13, -3, 3), false};  // one row for both images
    expect_matches_ref("cpu.group_norm", "GroupNorm", in, gn_attrs(4));
    in[3] = {random_tensor({2, 20}, 14, -1, 1), false};
    in.push_back({random_tensor({20, 32}, 15, -0.5f, 0.5f), true});
    in.push_back({random_tensor({32}, 16, -1, 1), true});
    expect_matches_ref("cpu.group_norm", "GroupNorm", in, gn_attrs(8, "SiLU"));
    // T's SiLU first (t_activation), with the dense layer and without it.
    std::map<std::string, Attribute> silu = gn_attrs(8, "SiLU");
    silu["t_activation"] = attr_string("SiLU");
    expect_matches_ref("cpu.group_norm", "GroupNorm", in, silu);
    in.pop_back();  // no TB
    expect_matches_ref("cpu.group_norm", "GroupNorm", in, gn_attrs(32, "Relu"));
    std::vector<FastInput> direct = {in[0], in[1], in[2], {random_tensor({2, 32}, 21, -3, 3)}};
    expect_matches_ref("cpu.group_norm", "GroupNorm", direct, silu);
  }
  {
    // Another t_activation is declined by both kernels.
    const Tensor x = random_tensor({1, 32, 4, 4}, 22, -2, 2);
    std::vector<FastInput> in = gn_inputs(x, Layout::kPlain, 220);
    in.push_back({random_tensor({1, 32}, 23, -1, 1), false});
    std::map<std::string, Attribute> relu = gn_attrs(8);
    relu["t_activation"] = attr_string("Relu");
    EXPECT_FALSE(fast_accepts("cpu.group_norm", "GroupNorm", in, relu));
  }
  // T that does not fit: 3 rows for 2 images, or TW of the wrong width.
  const Tensor x = random_tensor({2, 32, 4, 4}, 17, -2, 2);
  std::vector<FastInput> in = gn_inputs(x, Layout::kPlain, 170);
  in.push_back({random_tensor({3, 32}, 18, -1, 1), false});
  EXPECT_FALSE(fast_accepts("cpu.group_norm", "GroupNorm", in, gn_attrs(8)));
  in[3] = {random_tensor({2, 20}, 19, -1, 1), false};
  in.push_back({random_tensor({20, 16}, 20, -1, 1), true});
  EXPECT_FALSE(fast_accepts("cpu.group_norm", "GroupNorm", in, gn_attrs(8)));
}

TEST(CpuGroupNorm, InPlace) {
  for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
    expect_in_place_matches_ref("cpu.group_norm", "GroupNorm",
                                gn_inputs(random_tensor({1, 32, 9, 9}, 7, -3, 3), l, 70), 0,
                                gn_attrs(8, "SiLU"));
  }
}

TEST(CpuGroupNorm, Declines) {
  const Tensor x = random_tensor({1, 12, 4, 4}, 5, -1, 1);
  // Groups that do not divide the channels.
  EXPECT_FALSE(
      fast_accepts("cpu.group_norm", "GroupNorm", gn_inputs(x, Layout::kPlain, 1), gn_attrs(5)));
  // Gamma given at run time.
  std::vector<FastInput> in = gn_inputs(x, Layout::kPlain, 1);
  in[1].constant = false;
  EXPECT_FALSE(fast_accepts("cpu.group_norm", "GroupNorm", in, gn_attrs(4)));
  // Rank 2.
  EXPECT_FALSE(fast_accepts("cpu.group_norm", "GroupNorm",
                            gn_inputs(random_tensor({2, 12}, 6, -1, 1), Layout::kPlain, 1),
                            gn_attrs(4)));
  EXPECT_TRUE(fast_accepts("cpu.group_norm", "GroupNorm", gn_inputs(x, Layout::kNHWC, 1),
                           gn_attrs(4, "SiLU")));
}

}  // namespace cpu_group_norm_test
}  // namespace nnfuse
