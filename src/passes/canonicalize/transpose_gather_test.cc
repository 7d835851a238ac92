// Gather of one element of a transposed tensor: picked before the Transpose (which stays only
// where the slice's dims change order), the numbers as before, and what the pass must leave
// (a tensor index, a Transpose with another reader) left.
#include <gtest/gtest.h>

#include "passes/canonicalize/canonicalize.h"
#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace transpose_gather_test {

using namespace fusion_test;

// x [2, 3, 4, 5] -> Transpose(perm) -> Gather(axis, index) -> y; with `second_reader`, the
// Transpose's output is a graph output too.
std::unique_ptr<Graph> graph(const std::vector<int64_t>& perm, int64_t axis, Tensor index,
                             bool second_reader = false) {
  B b;
  const Dims xd = {2, 3, 4, 5};
  Value* x = b.in("x", xd);
  Dims td;
  for (int64_t p : perm) td.push_back(xd[static_cast<size_t>(p)]);
  Value* t = b.n("Transpose", {x}, td, {{"perm", ints(perm)}}, "tr");
  const int64_t a = axis < 0 ? axis + 4 : axis;
  Dims yd;
  for (int64_t k = 0; k < 4; ++k) {
    if (k != a) yd.push_back(td[static_cast<size_t>(k)]);
  }
  if (index.rank() > 0) yd.insert(yd.begin() + a, index.dim(0));
  Value* y = b.n("Gather", {t, b.cst("index", std::move(index))}, yd, {{"axis", attr_int(axis)}},
                 "gather");
  b.out(y);
  if (second_reader) b.out(t);
  return std::move(b.g);
}

std::unique_ptr<Graph> rewritten(std::unique_ptr<Graph> g) {
  FusionReport report;
  PassContext ctx{report};
  make_transpose_gather_pass()->run(*g, ctx);
  verify_graph(*g);
  return g;
}

void expect_same_numbers(std::unique_ptr<Graph> a, std::unique_ptr<Graph> b) {
  std::map<std::string, Tensor> feeds{{"x", random_tensor({2, 3, 4, 5}, 3)}};
  PlanOptions ref;
  ref.reference_only = true;
  PlanSession sa(std::move(a), ref), sb(std::move(b), ref);
  const std::vector<Tensor> x = sa.run(feeds), y = sb.run(feeds);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(x[i].shape(), y[i].shape());
    EXPECT_EQ(testing::max_relative_error(x[i], y[i]), 0.0) << "output " << i;
  }
}

TEST(TransposeGather, LastStepOfABatchFirstTranspose) {
  // [seq, batch, ...] -> [batch, seq, ...], then out[:, -1]: Gather on the sequence axis of x,
  // whose slice keeps its order: no Transpose left.
  const std::vector<int64_t> perm = {1, 0, 2, 3};
  auto g = rewritten(graph(perm, 1, Tensor::scalar<int64_t>(-1)));
  EXPECT_EQ(count_op(*g, "Transpose"), 0u) << graph_to_text(*g);
  ASSERT_EQ(count_op(*g, "Gather"), 1u);
  EXPECT_EQ(g->outputs()[0]->name(),
            graph(perm, 1, Tensor::scalar<int64_t>(-1))->outputs()[0]->name());
  expect_same_numbers(std::move(g), graph(perm, 1, Tensor::scalar<int64_t>(-1)));
}

TEST(TransposeGather, SliceThatChangesOrderKeepsASmallerTranspose) {
  for (const auto& [perm, axis] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{3, 1, 0, 2}, 0}, {{2, 3, 1, 0}, 2}, {{0, 3, 1, 2}, -1}, {{3, 2, 1, 0}, 1}}) {
    SCOPED_TRACE(dims_str(perm));
    auto g = rewritten(graph(perm, axis, Tensor::scalar<int64_t>(1)));
    EXPECT_EQ(g->num_nodes(), 2u) << graph_to_text(*g);
    EXPECT_EQ(g->nodes()[0]->op_type(), "Gather") << graph_to_text(*g);
    expect_same_numbers(std::move(g), graph(perm, axis, Tensor::scalar<int64_t>(1)));
  }
}

TEST(TransposeGather, LeavesTensorIndicesAndSharedTransposes) {
  const std::vector<int64_t> perm = {1, 0, 2, 3};
  auto g = rewritten(graph(perm, 1, Tensor::from_vector<int64_t>({2}, {0, 1})));
  EXPECT_EQ(count_op(*g, "Transpose"), 1u);
  EXPECT_EQ(g->nodes()[1]->op_type(), "Gather");
  auto h = rewritten(graph(perm, 1, Tensor::scalar<int64_t>(0), true));
  EXPECT_EQ(count_op(*h, "Transpose"), 1u);
  EXPECT_EQ(h->nodes()[0]->op_type(), "Transpose");
}

}  // namespace transpose_gather_test
}  // namespace nnfuse
