// Half-precision graphs widened to float32 inside: the declared input and output types kept,
// weights widened exactly, a Cast to float16 inside still rounding, the numbers those of the
// float16 graph computed in float32, and a widened graph left as it is.
#include "onnx/widen_half.h"

#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/half.h"
#include "runtime/session.h"
#include "testing/graph_builder.h"

namespace nnfuse {
namespace widen_half_test {

Tensor half_tensor(const Dims& d, const std::vector<float>& v) {
  Tensor t(DType::kFloat16, d);
  for (size_t i = 0; i < v.size(); ++i) t.data<Float16>()[i] = to_half<Float16>(v[i]);
  return t;
}

// y = Relu(Cast<float16>(x @ w) * 3), x [1, 2] and w [2, 2] float16, y float16.
std::unique_ptr<Graph> half_graph() {
  testing::GraphBuilder b;
  Value* x = b.in("x", {1, 2}, DType::kFloat16);
  Value* w = b.cst("w", half_tensor({2, 2}, {1.0f / 3, 2, -1, 0.5f}));
  Node* mm = b.node("MatMul", "mm", {x, w}, DType::kFloat16, Shape::of({1, 2}));
  Node* cast = b.node("Cast", "round", {mm->output(0)}, DType::kFloat16, Shape::of({1, 2}));
  cast->set_attr("to", attr_int(10));
  Value* three = b.cst("three", half_tensor({}, {3}));
  Node* mul = b.node("Mul", "mul", {cast->output(0), three}, DType::kFloat16, Shape::of({1, 2}));
  Node* relu = b.node("Relu", "relu", {mul->output(0)}, DType::kFloat16, Shape::of({1, 2}));
  b.out(relu->output(0));
  return std::move(b.g);
}

TEST(WidenHalf, KeepsTheDeclaredTypesAndRoundsWhereAsked) {
  auto g = half_graph();
  EXPECT_GT(widen_half_precision(*g), 0u);
  verify_graph(*g);
  EXPECT_EQ(g->inputs()[0]->dtype(), DType::kFloat16);
  EXPECT_EQ(g->outputs()[0]->dtype(), DType::kFloat16);
  const Value* w = g->find_value("w");
  ASSERT_EQ(w->dtype(), DType::kFloat32);
  EXPECT_EQ(w->constant().data<float>()[0], half_to_float(to_half<Float16>(1.0f / 3)));
  EXPECT_EQ(g->find_value("mm_out")->dtype(), DType::kFloat32);
  // The Cast to float16 stays (its value float16), read through a Cast back to float32.
  EXPECT_EQ(g->find_value("round_out")->dtype(), DType::kFloat16);
  const Node* relu = g->find_value(g->outputs()[0]->name())->producer();
  EXPECT_EQ(relu->op_type(), "Cast");
  EXPECT_EQ(relu->attr_int("to", 0), 10);

  // x = [1, 1]: x @ w = [1/3 - 1, 2 + 0.5], rounded to float16, times 3, Relu.
  PlanSession s(std::move(g));
  std::vector<Tensor> out = s.run({{"x", half_tensor({1, 2}, {1, 1})}});
  ASSERT_EQ(out[0].dtype(), DType::kFloat16);
  EXPECT_EQ(half_to_float(out[0].data<Float16>()[0]), 0.0f);  // Relu of a negative
  EXPECT_EQ(half_to_float(out[0].data<Float16>()[1]), 7.5f);
}

TEST(WidenHalf, AWidenedGraphAndAFloatGraphStayAsTheyAre) {
  auto g = half_graph();
  widen_half_precision(*g);
  const std::string once = graph_to_text(*g);
  widen_half_precision(*g);
  EXPECT_EQ(graph_to_text(*g), once);

  testing::GraphBuilder b;
  b.out(b.n("Relu", {b.in("x", {2})}, {2}));
  const std::string before = graph_to_text(*b.g);
  EXPECT_EQ(widen_half_precision(*b.g), 0u);
  EXPECT_EQ(graph_to_text(*b.g), before);
}

}  // namespace widen_half_test
}  // namespace nnfuse
