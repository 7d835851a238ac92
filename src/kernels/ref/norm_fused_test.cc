// SkipLayerNorm and RMSNorm's reference kernels against the ONNX ops they replace, each run
// separately (as the unfused graph would run them).
#include <random>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace norm_fused_test {

using testing::expect_close;
using testing::run_ref;
using testing::run_ref1;

using Attrs = std::map<std::string, Attribute>;

Tensor random_tensor(const Dims& shape, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

struct SkipCase {
  Dims x, skip, param;
  bool beta, bias;
};

TEST(RefSkipLayerNorm, EqualsAddThenLayerNorm) {
  const std::vector<SkipCase> cases = {
      {{2, 3, 8}, {2, 3, 8}, {8}, true, false},  {{2, 3, 8}, {2, 3, 8}, {8}, true, true},
      {{2, 3, 8}, {2, 3, 8}, {8}, false, false}, {{2, 3, 8}, {2, 3, 8}, {1, 1, 8}, false, true},
      {{2, 3, 8}, {3, 8}, {8}, true, true},      {{2, 3, 8}, {1, 3, 8}, {8}, true, false},
      {{2, 3, 8}, {2, 3, 1}, {8}, true, true},   {{5, 17}, {17}, {17}, true, true},
      {{1, 1}, {1, 1}, {1}, true, true},         {{4, 0}, {4, 0}, {0}, true, false},
  };
  uint32_t seed = 1;
  for (const SkipCase& c : cases) {
    SCOPED_TRACE(dims_str(c.x) + " + " + dims_str(c.skip) + (c.beta ? " beta" : "") +
                 (c.bias ? " bias" : ""));
    const Tensor x = random_tensor(c.x, seed++);
    const Tensor skip = random_tensor(c.skip, seed++);
    const Tensor gamma = random_tensor(c.param, seed++, 0.5f, 1.5f);
    const Tensor beta = c.beta ? random_tensor(c.param, seed++) : Tensor();
    const Tensor bias = c.bias ? random_tensor(c.param, seed++) : Tensor();
    const Attrs attrs = {{"epsilon", attr_float(1e-3f)}};
    std::vector<Tensor> got = run_ref("SkipLayerNorm", {x, skip, gamma, beta, bias}, attrs, 2);
    Tensor sum = c.bias ? run_ref1("Add", {x, bias}) : x;
    sum = run_ref1("Add", {sum, skip});
    std::vector<Tensor> ln_in = {sum, gamma};
    if (c.beta) ln_in.push_back(beta);
    const Tensor want = run_ref1("LayerNormalization", ln_in,
                                 {{"axis", attr_int(-1)}, {"epsilon", attr_float(1e-3f)}});
    expect_close(got[0], want, 1e-6f, 1e-6f);
    expect_close(got[1], sum, 0, 0);  // the same float32 additions
    // Output 1 omitted.
    expect_close(run_ref("SkipLayerNorm", {x, skip, gamma, beta, bias}, attrs, 1)[0], want, 1e-6f,
                 1e-6f);
  }
}

TEST(RefSkipLayerNorm, RejectsBadShapesAndTypes) {
  const Tensor x = random_tensor({2, 8}, 1);
  const Tensor gamma = random_tensor({8}, 2);
  // Skip that would grow X; gamma of another length; gamma varying over rows.
  EXPECT_THROW(run_ref("SkipLayerNorm", {x, random_tensor({3, 2, 8}, 3), gamma}), Error);
  EXPECT_THROW(run_ref("SkipLayerNorm", {x, x, random_tensor({7}, 4)}), Error);
  EXPECT_THROW(run_ref("SkipLayerNorm", {x, x, random_tensor({2, 8}, 5)}), Error);
  EXPECT_THROW(run_ref("SkipLayerNorm", {x, x}), Error);  // no gamma
  Tensor d(DType::kFloat64, {2, 8});
  EXPECT_THROW(run_ref("SkipLayerNorm", {d, d, gamma}), Error);
}

// x / sqrt(mean(x^2) + eps) * gamma, by the ONNX ops.
Tensor rms_by_ops(const Tensor& x, const Tensor* gamma, float eps) {
  const Tensor sq = run_ref1("Mul", {x, x});
  const Tensor ms = run_ref1("ReduceMean", {sq}, {{"axes", attr_ints({-1})}}, 13);
  const Tensor sd = run_ref1("Sqrt", {run_ref1("Add", {ms, Tensor::scalar<float>(eps)})});
  const Tensor y = run_ref1("Div", {x, sd});
  return gamma ? run_ref1("Mul", {y, *gamma}) : y;
}

TEST(RefRmsNorm, EqualsTheDecomposedOps) {
  uint32_t seed = 10;
  for (const Dims& s : std::vector<Dims>{{2, 3, 8}, {5, 17}, {64}, {1, 1}, {2, 4, 1, 33}}) {
    for (bool with_gamma : {true, false}) {
      SCOPED_TRACE(dims_str(s) + (with_gamma ? " gamma" : ""));
      const Tensor x = random_tensor(s, seed++);
      const Tensor gamma = random_tensor({s.back()}, seed++, 0.5f, 1.5f);
      const Tensor got =
          run_ref1("RMSNorm", {x, with_gamma ? gamma : Tensor()}, {{"epsilon", attr_float(1e-6f)}});
      expect_close(got, rms_by_ops(x, with_gamma ? &gamma : nullptr, 1e-6f), 1e-6f, 1e-5f);
    }
  }
  EXPECT_THROW(run_ref1("RMSNorm", {random_tensor({2, 8}, 1), random_tensor({4}, 2)}), Error);
}

TEST(RefLayerNorm, AlsoRunsInTheFusedDomain) {
  // The LayerNorm fusion writes LayerNormalization in ai.nnfuse for models before opset 17.
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({2, 8}));
  Value* s = g.add_value("s", DType::kFloat32, Shape::of({8}));
  g.add_input(x);
  g.add_input(s);
  Node* n = g.add_node("LayerNormalization", "ln", {x, s}, {g.add_value("y")}, kFusedDomain);
  EXPECT_EQ(ref_unsupported_reason(*n, 1), "");
  Node* other = g.add_node("Softmax", "sm", {x}, {g.add_value("z")}, kFusedDomain);
  EXPECT_NE(ref_unsupported_reason(*other, 1), "");
  EXPECT_EQ(ref_op_domain("SkipLayerNorm"), kFusedDomain);
  EXPECT_EQ(ref_op_domain("RMSNorm"), kFusedDomain);
}

}  // namespace norm_fused_test
}  // namespace nnfuse
