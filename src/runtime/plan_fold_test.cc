// Folding alone: Constant nodes and views of constants are computed once; nothing that reads a
// graph input is.
#include "runtime/plan_fold.h"

#include <gtest/gtest.h>

#include "ir/builder.h"

namespace nnfuse {
namespace plan_fold_test {

TEST(PlanFold, ConstantsAndViewsOfConstantsFold) {
  Graph g;
  g.opsets[""] = 17;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({2, 3}));
  g.add_input(x);
  Value* w = g.add_value("w", DType::kFloat32, Shape::of({2, 3}));
  w->set_constant(Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  // c = Constant; s = Constant [3, 2]; r = Reshape(c, s); i = Identity(w): all folded.
  Value* c = g.add_value("c", DType::kFloat32, Shape::of({2, 3}));
  g.add_node("Constant", "c", {}, {c})
      ->set_attr("value", attr_tensor(Tensor::from_vector<float>({2, 3}, {6, 5, 4, 3, 2, 1})));
  Value* s = g.add_value("s", DType::kInt64, Shape::of({2}));
  g.add_node("Constant", "s", {}, {s})
      ->set_attr("value", attr_tensor(Tensor::from_vector<int64_t>({2}, {3, 2})));
  Value* r = g.add_value("r", DType::kFloat32, Shape::of({3, 2}));
  g.add_node("Reshape", "r", {c, s}, {r});
  Value* i = g.add_value("i", DType::kFloat32, Shape::of({2, 3}));
  g.add_node("Identity", "i", {w}, {i});
  // Of the graph input: not folded, neither the Relu nor the view of it.
  Value* a = g.add_value("a", DType::kFloat32, Shape::of({2, 3}));
  g.add_node("Relu", "relu", {x}, {a});
  Value* b = g.add_value("b", DType::kFloat32, Shape::of({3, 2}));
  g.add_node("Reshape", "view_of_input", {a, s}, {b});
  // A computation on constants that is no view: left to its kernel.
  Value* d = g.add_value("d", DType::kFloat32, Shape::of({2, 3}));
  g.add_node("Neg", "neg", {w}, {d});
  g.add_output(r);
  g.add_output(b);
  g.add_output(d);

  const FoldedValues folded = fold_constants(g);
  EXPECT_EQ(folded.size(), 4u);
  ASSERT_TRUE(folded.count(r));
  EXPECT_EQ(folded.at(r).shape(), (Dims{3, 2}));
  EXPECT_EQ(folded.at(r).data<float>()[1], 5.0f);
  ASSERT_TRUE(folded.count(i));
  EXPECT_EQ(folded.at(i).data<float>()[5], 6.0f);
  EXPECT_EQ(folded.at(s).data<int64_t>()[0], 3);
  EXPECT_TRUE(folded.count(c));
  for (const Value* v : {a, b, d}) EXPECT_FALSE(folded.count(v)) << v->name();
}

TEST(PlanFold, ViewOpsAreTheReshapeLikeOnes) {
  Graph g;
  Value* x = g.add_value("x");
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}) {
    EXPECT_TRUE(is_view_op(*g.add_node(op, op, {x}, {g.add_value(std::string(op) + "_y")}))) << op;
  }
  EXPECT_FALSE(is_view_op(*g.add_node("Transpose", "t", {x}, {g.add_value("t_y")})));
  EXPECT_FALSE(is_view_op(*g.add_node("Reshape", "other", {x}, {g.add_value("o_y")}, "ai.x")));
}

}  // namespace plan_fold_test
}  // namespace nnfuse
