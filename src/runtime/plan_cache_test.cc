#include "runtime/plan_cache.h"

#include <gtest/gtest.h>

#include "ir/error.h"

namespace nnfuse {
namespace plan_cache_test {

// x [batch, 4] -> Relu -> Mul(x, 2) -> y, built with x's dims as given (symbolic when empty).
std::unique_ptr<Graph> relu_graph(const Dims& dims) {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Shape s;
  s.has_rank = true;
  s.dims = {Dim{-1, "batch"}, Dim{4, ""}};
  if (!dims.empty()) s = Shape::of(dims);
  Value* x = g->add_value("x", DType::kFloat32, s);
  g->add_input(x);
  Value* r = g->add_value("r", DType::kFloat32, dims.empty() ? Shape{} : Shape::of(dims));
  Value* two = g->add_value("two");
  two->set_constant(Tensor::scalar<float>(2));
  Value* y = g->add_value("y", DType::kFloat32, dims.empty() ? Shape{} : Shape::of(dims));
  g->add_node("Relu", "relu", {x}, {r});
  g->add_node("Mul", "mul", {r, two}, {y});
  g->add_output(y);
  return g;
}

struct Counting {
  int built = 0;
  PlanCache::Factory factory() {
    return [this](const PlanCache::Shapes& s) {
      ++built;
      return std::make_unique<PlanSession>(relu_graph(s.at("x")));
    };
  }
};

Tensor input(int64_t batch) {
  Tensor t(DType::kFloat32, {batch, 4});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i % 7) - 3;
  return t;
}

TEST(PlanCache, OnePlanPerShapeEachStaticAndReused) {
  Counting c;
  PlanCache cache(input_decls(*relu_graph({})), c.factory(), 4);
  for (int round = 0; round < 3; ++round) {
    for (int64_t b : {1, 3, 8}) {
      std::vector<Tensor> out = cache.run({{"x", input(b)}});
      ASSERT_EQ(out.size(), 1u);
      ASSERT_EQ(out[0].shape(), (Dims{b, 4}));
      for (int64_t i = 0; i < out[0].numel(); ++i) {
        const float x = static_cast<float>(i % 7) - 3;
        EXPECT_EQ(out[0].data<float>()[i], 2 * std::max(x, 0.0f));
      }
    }
  }
  EXPECT_EQ(c.built, 3);
  EXPECT_EQ(cache.builds(), 3u);
  EXPECT_EQ(cache.hits(), 6u);
  // Every plan is specialized: all its values have static shapes.
  const PlanSession& s = cache.session_for({{"x", input(3)}});
  for (const PlanValue& v : s.plan().values()) EXPECT_TRUE(v.static_shape) << v.name;
}

TEST(PlanCache, NeverGrowsPastItsBoundAndEvictsTheLeastRecentlyUsed) {
  Counting c;
  PlanCache cache(input_decls(*relu_graph({})), c.factory(), 2);
  cache.run({{"x", input(1)}});
  cache.run({{"x", input(2)}});
  cache.run({{"x", input(1)}});  // 1 is now the most recent
  cache.run({{"x", input(3)}});  // evicts 2
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.holds({{"x", {1, 4}}}));
  EXPECT_FALSE(cache.holds({{"x", {2, 4}}}));
  EXPECT_TRUE(cache.holds({{"x", {3, 4}}}));
  for (int64_t b = 4; b < 20; ++b) {
    cache.run({{"x", input(b)}});
    EXPECT_LE(cache.size(), 2u);
  }
  EXPECT_EQ(c.built, 19);
  EXPECT_THROW(PlanCache(input_decls(*relu_graph({})), c.factory(), 0), Error);
}

TEST(PlanCache, ForbiddenShapesAreRefusedBeforeAnythingIsBuilt) {
  Counting c;
  PlanCache cache(input_decls(*relu_graph({})), c.factory(), 4);
  Tensor wrong_dim(DType::kFloat32, {2, 5});
  try {
    cache.run({{"x", wrong_dim}});
    FAIL() << "a fixed dim of another size was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("input 'x' has shape [2, 5]"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("[batch, 4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cache.run({{"x", Tensor(DType::kFloat32, {2, 4, 1})}}), Error);
  EXPECT_THROW(cache.session_for_shapes({{"x", {2, 5}}}), Error);
  EXPECT_THROW(cache.session_for_shapes({}), Error);
  EXPECT_EQ(c.built, 0);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(PlanCache, DynamicInputsAreRecognized) {
  EXPECT_TRUE(has_dynamic_inputs(input_decls(*relu_graph({}))));
  EXPECT_FALSE(has_dynamic_inputs(input_decls(*relu_graph({2, 4}))));
}

}  // namespace plan_cache_test
}  // namespace nnfuse
