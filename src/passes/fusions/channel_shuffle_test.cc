// ChannelShuffleFusionPass: ShuffleNet's Reshape / Transpose / Reshape channel shuffle becomes
// one Gather of the channels, each Slice of it a Gather of its own; near misses are declined
// with a reason; fused == unfused numerically.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace channel_shuffle_test {

using namespace fusion_test;

Tensor i64s(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// x [1, 12, 5, 4] -> Conv -> Reshape [1, g, 12/g, 5, 4] -> Transpose(perm) -> Reshape back
// [-> the two halves as Slices, each into a Relu].
std::unique_ptr<Graph> shuffle_graph(int64_t groups, std::vector<int64_t> perm, bool halves) {
  B b;
  Value* x = b.in("x", {1, 12, 5, 4});
  Value* c = b.n("Conv", {x, b.c(random_tensor({12, 12, 1, 1}, 1))}, {1, 12, 5, 4}, {}, "conv");
  Dims split = {1, groups, 12 / groups, 5, 4};
  Value* r = b.n("Reshape", {c, b.c(i64s(split))}, split, {}, "split");
  Dims swapped = split;
  for (size_t i = 0; i < perm.size(); ++i) swapped[i] = split[static_cast<size_t>(perm[i])];
  Value* t = b.n("Transpose", {r}, swapped, {{"perm", ints(perm)}}, "swap");
  Value* y = b.n("Reshape", {t, b.c(i64s({1, 12, 5, 4}))}, {1, 12, 5, 4}, {}, "merge");
  if (!halves) {
    b.out(y);
    return std::move(b.g);
  }
  for (int64_t h = 0; h < 2; ++h) {
    Value* s = b.n("Slice", {y, b.c(i64s({6 * h})), b.c(i64s({6 * h + 6})), b.c(i64s({1}))},
                   {1, 6, 5, 4}, {}, "half" + std::to_string(h));
    b.out(b.n("Relu", {s}, {1, 6, 5, 4}, {}, "relu" + std::to_string(h)));
  }
  return std::move(b.g);
}

TEST(ChannelShuffleFusion, ShuffleBecomesOneGatherOfTheChannels) {
  for (int64_t groups : {2, 3, 4}) {
    SCOPED_TRACE("groups " + std::to_string(groups));
    auto f = fuse(shuffle_graph(groups, {0, 2, 1, 3, 4}, false));
    EXPECT_EQ(count_op(*f.graph, "Transpose"), 0u) << graph_to_text(*f.graph);
    EXPECT_EQ(count_op(*f.graph, "Reshape"), 0u);
    ASSERT_EQ(count_op(*f.graph, "Gather"), 1u);
    EXPECT_EQ(record(f.report, "ChannelShuffleFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(f.graph), shuffle_graph(groups, {0, 2, 1, 3, 4}, false));
  }
}

TEST(ChannelShuffleFusion, HalvesGatherStraightFromTheUnshuffledTensor) {
  auto f = fuse(shuffle_graph(2, {0, 2, 1, 3, 4}, true));
  EXPECT_EQ(count_op(*f.graph, "Slice"), 0u) << graph_to_text(*f.graph);
  EXPECT_EQ(count_op(*f.graph, "Gather"), 2u) << graph_to_text(*f.graph);
  expect_same_numbers(std::move(f.graph), shuffle_graph(2, {0, 2, 1, 3, 4}, true));
}

TEST(ChannelShuffleFusion, OtherPermutationsAreDeclined) {
  auto f = fuse(shuffle_graph(2, {0, 1, 2, 4, 3}, false));
  EXPECT_EQ(count_op(*f.graph, "Transpose"), 1u) << graph_to_text(*f.graph);
  const PassRecord* r = record(f.report, "ChannelShuffleFusionPass");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->rejected.empty());
  EXPECT_NE(r->rejected[0].reason.find("swap"), std::string::npos) << r->rejected[0].reason;
  expect_same_numbers(std::move(f.graph), shuffle_graph(2, {0, 1, 2, 4, 3}, false));
}

}  // namespace channel_shuffle_test
}  // namespace nnfuse
