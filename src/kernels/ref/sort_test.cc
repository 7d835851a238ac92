// Tests of TopK and Unique on hand-computed cases, and TopK against a stable sort.
#include <algorithm>
#include <cstdint>
#include <numeric>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace sort_test {

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

// TopK against a stable sort of each slice, on values with many ties (and signed zeros), along
// the first, a middle and the last axis, largest and smallest, for k from 0 to the whole axis.
// A slice at least 16 times longer than k takes the heap path (the 700-long axis at k 1, 7 and
// 43), the others the selection.
TEST(RefSort, TopKMatchesAStableSort) {
  uint64_t state = 7;
  auto next = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int>((state >> 33) % 9) - 4;
  };
  for (const Dims& shape : {Dims{3, 37, 4}, Dims{2, 700, 3}}) {
    F data(static_cast<size_t>(shape[0] * shape[1] * shape[2]));
    for (float& v : data) v = next() == 0 ? -0.0f : static_cast<float>(next());
    const Tensor x = Tensor::from_vector<float>(shape, data);
    for (int64_t axis = 0; axis < 3; ++axis) {
      const int64_t len = shape[static_cast<size_t>(axis)];
      int64_t outer = 1, inner = 1;
      for (int64_t i = 0; i < axis; ++i) outer *= shape[static_cast<size_t>(i)];
      for (int64_t i = axis + 1; i < 3; ++i) inner *= shape[static_cast<size_t>(i)];
      for (int largest = 0; largest < 2; ++largest) {
        for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{7} < len ? int64_t{7} : len, len / 16,
                          len / 2, len}) {
          auto out = run_ref("TopK", {x, Tensor::from_vector<int64_t>({1}, {k})},
                             {{"axis", attr_int(axis)}, {"largest", attr_int(largest)}}, 2, 11);
          const F got_v = values<float>(out[0]);
          const I got_i = values<int64_t>(out[1]);
          for (int64_t o = 0; o < outer; ++o) {
            for (int64_t in = 0; in < inner; ++in) {
              auto at = [&](int64_t j) {
                return data[static_cast<size_t>((o * len + j) * inner + in)];
              };
              I order(static_cast<size_t>(len));
              std::iota(order.begin(), order.end(), 0);
              std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                return largest ? at(a) > at(b) : at(a) < at(b);
              });
              for (int64_t j = 0; j < k; ++j) {
                const size_t dst = static_cast<size_t>((o * k + j) * inner + in);
                ASSERT_EQ(got_i[dst], order[static_cast<size_t>(j)])
                    << "axis " << axis << " largest " << largest << " k " << k;
                ASSERT_EQ(got_v[dst], at(order[static_cast<size_t>(j)]));
              }
            }
          }
        }
      }
    }
  }
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

}  // namespace sort_test
}  // namespace nnfuse
