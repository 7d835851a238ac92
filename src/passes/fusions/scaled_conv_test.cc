// ScaledConvFusionPass: a squeeze-and-excitation block (GlobalAveragePool, two 1x1 convs,
// Sigmoid, Mul) before a 1x1 projection conv becomes a ScaledConv where the image is large
// against the projection's outputs; declined with the reason elsewhere; fused == unfused.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace scaled_conv_test {

using namespace fusion_test;

// x [1, 16, hw, hw] -> dw-like Conv -> SE scale -> Mul -> 1x1 projection (+ residual).
std::unique_ptr<Graph> se_block(int64_t hw, int64_t out, bool residual, bool constant_scale) {
  B b;
  const int64_t c = 16;
  Value* x = b.in("x", {1, c, hw, hw});
  Value* a = b.n("Conv", {x, b.c(random_tensor({c, 1, 3, 3}, 1))}, {1, c, hw, hw},
                 {{"group", attr_int(c)}, {"pads", ints({1, 1, 1, 1})}}, "dw");
  Value* s;
  if (constant_scale) {
    s = b.c(random_tensor({1, c, 1, 1}, 2, 0.0f, 1.0f));
  } else {
    Value* g = b.n("GlobalAveragePool", {a}, {1, c, 1, 1}, {}, "gap");
    Value* e = b.n("Conv", {g, b.c(random_tensor({4, c, 1, 1}, 3)), b.c(random_tensor({4}, 4))},
                   {1, 4, 1, 1}, {}, "squeeze");
    e = b.n("Relu", {e}, {1, 4, 1, 1}, {}, "squeeze_relu");
    e = b.n("Conv", {e, b.c(random_tensor({c, 4, 1, 1}, 5)), b.c(random_tensor({c}, 6))},
            {1, c, 1, 1}, {}, "excite");
    s = b.n("Sigmoid", {e}, {1, c, 1, 1}, {}, "gate");
  }
  Value* m = b.n("Mul", {a, s}, {1, c, hw, hw}, {}, "scale");
  Value* y = b.n("Conv", {m, b.c(random_tensor({out, c, 1, 1}, 7)), b.c(random_tensor({out}, 8))},
                 {1, out, hw, hw}, {}, "project");
  if (residual) y = b.n("Add", {y, b.in("r", {1, out, hw, hw})}, {1, out, hw, hw}, {}, "add");
  b.out(y);
  return std::move(b.g);
}

TEST(ScaledConvFusion, ExcitationScaleFoldsIntoTheProjection) {
  for (bool residual : {false, true}) {
    SCOPED_TRACE(residual ? "with residual" : "no residual");
    auto f = fuse(se_block(16, 8, residual, false));
    EXPECT_EQ(count_op(*f.graph, "Mul"), 0u) << graph_to_text(*f.graph);
    EXPECT_EQ(count_op(*f.graph, "ScaledConv"), 1u);
    EXPECT_EQ(count_op(*f.graph, "Add"), 0u);
    EXPECT_EQ(record(f.report, "ScaledConvFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), se_block(16, 8, residual, false));
  }
}

TEST(ScaledConvFusion, DeclinedWhereItDoesNotPayOrBelongsInTheWeights) {
  struct Case {
    int64_t hw, out;
    bool constant_scale;
    std::string reason;
  };
  for (const Case& c : {Case{4, 8, false, "does not pay"}, Case{16, 8, true, "constant"}}) {
    SCOPED_TRACE(c.reason);
    auto f = fuse(se_block(c.hw, c.out, false, c.constant_scale));
    EXPECT_EQ(count_op(*f.graph, "ScaledConv"), 0u) << graph_to_text(*f.graph);
    const PassRecord* r = record(f.report, "ScaledConvFusionPass");
    ASSERT_NE(r, nullptr);
    ASSERT_FALSE(r->rejected.empty());
    EXPECT_NE(r->rejected[0].reason.find(c.reason), std::string::npos) << r->rejected[0].reason;
    expect_same_numbers(std::move(f.graph), se_block(c.hw, c.out, false, c.constant_scale));
  }
}

}  // namespace scaled_conv_test
}  // namespace nnfuse
