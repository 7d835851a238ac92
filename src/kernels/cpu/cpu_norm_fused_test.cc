#include <gtest/gtest.h>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_norm_fused_test {

using testing::expect_in_place_matches_ref;
using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::FastInput;
using testing::random_tensor;

// SkipLayerNorm inputs: X, Skip, gamma, beta (or omitted), bias (or omitted); parameters
// constant like a model's weights.
std::vector<FastInput> skip_inputs(const Dims& x, const Dims& skip, const Dims& p, bool beta,
                                   bool bias, uint32_t seed) {
  std::vector<FastInput> in = {{random_tensor(x, seed, -3, 3)},
                               {random_tensor(skip, seed + 1, -3, 3)},
                               {random_tensor(p, seed + 2, 0.5f, 2), true}};
  in.push_back(beta ? FastInput{random_tensor(p, seed + 3, -1, 1), true} : FastInput{});
  in.push_back(bias ? FastInput{random_tensor(p, seed + 4, -1, 1), true} : FastInput{});
  while (!in.back().value.defined()) in.pop_back();  // trailing omitted inputs left out
  return in;
}

TEST(CpuSkipLayerNorm, MatchesRefOverShapes) {
  struct Case {
    Dims x, skip, p;
  };
  uint32_t seed = 1;
  for (const Case& c : std::vector<Case>{{{1, 128, 768}, {1, 128, 768}, {768}},
                                         {{2, 7, 33}, {2, 7, 33}, {33}},
                                         {{2, 7, 33}, {7, 33}, {33}},
                                         {{2, 7, 33}, {2, 1, 33}, {1, 33}},
                                         {{2, 7, 33}, {2, 7, 1}, {33}},
                                         {{3, 1}, {3, 1}, {1}},
                                         {{1000}, {1000}, {1000}},
                                         {{64, 1024}, {64, 1024}, {1, 1024}}}) {
    for (int variant = 0; variant < 4; ++variant) {
      const bool beta = variant & 1, bias = variant & 2;
      SCOPED_TRACE(dims_str(c.x) + " + " + dims_str(c.skip) + (beta ? " beta" : "") +
                   (bias ? " bias" : ""));
      auto in = skip_inputs(c.x, c.skip, c.p, beta, bias, seed);
      seed += 5;
      expect_matches_ref("cpu.skip_layer_norm", "SkipLayerNorm", in,
                         {{"epsilon", attr_float(1e-5f)}});
      // With the sum as output 1.
      expect_matches_ref("cpu.skip_layer_norm", "SkipLayerNorm", in,
                         {{"epsilon", attr_float(1e-12f)}}, 2);
    }
  }
}

TEST(CpuSkipLayerNorm, InPlace) {
  expect_in_place_matches_ref("cpu.skip_layer_norm", "SkipLayerNorm",
                              skip_inputs({64, 768}, {64, 768}, {768}, true, true, 50), 0);
  expect_in_place_matches_ref("cpu.skip_layer_norm", "SkipLayerNorm",
                              skip_inputs({4, 8, 40}, {8, 40}, {40}, false, false, 51), 0);
}

TEST(CpuSkipLayerNorm, Declines) {
  EXPECT_TRUE(fast_accepts("cpu.skip_layer_norm", "SkipLayerNorm",
                           skip_inputs({4, 8}, {4, 8}, {8}, true, true, 60)));
  // Skip that would grow X; gamma varying across rows; float64; NHWC input.
  EXPECT_FALSE(fast_accepts("cpu.skip_layer_norm", "SkipLayerNorm",
                            skip_inputs({4, 8}, {2, 4, 8}, {8}, true, false, 61)));
  EXPECT_FALSE(fast_accepts("cpu.skip_layer_norm", "SkipLayerNorm",
                            skip_inputs({4, 8}, {4, 8}, {4, 8}, true, false, 62)));
  auto f64 = skip_inputs({4, 8}, {4, 8}, {8}, true, false, 63);
  f64[0].value = Tensor(DType::kFloat64, {4, 8});
  EXPECT_FALSE(fast_accepts("cpu.skip_layer_norm", "SkipLayerNorm", f64));
  auto nhwc = skip_inputs({1, 2, 3, 8}, {1, 2, 3, 8}, {8}, true, false, 64);
  nhwc[0].layout = Layout::kNHWC;
  EXPECT_FALSE(fast_accepts("cpu.skip_layer_norm", "SkipLayerNorm", nhwc));
}

std::vector<FastInput> rms_inputs(const Dims& x, const Dims& p, uint32_t seed) {
  std::vector<FastInput> in = {{random_tensor(x, seed, -3, 3)}};
  if (!p.empty()) in.push_back({random_tensor(p, seed + 1, 0.5f, 2), true});
  return in;
}

TEST(CpuRmsNorm, MatchesRefOverShapes) {
  uint32_t seed = 70;
  for (const Dims& x :
       std::vector<Dims>{{1, 128, 768}, {2, 7, 33}, {3, 1}, {1000}, {64, 4096}, {2, 3, 4, 5}}) {
    for (bool gamma : {true, false}) {
      SCOPED_TRACE(dims_str(x) + (gamma ? " gamma" : ""));
      expect_matches_ref("cpu.rms_norm", "RMSNorm",
                         rms_inputs(x, gamma ? Dims{x.back()} : Dims{}, seed++),
                         {{"epsilon", attr_float(1e-6f)}});
    }
  }
  expect_matches_ref("cpu.rms_norm", "RMSNorm", rms_inputs({4, 16}, {1, 16}, 90));
}

TEST(CpuRmsNorm, InPlaceAndDeclines) {
  expect_in_place_matches_ref("cpu.rms_norm", "RMSNorm", rms_inputs({64, 768}, {768}, 80), 0);
  EXPECT_TRUE(fast_accepts("cpu.rms_norm", "RMSNorm", rms_inputs({4, 8}, {8}, 81)));
  EXPECT_FALSE(fast_accepts("cpu.rms_norm", "RMSNorm", rms_inputs({4, 8}, {4, 8}, 82)));
  auto f64 = rms_inputs({4, 8}, {8}, 83);
  f64[0].value = Tensor(DType::kFloat64, {4, 8});
  EXPECT_FALSE(fast_accepts("cpu.rms_norm", "RMSNorm", f64));
}

TEST(CpuLayerNorm, AlsoRunsInTheFusedDomain) {
  // LayerNormalization written by the LayerNorm fusion in ai.nnfuse (models before opset 17).
  std::vector<FastInput> in = {{random_tensor({6, 40}, 95, -3, 3)},
                               {random_tensor({40}, 96, 0.5f, 2), true},
                               {random_tensor({40}, 97, -1, 1), true}};
  testing::OneNode one("LayerNormalization", in, {});
  Graph& g = one.g;
  Node* n = g.add_node("LayerNormalization", "fused_ln", one.node->inputs(), {g.add_value("y")},
                       "ai.nnfuse");
  const KernelFactory* f = testing::find_factory("LayerNormalization", "cpu.layer_norm");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->accepts(NodeInfo{*n, 1, one.layouts, 2}));
}

}  // namespace cpu_norm_fused_test
}  // namespace nnfuse
