#include <gtest/gtest.h>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_response_norm_test {

using testing::expect_in_place_matches_ref;
using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::FastInput;
using testing::random_tensor;

std::vector<FastInput> grn_inputs(const Dims& shape, int64_t c, uint32_t seed) {
  return {{random_tensor(shape, seed, -2, 2), false},
          {random_tensor({c}, seed + 1, -1, 1), true},
          {random_tensor({c}, seed + 2, -1, 1), true}};
}

std::map<std::string, Attribute> grn_attrs(bool last) {
  return {{"epsilon", attr_float(1e-6f)}, {"channels_last", attr_int(last ? 1 : 0)}};
}

// Channels last ([N, H, W, C], ConvNeXt-V2's) and first, maps from 1x1 to 56x56, channel counts
// that are and are not multiples of the 64 a task sums, one and two images.
TEST(CpuResponseNorm, MatchesTheReference) {
  struct Case {
    Dims shape;
    bool last;
  };
  uint32_t seed = 1;
  for (const Case& k : std::vector<Case>{{{1, 7, 7, 96}, true},
                                         {{2, 14, 14, 200}, true},
                                         {{1, 56, 56, 40}, true},
                                         {{1, 1, 1, 3}, true},
                                         {{1, 5, 9, 130}, true},
                                         {{2, 24, 8, 8}, false},
                                         {{1, 3, 30, 31}, false},
                                         {{1, 4, 6}, true}}) {
    SCOPED_TRACE(dims_str(k.shape) + (k.last ? " channels last" : " channels first"));
    const int64_t c = k.last ? k.shape.back() : k.shape[1];
    expect_matches_ref("cpu.response_norm", "GlobalResponseNorm", grn_inputs(k.shape, c, seed),
                       grn_attrs(k.last));
    expect_in_place_matches_ref("cpu.response_norm", "GlobalResponseNorm",
                                grn_inputs(k.shape, c, seed), 0, grn_attrs(k.last));
    seed += 10;
  }
}

// A runtime Gamma, a Gamma of another length, a rank-2 X: the reference kernel runs them.
TEST(CpuResponseNorm, DeclinesWhatItDoesNotRun) {
  std::vector<FastInput> in = grn_inputs({1, 4, 4, 8}, 8, 3);
  in[1].constant = false;
  EXPECT_FALSE(fast_accepts("cpu.response_norm", "GlobalResponseNorm", in, grn_attrs(true)));
  EXPECT_FALSE(fast_accepts("cpu.response_norm", "GlobalResponseNorm",
                            grn_inputs({1, 4, 4, 8}, 7, 3), grn_attrs(true)));
  EXPECT_FALSE(fast_accepts("cpu.response_norm", "GlobalResponseNorm", grn_inputs({4, 8}, 8, 3),
                            grn_attrs(true)));
}

}  // namespace cpu_response_norm_test
}  // namespace nnfuse
