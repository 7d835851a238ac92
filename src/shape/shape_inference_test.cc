#include "shape/shape_inference.h"

#include <gtest/gtest.h>

#include <memory>

#include "ir/builder.h"
#include "testing/graph_builder.h"

namespace nnfuse::shape {
namespace shape_inference_test {

// Exporters often leave values of unknown type and shape: the builder's untyped() nodes.
struct G : testing::GraphBuilder {
  G() : GraphBuilder(13) {}
  Value* in(const std::string& name, DType t, Shape s) { return input(name, std::move(s), t); }
  Value* n(const std::string& op, const std::vector<Value*>& ins,
           std::map<std::string, Attribute> attrs = {}) {
    return untyped(op, ins, std::move(attrs));
  }
};

Attribute ints(std::vector<int64_t> v) { return attr_ints(std::move(v)); }
Attribute integer(int64_t v) { return attr_int(v); }

TEST(ShapeInference, GroupNormAsExportedGetsStaticShapesInOneSweep) {
  // Reshape(x, [0, 2, -1]) -> InstanceNormalization -> Reshape(Shape(x)) -> Mul -> Relu: the
  // Reshape's target is Shape(x), so nothing after it has a shape until Shape folds.
  G b;
  Value* x = b.in("x", DType::kFloat32, Shape::of({1, 4, 3, 3}));
  Value* r = b.n("Reshape", {x, b.c(Tensor::from_vector<int64_t>({3}, {0, 2, -1}))});
  Value* in = b.n("InstanceNormalization", {r, b.c(Tensor::from_vector<float>({2}, {1, 1})),
                                            b.c(Tensor::from_vector<float>({2}, {0, 0}))});
  Value* back = b.n("Reshape", {in, b.n("Shape", {x})});
  Value* y = b.n("Relu", {b.n("Mul", {back, b.c(Tensor::scalar<float>(2))})});
  b.g->add_output(y);
  EXPECT_EQ(shape_coverage(*b.g).unknown, 6u);
  const SweepStats st = infer_and_fold(*b.g);
  EXPECT_EQ(st.folded, 1u);  // the Shape
  EXPECT_EQ(back->shape(), Shape::of({1, 4, 3, 3}));
  EXPECT_EQ(y->shape(), Shape::of({1, 4, 3, 3}));
  EXPECT_EQ(y->dtype(), DType::kFloat32);
  const ShapeCoverage c = shape_coverage(*b.g);
  EXPECT_EQ(c.unknown, 0u);
  EXPECT_TRUE(c.lost.empty());
  verify_graph(*b.g);
}

// A constant too large to keep is not computed to find that out (found by fuzz_model:
// ConstantOfShape of 2^31 floats allocated 8 GiB while folding). It stays a node for run time,
// known shape or not; the small one beside it folds.
TEST(ShapeInference, FoldingComputesNothingTooLargeToKeep) {
  G b;
  Value* big = b.n("ConstantOfShape", {b.c(Tensor::from_vector<int64_t>({2}, {1 << 20, 1 << 13}))});
  Value* wide = b.n("Expand", {b.c(Tensor::scalar<float>(1)),
                               b.c(Tensor::from_vector<int64_t>({2}, {1 << 16, 1 << 16}))});
  Value* small = b.n("ConstantOfShape", {b.c(Tensor::from_vector<int64_t>({2}, {2, 3}))});
  b.g->add_output(b.n("Relu", {big}));
  b.g->add_output(b.n("Relu", {wide}));
  b.g->add_output(b.n("Relu", {small}));
  infer_and_fold(*b.g);
  EXPECT_FALSE(big->is_constant());
  EXPECT_EQ(big->shape(), Shape::of({1 << 20, 1 << 13}));
  EXPECT_FALSE(wide->is_constant());
  ASSERT_TRUE(small->is_constant());
  EXPECT_EQ(small->constant().numel(), 6);
}

// A fold drops the constants only it read then, not at the end of the sweep: the 8-bit
// weights of a quantized model are not held beside all their dequantized copies.
TEST(ShapeInference, AFoldDropsTheInputsOnlyItRead) {
  G b;
  Value* w = b.c(Tensor::from_vector<int8_t>({4}, {1, -2, 3, -4}));
  Value* shared = b.c(Tensor::scalar<float>(0.5f));
  Value* dq = b.n("DequantizeLinear", {w, shared});
  b.g->add_output(b.n("Mul", {b.n("Relu", {dq}), shared}));
  const std::string w_name = w->name();
  ASSERT_TRUE(fold_constant(*b.g, dq->producer()));
  EXPECT_EQ(b.g->find_value(w_name), nullptr);  // only the fold read it
  EXPECT_TRUE(shared->is_constant());           // the Mul reads it too
  EXPECT_FLOAT_EQ(dq->constant().data<float>()[3], -2.0f);
  verify_graph(*b.g);
}

TEST(ShapeInference, ShapeArithmeticFoldsThroughGatherConcatAndCast) {
  // flatten(2) as exported: Reshape(x, Concat(Slice(Shape(x), 0, 2), [-1])).
  G b;
  Value* x = b.in("x", DType::kFloat32, Shape::of({2, 8, 4, 4}));
  Value* s = b.n("Shape", {x});
  Value* head = b.n("Slice", {s, b.c(Tensor::from_vector<int64_t>({1}, {0})),
                              b.c(Tensor::from_vector<int64_t>({1}, {2}))});
  Value* shape =
      b.n("Concat", {head, b.c(Tensor::from_vector<int64_t>({1}, {-1}))}, {{"axis", integer(0)}});
  Value* y = b.n("Reshape", {x, shape});
  Value* n2 =
      b.n("Cast", {b.n("Gather", {s, b.c(Tensor::scalar<int64_t>(1))})}, {{"to", integer(1)}});
  b.g->add_output(y);
  b.g->add_output(n2);
  infer_and_fold(*b.g);
  EXPECT_EQ(y->shape(), Shape::of({2, 8, 16}));
  EXPECT_TRUE(shape->is_constant() || !shape->producer());
  EXPECT_EQ(b.g->num_nodes(), 2u);  // the Reshape, and the Cast that writes a graph output
  EXPECT_EQ(n2->shape(), Shape::of({}));
}

TEST(ShapeInference, WhereNodesAShapeIsLostIsNamedWithWhatFollows) {
  // NonZero's output size depends on the data: lost there, and in the two values after it.
  G b;
  Value* x = b.in("x", DType::kFloat32, Shape::of({4}));
  Value* nz = b.n("NonZero", {x});
  Value* t = b.n("Transpose", {nz});
  Value* y = b.n("Cast", {t}, {{"to", integer(1)}});
  b.g->add_output(y);
  infer_and_fold(*b.g);
  const ShapeCoverage c = shape_coverage(*b.g);
  EXPECT_EQ(c.values, 3u);
  EXPECT_EQ(c.unknown, 3u);
  ASSERT_EQ(c.lost.size(), 1u);
  EXPECT_EQ(c.lost[0].node->op_type(), "NonZero");
  EXPECT_EQ(c.lost[0].shape, "[1, ?]");
  EXPECT_EQ(c.lost[0].downstream, 2u);
  EXPECT_EQ(c.lost[0].bound, "data-dependent: at most 4 (the elements of its input)");
}

TEST(ShapeInference, DataDependentDimsHaveTheBoundTheirInputsGive) {
  G b;
  Value* x = b.in("x", DType::kFloat32, Shape::of({3, 50}));
  Value* k = b.in("k", DType::kInt64, Shape::of({1}));
  Value* top = b.n("TopK", {x, k}, {{"axis", integer(1)}});
  b.g->add_output(top);
  Value* mask = b.in("mask", DType::kBool, Shape::of({3}));
  Value* kept = b.n("Compress", {x, mask}, {{"axis", integer(0)}});
  b.g->add_output(kept);
  Value* r = b.n("Relu", {x});
  b.g->add_output(r);
  infer_and_fold(*b.g);
  EXPECT_EQ(data_dependent_bound(*top->producer()),
            "data-dependent k: at most 50 (its input's axis)");
  EXPECT_EQ(data_dependent_bound(*kept->producer()),
            "data-dependent: at most 3 (the condition's length)");
  EXPECT_EQ(data_dependent_bound(*r->producer()), "");
}

TEST(ShapeInference, ValuesDynamicBecauseOfAnInputAreNoLoss) {
  G b;
  Shape dyn;
  dyn.has_rank = true;
  dyn.dims = {Dim{-1, "batch"}, Dim{8, ""}};
  Value* x = b.in("x", DType::kFloat32, dyn);
  Value* y = b.n("Relu", {b.n("Transpose", {x}, {{"perm", ints({1, 0})}})});
  b.g->add_output(y);
  infer_and_fold(*b.g);
  EXPECT_EQ(y->shape().str(), "[8, batch]");
  const ShapeCoverage c = shape_coverage(*b.g);
  EXPECT_EQ(c.unknown, 2u);
  EXPECT_TRUE(c.lost.empty());
}

TEST(ShapeInference, InferenceNeverForgetsWhatWasKnownAndSkipsFusedOps) {
  G b;
  Value* x = b.in("x", DType::kFloat32, Shape::of({3}));
  Value* o = b.g->add_value("o", DType::kFloat32, Shape::of({3}));
  b.g->add_node("FusedThing", "f", {x}, {o}, kFusedDomain);
  Value* y = b.n("Relu", {o});
  b.g->add_output(y);
  EXPECT_FALSE(infer_node(*b.g, b.g->nodes()[0]));
  infer_and_fold(*b.g);
  EXPECT_EQ(o->shape(), Shape::of({3}));
  EXPECT_EQ(y->shape(), Shape::of({3}));
}

}  // namespace shape_inference_test
}  // namespace nnfuse::shape
