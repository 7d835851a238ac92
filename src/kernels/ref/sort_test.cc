// Tests of TopK and Unique on hand-computed cases.
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace {

using testing::run_ref;
using testing::values;
using F = std::vector<float>;
using I = std::vector<int64_t>;

TEST(RefSort, TopKLargestAndSmallestWithTies) {
  Tensor x = Tensor::from_vector<float>({2, 4}, {3, 1, 3, 2, 0, 5, -1, 5});
  Tensor k = Tensor::from_vector<int64_t>({1}, {2});
  auto out = run_ref("TopK", {x, k}, {}, 2, 11);
  EXPECT_EQ(out[0].shape(), (Dims{2, 2}));
  EXPECT_EQ(values<float>(out[0]), (F{3, 3, 5, 5}));
  EXPECT_EQ(values<int64_t>(out[1]), (I{0, 2, 1, 3}));  // equal values in index order
  auto small = run_ref("TopK", {x, k}, {{"largest", attr_int(0)}, {"axis", attr_int(0)}}, 2, 11);
  EXPECT_EQ(small[0].shape(), (Dims{2, 4}));
  EXPECT_EQ(values<int64_t>(small[1]), (I{1, 0, 1, 0, 0, 1, 0, 1}));
  // K larger than the axis is an error naming the node.
  Tensor k9 = Tensor::from_vector<int64_t>({1}, {9});
  EXPECT_THROW(run_ref("TopK", {x, k9}, {}, 2, 11), Error);
}

TEST(RefSort, UniqueSortedAndInOrder) {
  Tensor x = Tensor::from_vector<float>({6}, {2, 1, 1, 3, 4, 3});
  auto s = run_ref("Unique", {x}, {}, 4, 11);
  EXPECT_EQ(values<float>(s[0]), (F{1, 2, 3, 4}));
  EXPECT_EQ(values<int64_t>(s[1]), (I{1, 0, 3, 4}));
  EXPECT_EQ(values<int64_t>(s[2]), (I{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(values<int64_t>(s[3]), (I{2, 1, 2, 1}));
  auto u = run_ref("Unique", {x}, {{"sorted", attr_int(0)}}, 4, 11);
  EXPECT_EQ(values<float>(u[0]), (F{2, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>(u[2]), (I{0, 1, 1, 2, 3, 2}));
}

TEST(RefSort, UniqueRowsAlongAnAxis) {
  Tensor x = Tensor::from_vector<float>({3, 2}, {1, 2, 0, 5, 1, 2});
  auto s = run_ref("Unique", {x}, {{"axis", attr_int(0)}}, 4, 11);
  EXPECT_EQ(s[0].shape(), (Dims{2, 2}));
  EXPECT_EQ(values<float>(s[0]), (F{0, 5, 1, 2}));
  EXPECT_EQ(values<int64_t>(s[2]), (I{1, 0, 1}));
  EXPECT_EQ(values<int64_t>(s[3]), (I{1, 2}));
}

}  // namespace
}  // namespace nnfuse
