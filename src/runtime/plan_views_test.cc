// Views alone: which nodes run as views of their input, in which layout, and which need a plain
// copy of it first.
#include "runtime/plan_views.h"

#include <gtest/gtest.h>

#include "ir/builder.h"

namespace nnfuse {
namespace plan_views_test {

struct ViewCase {
  Graph g;
  Value* x = nullptr;
  PlanValue in;

  // Input x of `shape`, held by the plan in `layout`.
  ViewCase(const Dims& shape, Layout layout, bool constant = false) {
    g.opsets[""] = 17;
    x = g.add_value("x", DType::kFloat32, Shape::of(shape));
    g.add_input(x);
    in.value = x;
    in.name = "x";
    in.dtype = DType::kFloat32;
    in.static_shape = true;
    in.shape = shape;
    in.layout = layout;
    in.constant = constant;
  }

  // `op` of x (and `extra` inputs) into an output of `out_shape`.
  const Node& node(const std::string& op, const Dims& out_shape,
                   std::map<std::string, Attribute> attrs = {}, std::vector<Value*> extra = {},
                   DType out_type = DType::kFloat32) {
    std::vector<Value*> ins = {x};
    ins.insert(ins.end(), extra.begin(), extra.end());
    Node* n = g.add_node(
        op, op + std::to_string(g.num_nodes()), ins,
        {g.add_value("y" + std::to_string(g.num_nodes()), out_type, Shape::of(out_shape))});
    for (auto& [k, a] : attrs) n->set_attr(k, a);
    return *n;
  }
};

TEST(PlanViews, ReshapeLikeNodesAreViewsReadPlain) {
  ViewCase plain({2, 3, 4}, Layout::kPlain);
  Value* s = plain.g.add_value("s", DType::kInt64, Shape::of({2}));
  s->set_constant(Tensor::from_vector<int64_t>({2}, {6, 4}));
  std::optional<ViewOf> v = view_of(plain.node("Reshape", {6, 4}, {}, {s}), &plain.in);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->layout, Layout::kPlain);
  EXPECT_FALSE(v->plain_input);
  EXPECT_TRUE(view_of(plain.node("Flatten", {2, 12}), &plain.in));
  EXPECT_TRUE(view_of(plain.node("Identity", {2, 3, 4}), &plain.in));
  // Another element count, another type, or Dropout's mask: a kernel runs it.
  EXPECT_FALSE(view_of(plain.node("Flatten", {2, 13}), &plain.in));
  EXPECT_FALSE(view_of(plain.node("Identity", {2, 3, 4}, {}, {}, DType::kFloat16), &plain.in));
  Node* dropout = plain.g.add_node("Dropout", "d", {plain.x},
                                   {plain.g.add_value("dy", DType::kFloat32, Shape::of({2, 3, 4})),
                                    plain.g.add_value("mask", DType::kBool, Shape::of({2, 3, 4}))});
  EXPECT_FALSE(view_of(*dropout, &plain.in));
  // A channels-last input is read through its plain copy.
  ViewCase nhwc({1, 4, 3, 3}, Layout::kNHWC);
  v = view_of(nhwc.node("Flatten", {1, 36}), &nhwc.in);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->plain_input);
  EXPECT_EQ(v->layout, Layout::kPlain);
  // No input, or an op that computes: no view.
  EXPECT_FALSE(view_of(nhwc.node("Flatten", {1, 36}), nullptr));
  EXPECT_FALSE(view_of(nhwc.node("Relu", {1, 4, 3, 3}), &nhwc.in));
}

TEST(PlanViews, TransposesBetweenStorageOrdersAreViewsInTheOtherLayout) {
  // [0, 2, 3, 1] of an NHWC [1, 4, 3, 5] is the plain [1, 3, 5, 4] it is stored as.
  ViewCase nhwc({1, 4, 3, 5}, Layout::kNHWC);
  std::optional<ViewOf> v =
      view_of(nhwc.node("Transpose", {1, 3, 5, 4}, {{"perm", attr_ints({0, 2, 3, 1})}}), &nhwc.in);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->layout, Layout::kPlain);
  EXPECT_FALSE(v->plain_input);
  // [0, 3, 1, 2] of a plain [1, 3, 5, 4] is an NHWC [1, 4, 3, 5].
  ViewCase plain({1, 3, 5, 4}, Layout::kPlain);
  v = view_of(plain.node("Transpose", {1, 4, 3, 5}, {{"perm", attr_ints({0, 3, 1, 2})}}),
              &plain.in);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->layout, Layout::kNHWC);
  // Moving only dims of extent 1: a plain reshape.
  ViewCase tokens({7, 1, 8}, Layout::kPlain);
  v = view_of(tokens.node("Transpose", {1, 7, 8}, {{"perm", attr_ints({1, 0, 2})}}), &tokens.in);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->layout, Layout::kPlain);
  // Other permutations move bytes; so does any of a constant (folded or left to its kernel).
  EXPECT_FALSE(view_of(plain.node("Transpose", {1, 5, 3, 4}, {{"perm", attr_ints({0, 2, 1, 3})}}),
                       &plain.in));
  EXPECT_FALSE(
      view_of(nhwc.node("Transpose", {1, 4, 3, 5}, {{"perm", attr_ints({0, 1, 2, 3})}}), &nhwc.in));
  ViewCase constant({1, 3, 5, 4}, Layout::kPlain, /*constant=*/true);
  EXPECT_FALSE(view_of(
      constant.node("Transpose", {1, 4, 3, 5}, {{"perm", attr_ints({0, 3, 1, 2})}}), &constant.in));
}

}  // namespace plan_views_test
}  // namespace nnfuse
