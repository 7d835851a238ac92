// GroupNormFusionPass: the GroupNorm export (Reshape, InstanceNormalization, Reshape, Mul, Add,
// SiLU) with a time-embedding Linear added to its input becomes one GroupNorm node; declined
// with a reason for a view whose groups do not divide the channels and for an addend that is not
// one value a channel; fused == unfused numerically; the switch file turns the pass off.
#include <gtest/gtest.h>

#include "config/switches.h"
#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace group_norm_test {

using namespace fusion_test;

// x [1, 8, 4, 4] (+ Linear(t [1, 6]) as [1, 8, 1, 1], or + a [1, 8, 4, 1] value) -> Reshape
// [1, G, 8 / G * 16] -> InstanceNormalization -> Reshape back -> Mul gamma -> Add beta -> SiLU.
std::unique_ptr<Graph> group_norm_graph(int64_t g, const std::string& addend = "") {
  B b;
  Value* x = b.in("x", {1, 8, 4, 4});
  if (addend.rfind("linear", 0) == 0) {
    Value* t = b.in("t", {1, 6});
    if (addend != "linear") {
      // "linear_silu": the SiLU of t before the Linear; "linear_silu_shared": that SiLU also an
      // output of the graph.
      Value* s = b.n("Mul", {t, b.n("Sigmoid", {t}, {1, 6}, {}, "t_sig")}, {1, 6}, {}, "t_silu");
      if (addend == "linear_silu_shared") b.out(s);
      t = s;
    }
    Value* p = b.n("Gemm", {t, b.c(random_tensor({8, 6}, 1)), b.c(random_tensor({8}, 2))}, {1, 8},
                   {{"transB", attr_int(1)}}, "temb");
    Value* u =
        b.n("Unsqueeze", {p, b.c(Tensor::from_vector<int64_t>({1}, {2}))}, {1, 8, 1}, {}, "u1");
    u = b.n("Unsqueeze", {u, b.c(Tensor::from_vector<int64_t>({1}, {3}))}, {1, 8, 1, 1}, {}, "u2");
    x = b.n("Add", {x, u}, {1, 8, 4, 4}, {}, "add_temb");
  } else if (addend == "rows") {
    Value* t = b.in("t", {1, 8, 4});
    Value* u =
        b.n("Unsqueeze", {t, b.c(Tensor::from_vector<int64_t>({1}, {3}))}, {1, 8, 4, 1}, {}, "u1");
    x = b.n("Add", {x, u}, {1, 8, 4, 4}, {}, "add_rows");
  }
  Value* r = b.n("Reshape", {x, b.c(Tensor::from_vector<int64_t>({3}, {1, g, -1}))},
                 {1, g, 8 * 16 / g}, {}, "view");
  Value* in = b.n("InstanceNormalization",
                  {r, b.c(random_tensor({g}, 3, 0.5f, 1.5f)), b.c(random_tensor({g}, 4))},
                  {1, g, 8 * 16 / g}, {{"epsilon", attr_float(1e-5f)}}, "in");
  Value* back = b.n("Reshape", {in, b.c(Tensor::from_vector<int64_t>({4}, {1, 8, 4, 4}))},
                    {1, 8, 4, 4}, {}, "back");
  Value* m =
      b.n("Mul", {back, b.c(random_tensor({8, 1, 1}, 5, 0.5f, 1.5f))}, {1, 8, 4, 4}, {}, "gamma");
  Value* a = b.n("Add", {m, b.c(random_tensor({8, 1, 1}, 6))}, {1, 8, 4, 4}, {}, "beta");
  Value* s = b.n("Sigmoid", {a}, {1, 8, 4, 4}, {}, "sig");
  b.out(b.n("Mul", {a, s}, {1, 8, 4, 4}, {}, "silu"));
  return std::move(b.g);
}

TEST(GroupNormFusion, ExportWithItsTimeEmbeddingIsOneNode) {
  for (const std::string addend : {"", "linear"}) {
    SCOPED_TRACE(addend);
    auto f = fuse(group_norm_graph(4, addend));
    ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    const Node& n = *f.graph->nodes()[0];
    EXPECT_EQ(n.op_type(), "GroupNorm");
    EXPECT_EQ(n.attr_int("num_groups", 0), 4);
    EXPECT_EQ(n.attr_string("activation", ""), "SiLU");
    EXPECT_EQ(n.num_inputs(), addend.empty() ? 3u : 6u);
    EXPECT_EQ(record(f.report, "GroupNormFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), group_norm_graph(4, addend));
  }
}

TEST(GroupNormFusion, TheEmbeddingsSiluGoesInWhereNothingElseReadsIt) {
  auto f = fuse(group_norm_graph(4, "linear_silu"));
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  const Node& n = *f.graph->nodes()[0];
  EXPECT_EQ(n.attr_string("t_activation", ""), "SiLU");
  EXPECT_EQ(n.input(3)->name(), "t");
  expect_same_numbers(std::move(f.graph), group_norm_graph(4, "linear_silu"));
  // The SiLU is an output too: it stays, the norm reads it.
  auto shared = fuse(group_norm_graph(4, "linear_silu_shared"));
  EXPECT_EQ(count_op(*shared.graph, "GroupNorm"), 1u) << graph_to_text(*shared.graph);
  EXPECT_EQ(shared.graph->num_nodes(), 2u) << graph_to_text(*shared.graph);
  for (const Node* x : shared.graph->nodes()) {
    if (x->op_type() == "GroupNorm") {
      EXPECT_EQ(x->attr_string("t_activation", ""), "");
    }
  }
  expect_same_numbers(std::move(shared.graph), group_norm_graph(4, "linear_silu_shared"));
}

TEST(GroupNormFusion, DeclinesGroupsThatDoNotDivideOrAnAddendThatIsNotPerChannel) {
  // [1, 8, 4, 4] viewed as [1, 16, 8]: 16 "groups" of half a channel each. The whole export
  // is declined; its InstanceNormalization alone is still a GroupNorm of the view.
  auto d = fuse(group_norm_graph(16));
  const PassRecord* r = record(d.report, "GroupNormFusionPass");
  ASSERT_FALSE(r->rejected.empty()) << graph_to_text(*d.graph);
  EXPECT_NE(r->rejected[0].reason.find("G dividing the 8 channels"), std::string::npos)
      << r->rejected[0].reason;
  EXPECT_EQ(count_op(*d.graph, "Reshape"), 2u) << graph_to_text(*d.graph);
  EXPECT_EQ(count_op(*d.graph, "InstanceNormalization"), 0u);
  expect_same_numbers(std::move(d.graph), group_norm_graph(16));
  // An addend per (channel, row) is not one value a channel: the norm fuses without it.
  auto f = fuse(group_norm_graph(4, "rows"));
  EXPECT_EQ(count_op(*f.graph, "GroupNorm"), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(count_op(*f.graph, "Add") + count_op(*f.graph, "FusedRegion"), 1u)
      << graph_to_text(*f.graph);
  expect_same_numbers(std::move(f.graph), group_norm_graph(4, "rows"));
}

TEST(GroupNormFusion, SwitchedOffInTheSwitchFile) {
  FusionSwitches sw = switched_off("GroupNormFusionPass");
  auto f = fuse(group_norm_graph(4), &sw);
  EXPECT_EQ(count_op(*f.graph, "GroupNorm"), 0u);
  EXPECT_EQ(count_op(*f.graph, "InstanceNormalization"), 1u);
}

}  // namespace group_norm_test
}  // namespace nnfuse
