// Weights held once: a session drops from its graph the constants its kernels prepacked.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/session.h"

namespace nnfuse {
namespace weights_once_test {

Tensor filled(const Dims& d, float scale) {
  Tensor t(DType::kFloat32, d);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<float>()[i] = scale * static_cast<float>((i * 37) % 11 - 5);
  }
  return t;
}

// x [1, 3, 8, 8] -> Conv (W [4, 3, 3, 3], B [4]) -> Add(k [1, 4, 1, 1]) -> y
std::unique_ptr<Graph> conv_add() {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({1, 3, 8, 8}));
  g->add_input(x);
  auto constant = [&](const std::string& name, Tensor t) {
    Value* v = g->add_value(name);
    v->set_constant(std::move(t));
    return v;
  };
  Value* w = constant("W", filled({4, 3, 3, 3}, 0.1f));
  Value* b = constant("B", filled({4}, 0.5f));
  Value* k = constant("k", filled({1, 4, 1, 1}, 0.25f));
  Value* c = g->add_value("c", DType::kFloat32, Shape::of({1, 4, 6, 6}));
  Value* y = g->add_value("y", DType::kFloat32, Shape::of({1, 4, 6, 6}));
  g->add_node("Conv", "conv", {x, w, b}, {c});
  g->add_node("Add", "add", {c, k}, {y});
  g->add_output(y);
  return g;
}

TEST(WeightsOnce, PrepackedWeightsAreDroppedAndTheRestKept) {
  PlanSession fast(conv_add());
  const ExecutionPlan& plan = fast.plan();
  ASSERT_EQ(plan.steps()[0].kernel_name.rfind("onednn", 0), 0u) << plan.steps()[0].kernel_name;
  // The conv prepacked W and B: the graph holds their dtype and shape, not their data.
  EXPECT_FALSE(fast.graph().find_value("W")->is_constant());
  EXPECT_FALSE(fast.graph().find_value("B")->is_constant());
  EXPECT_EQ(fast.graph().find_value("W")->shape(), Shape::of({4, 3, 3, 3}));
  // The Add reads k when it runs: kept.
  EXPECT_TRUE(fast.graph().find_value("k")->is_constant());

  PlanOptions ref;
  ref.reference_only = true;
  PlanSession oracle(conv_add(), ref);
  EXPECT_TRUE(oracle.graph().find_value("W")->is_constant());  // reference kernels read it

  const std::map<std::string, Tensor> feeds = {{"x", filled({1, 3, 8, 8}, 0.3f)}};
  for (int run = 0; run < 2; ++run) {
    const Tensor got = fast.run(feeds)[0];
    const Tensor want = oracle.run(feeds)[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) {
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4) << i;
    }
  }
}

TEST(WeightsOnce, APlanReleasesOnlyFromTheGraphItIsHanded) {
  // Not handed the graph: the plan releases nothing (a graph others keep using).
  std::unique_ptr<Graph> g = conv_add();
  {
    ExecutionPlan plan(*g, PlanOptions{});
    EXPECT_TRUE(g->find_value("W")->is_constant());
    for (const PlanValue& v : plan.values()) EXPECT_FALSE(v.unread_constant) << v.name;
  }
  // Handed it: the prepacked weights go, and the plan says which.
  PlanOptions release;
  release.release_weights_of = g.get();
  ExecutionPlan plan(*g, release);
  EXPECT_FALSE(g->find_value("W")->is_constant());
  EXPECT_TRUE(g->find_value("k")->is_constant());
  size_t unread = 0;
  for (const PlanValue& v : plan.values()) unread += v.unread_constant ? 1 : 0;
  EXPECT_EQ(unread, 2u);                                  // W and B
  EXPECT_EQ(plan.options().release_weights_of, nullptr);  // handed over for planning only
  // Handing another graph than the one planned is refused.
  EXPECT_THROW(ExecutionPlan(*conv_add(), release), Error);
}

}  // namespace weights_once_test
}  // namespace nnfuse
