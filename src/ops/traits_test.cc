#include <gtest/gtest.h>

#include <map>

#include "kernels/ref/ref_kernels.h"
#include "ops/def.h"
#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace traits_test {

using ops::op_class;

using fusion_test::B;

Node* unary(Graph& g, const std::string& op, const std::string& domain = "") {
  Value* x = g.add_value(g.unique_value_name("x"), DType::kFloat32, Shape::of({2, 3}));
  Value* y = g.add_value(g.unique_value_name("y"), DType::kFloat32, Shape::of({2, 3}));
  return g.add_node(op, g.unique_value_name("n"), {x}, {y}, domain);
}

TEST(OpClass, EveryReferenceOpIsListed) {
  Graph g;
  for (const std::string& op : ref_supported_ops()) {
    const std::string domain = ref_op_domain(op);
    EXPECT_TRUE(ops::traits_listed(op_of(domain, op))) << op << " in '" << domain << "'";
    const OpClass c = op_class(*unary(g, op, domain));
    EXPECT_NE(std::string(op_class_name(c)), "?") << op;
  }
}

TEST(OpClass, UnknownOpsAreOpaque) {
  Graph g;
  EXPECT_FALSE(ops::traits_listed(op_of("", "FooBar")));
  EXPECT_EQ(op_class(*unary(g, "FooBar")), OpClass::kOpaque);
  // A known op type in another domain, or an ONNX op written in nnfuse's domain.
  EXPECT_EQ(op_class(*unary(g, "Relu", "com.microsoft")), OpClass::kOpaque);
  EXPECT_EQ(op_class(*unary(g, "Relu", kFusedDomain)), OpClass::kOpaque);
  EXPECT_EQ(op_class(*unary(g, "FusedConv", "")), OpClass::kOpaque);
  EXPECT_EQ(op_class(*unary(g, "Relu", "ai.onnx")), OpClass::kElementwise);
}

TEST(OpClass, ClassesOfRepresentativeOps) {
  Graph g;
  const std::pair<const char*, OpClass> onnx[] = {
      {"Relu", OpClass::kElementwise},
      {"Exp", OpClass::kElementwise},
      {"Erf", OpClass::kElementwise},
      {"Clip", OpClass::kElementwise},
      {"Cast", OpClass::kInjective},
      {"Reshape", OpClass::kInjective},
      {"Transpose", OpClass::kInjective},
      {"Slice", OpClass::kInjective},
      {"Concat", OpClass::kInjective},
      {"Gather", OpClass::kInjective},
      {"Expand", OpClass::kInjective},
      {"Squeeze", OpClass::kInjective},
      {"Unsqueeze", OpClass::kInjective},
      {"ReduceSum", OpClass::kReduction},
      {"ReduceMean", OpClass::kReduction},
      {"ReduceMax", OpClass::kReduction},
      {"Softmax", OpClass::kReduction},
      {"LogSoftmax", OpClass::kReduction},
      {"Conv", OpClass::kOutEltwiseFusable},
      {"ConvTranspose", OpClass::kOutEltwiseFusable},
      {"MatMul", OpClass::kOutEltwiseFusable},
      {"Gemm", OpClass::kOutEltwiseFusable},
      {"NonMaxSuppression", OpClass::kOpaque},
      {"Loop", OpClass::kOpaque},
      {"TopK", OpClass::kOpaque},
      {"Resize", OpClass::kOpaque},
      {"LayerNormalization", OpClass::kOpaque},
  };
  for (auto [op, c] : onnx) EXPECT_EQ(op_class(*unary(g, op)), c) << op;
  const std::pair<const char*, OpClass> fused[] = {
      {"FusedConv", OpClass::kOutEltwiseFusable}, {"FusedMatMul", OpClass::kOutEltwiseFusable},
      {"FusedGemm", OpClass::kOutEltwiseFusable}, {"Gelu", OpClass::kElementwise},
      {"ScaleShift", OpClass::kBroadcast},        {"SkipLayerNorm", OpClass::kOpaque},
  };
  for (auto [op, c] : fused) EXPECT_EQ(op_class(*unary(g, op, kFusedDomain)), c) << op;
  EXPECT_STREQ(op_class_name(OpClass::kOutEltwiseFusable), "out_eltwise_fusable");
}

TEST(OpClass, BinaryOpsAreElementwiseOnlyForEqualKnownShapes) {
  B b;
  Value* x = b.in("x", {2, 3});
  Value* y = b.in("y", {2, 3});
  Value* r = b.in("r", {3});
  Value* u = b.g->add_value("u", DType::kFloat32, Shape::unknown());
  b.g->add_input(u);
  Value* s = b.c(Tensor::scalar(2.0f));
  auto cls = [&](Value* v) { return op_class(*v->producer()); };
  EXPECT_EQ(cls(b.n("Add", {x, y}, {2, 3})), OpClass::kElementwise);
  EXPECT_EQ(cls(b.n("Mul", {x, r}, {2, 3})), OpClass::kBroadcast);
  EXPECT_EQ(cls(b.n("Mul", {x, s}, {2, 3})), OpClass::kBroadcast);
  EXPECT_EQ(cls(b.n("Sub", {x, u}, {2, 3})), OpClass::kBroadcast);
  EXPECT_EQ(cls(b.n("Where", {x, y, x}, {2, 3})), OpClass::kElementwise);
  EXPECT_EQ(cls(b.n("Sum", {x}, {2, 3})), OpClass::kElementwise);
}

}  // namespace traits_test
}  // namespace nnfuse
