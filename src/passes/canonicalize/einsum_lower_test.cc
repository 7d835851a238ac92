// Einsum lowering: each equation form becomes the MatMul / Transpose / Reshape / ReduceSum
// nodes it stands for (node counts as expected, the Einsum gone, its output value kept), the
// lowered graph on the fast kernels (no compute node on a reference kernel) computes what the
// Einsum does on the reference kernel, and what the pass does not take stays an Einsum.
#include <gtest/gtest.h>

#include "passes/canonicalize/canonicalize.h"
#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace einsum_lower_test {

using namespace fusion_test;

// One Einsum `eq` (node "einsum", output "einsum_out" of shape `out`) over graph inputs "a"
// and "b" of shapes `ins`; with `const_b`, the second operand is a constant instead.
std::unique_ptr<Graph> einsum_graph(const std::string& eq, const std::vector<Dims>& ins,
                                    const Dims& out, int64_t opset = 17, bool const_b = false) {
  B b(opset);
  std::vector<Value*> xs;
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::string name(1, static_cast<char>('a' + i));
    xs.push_back(i == 1 && const_b ? b.cst(name, random_tensor(ins[i], 7)) : b.in(name, ins[i]));
  }
  b.out(b.n("Einsum", xs, out, {{"equation", attr_string(eq)}}, "einsum"));
  return std::move(b.g);
}

std::unique_ptr<Graph> lowered(std::unique_ptr<Graph> g) {
  FusionReport report;
  PassContext ctx{report};
  make_einsum_lowering_pass()->run(*g, ctx);
  verify_graph(*g);
  return g;
}

// `g` on the fast kernels (with `strict`, no compute node may fall back to a reference kernel)
// and `plain` on the reference kernels give the same outputs on the same random inputs, within
// 1e-5 of the largest magnitude.
void expect_same_numbers_as(std::unique_ptr<Graph> g, std::unique_ptr<Graph> plain, bool strict) {
  std::map<std::string, Tensor> feeds;
  uint32_t seed = 1;
  for (const Value* v : plain->runtime_inputs()) {
    feeds[v->name()] = random_tensor(v->shape().static_dims(), seed++);
  }
  PlanOptions fast;
  fast.strict = strict;
  fast.warn_fallbacks = false;
  PlanOptions ref;
  ref.reference_only = true;
  PlanSession a(std::move(g), fast);
  PlanSession b(std::move(plain), ref);
  const std::vector<Tensor> x = a.run(feeds), y = b.run(feeds);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(x[i].shape(), y[i].shape());
    EXPECT_LE(testing::max_relative_error(x[i], y[i]), 1e-5) << "output " << i;
  }
}

// The Einsum is lowered to `nodes` nodes, `matmuls` of them MatMuls; its output value stays
// the graph's output; the numbers are the Einsum's.
void expect_lowered(const std::string& eq, const std::vector<Dims>& ins, const Dims& out,
                    size_t nodes, size_t matmuls, int64_t opset = 17, bool const_b = false) {
  SCOPED_TRACE(eq);
  std::unique_ptr<Graph> g = lowered(einsum_graph(eq, ins, out, opset, const_b));
  EXPECT_EQ(count_op(*g, "Einsum"), 0u) << graph_to_text(*g);
  EXPECT_EQ(count_op(*g, "MatMul"), matmuls) << graph_to_text(*g);
  EXPECT_EQ(g->num_nodes(), nodes) << graph_to_text(*g);
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name(), "einsum_out");
  EXPECT_EQ(g->outputs()[0]->shape(), Shape::of(out));
  expect_same_numbers_as(std::move(g), einsum_graph(eq, ins, out, opset, const_b), true);
}

// The Einsum stays as it was, and still computes what it did.
void expect_kept(const std::string& eq, const std::vector<Dims>& ins, const Dims& out) {
  SCOPED_TRACE(eq);
  std::unique_ptr<Graph> g = lowered(einsum_graph(eq, ins, out));
  EXPECT_EQ(count_op(*g, "Einsum"), 1u) << graph_to_text(*g);
  EXPECT_EQ(g->num_nodes(), 1u) << graph_to_text(*g);
  expect_same_numbers_as(std::move(g), einsum_graph(eq, ins, out), false);
}

TEST(EinsumLowering, MatrixProductIsOneMatMul) {
  expect_lowered("ij,jk->ik", {{3, 4}, {4, 5}}, {3, 5}, 1, 1);
}

TEST(EinsumLowering, BatchedMatrixProductIsOneMatMul) {
  expect_lowered("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5}, 1, 1);
}

TEST(EinsumLowering, AttentionScoresTransposeK) {
  expect_lowered("bhqd,bhkd->bhqk", {{2, 3, 4, 8}, {2, 3, 5, 8}}, {2, 3, 4, 5}, 2, 1);
}

TEST(EinsumLowering, AttentionContextIsOneMatMul) {
  expect_lowered("bhqk,bhkd->bhqd", {{2, 3, 4, 5}, {2, 3, 5, 8}}, {2, 3, 4, 8}, 1, 1);
}

TEST(EinsumLowering, SequenceFirstHeadsAreTransposed) {
  expect_lowered("bqhd,bkhd->bhqk", {{2, 4, 3, 8}, {2, 5, 3, 8}}, {2, 3, 4, 5}, 3, 1);
}

TEST(EinsumLowering, PairwiseScoresTransposeB) {
  expect_lowered("bid,bjd->bij", {{2, 4, 8}, {2, 5, 8}}, {2, 4, 5}, 2, 1);
}

TEST(EinsumLowering, PermutationIsTranspose) {
  expect_lowered("ij->ji", {{3, 4}}, {4, 3}, 1, 0);
  EXPECT_EQ(count_op(*lowered(einsum_graph("ij->ji", {{3, 4}}, {4, 3})), "Transpose"), 1u);
}

TEST(EinsumLowering, RowSumIsReduceSum) {
  expect_lowered("ij->i", {{3, 4}}, {3}, 1, 0);
  EXPECT_EQ(count_op(*lowered(einsum_graph("ij->i", {{3, 4}}, {3})), "ReduceSum"), 1u);
}

TEST(EinsumLowering, SumThenTranspose) { expect_lowered("ijk->ki", {{2, 3, 4}}, {4, 2}, 2, 0); }

// Below opset 13 ReduceSum takes its axes as an attribute.
TEST(EinsumLowering, ReduceSumBeforeOpset13) {
  expect_lowered("ij->i", {{3, 4}}, {3}, 1, 0, 12);
  expect_lowered("ij,jk->k", {{3, 4}, {4, 5}}, {5}, 4, 1, 12);
  std::unique_ptr<Graph> g = lowered(einsum_graph("ij->i", {{3, 4}}, {3}, 12));
  for (const Node* n : g->nodes()) {
    EXPECT_EQ(n->num_inputs(), 1u);
    EXPECT_EQ(n->attr_ints("axes"), (std::vector<int64_t>{1}));
  }
}

TEST(EinsumLowering, EllipsisBatchIsOneMatMul) {
  expect_lowered("...ij,...jk->...ik", {{2, 3, 4, 5}, {2, 3, 5, 6}}, {2, 3, 4, 6}, 1, 1);
}

// The ellipsis in one operand only: its dims are free dims of that operand (a Linear layer).
TEST(EinsumLowering, ImplicitEllipsisOnOneOperand) {
  expect_lowered("...ij,jk", {{2, 3, 4}, {4, 5}}, {2, 3, 5}, 1, 1);
}

TEST(EinsumLowering, DotProduct) {
  // [1, K] x [K, 1], then reshaped to a scalar.
  expect_lowered("i,i->", {{6}, {6}}, {}, 4, 1);
}

TEST(EinsumLowering, OuterProduct) {
  // Nothing contracted: [M, 1] x [1, N].
  expect_lowered("i,j->ij", {{3}, {4}}, {3, 4}, 3, 1);
}

TEST(EinsumLowering, ImplicitOutput) { expect_lowered("ij,jk", {{3, 4}, {4, 5}}, {3, 5}, 1, 1); }

TEST(EinsumLowering, ImplicitOutputIsSorted) {
  // Output "ik" although the terms name k first.
  expect_lowered("kj,ji", {{3, 4}, {4, 5}}, {5, 3}, 2, 1);
}

TEST(EinsumLowering, SummedLetterOfOneOperand) {
  // i only in A and not in the output: summed before the product ([1, K] x [K, N]).
  expect_lowered("ij,jk->k", {{3, 4}, {4, 5}}, {5}, 4, 1);
}

TEST(EinsumLowering, SeveralContractedLettersMerge) {
  expect_lowered("ijk,jkl->il", {{2, 3, 4}, {3, 4, 5}}, {2, 5}, 3, 1);
}

TEST(EinsumLowering, OutputInAnotherOrder) {
  expect_lowered("abc,cd->dba", {{2, 3, 4}, {4, 5}}, {5, 3, 2}, 3, 1);
}

// A Transpose of a constant weight is done at compile time.
TEST(EinsumLowering, ConstantWeightIsTransposedOnce) {
  expect_lowered("bij,kj->bik", {{2, 3, 4}, {5, 4}}, {2, 3, 5}, 1, 1, 17, true);
}

TEST(EinsumLowering, DiagonalStaysEinsum) { expect_kept("ii->i", {{3, 3}}, {3}); }

// MatMul would broadcast it, but the pass takes equal batch dims only.
TEST(EinsumLowering, BroadcastBatchStaysEinsum) {
  expect_kept("...ij,...jk->...ik", {{1, 3, 4}, {2, 4, 5}}, {2, 3, 5});
}

TEST(EinsumLowering, ThreeOperandsStayEinsum) {
  expect_kept("ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, {2, 5});
}

TEST(EinsumLowering, UnknownShapeStaysEinsum) {
  for (bool rank_known : {false, true}) {
    B b;
    Shape s = Shape::unknown();
    if (rank_known) {
      s.has_rank = true;
      s.dims = {Dim{-1, "n"}, Dim{4, ""}};
    }
    Value* x = b.input("a", s);
    Value* w = b.in("b", {4, 5});
    Node* e = b.node("Einsum", "einsum", {x, w});
    e->set_attr("equation", attr_string("ij,jk->ik"));
    b.out(e->output(0));
    std::unique_ptr<Graph> g = lowered(std::move(b.g));
    EXPECT_EQ(count_op(*g, "Einsum"), 1u) << graph_to_text(*g);
    EXPECT_EQ(g->num_nodes(), 1u);
  }
}

// The pass is in the pipeline: what reaches the fusion passes is a MatMul.
TEST(EinsumLowering, PipelineLowersEinsum) {
  const Dims q = {2, 3, 4, 8}, k = {2, 3, 5, 8}, s = {2, 3, 4, 5};
  Fused f = fuse_without_auto_fusion(einsum_graph("bhqd,bhkd->bhqk", {q, k}, s));
  EXPECT_EQ(count_op(*f.graph, "Einsum"), 0u) << graph_to_text(*f.graph);
  expect_same_numbers_as(std::move(f.graph), einsum_graph("bhqd,bhkd->bhqk", {q, k}, s), true);
}

// Projections to heads and attention scores written as Einsums whose outputs have a rank but no
// dims (as ONNX's Einsum inference leaves them): each lowered Einsum's dims reach the Reshape
// after it and the next Einsum, so the whole chain is lowered.
std::unique_ptr<Graph> einsum_chain() {
  B b;
  Value* x = b.in("x", {1, 6, 8});
  auto einsum = [&](const std::string& name, std::vector<Value*> ins, const std::string& eq,
                    size_t rank) {
    Shape s;
    s.has_rank = true;
    s.dims.resize(rank);
    Node* n = b.node("Einsum", name, std::move(ins), DType::kFloat32, s);
    n->set_attr("equation", attr_string(eq));
    return n->output(0);
  };
  Value* q = einsum("q", {x, b.cst("wq", random_tensor({8, 8}, 3))}, "bsd,de->bse", 3);
  Value* k = einsum("k", {x, b.cst("wk", random_tensor({8, 8}, 4))}, "bsd,de->bse", 3);
  Value* heads = b.cst("heads", Tensor::from_vector<int64_t>({4}, {1, 6, 2, 4}));
  Value* qh = b.node("Reshape", "qh", {q, heads})->output(0);
  Value* kh = b.node("Reshape", "kh", {k, heads})->output(0);
  b.out(einsum("scores", {qh, kh}, "bqhd,bkhd->bhqk", 4));
  return std::move(b.g);
}

TEST(EinsumLowering, ChainOfEinsumsWithoutStaticDimsIsLoweredWhole) {
  std::unique_ptr<Graph> g = lowered(einsum_chain());
  EXPECT_EQ(count_op(*g, "Einsum"), 0u) << graph_to_text(*g);
  EXPECT_EQ(count_op(*g, "MatMul"), 3u) << graph_to_text(*g);
  EXPECT_EQ(g->outputs()[0]->shape(), Shape::of({1, 2, 6, 6}));
  expect_same_numbers_as(std::move(g), einsum_chain(), false);
}

}  // namespace einsum_lower_test
}  // namespace nnfuse
