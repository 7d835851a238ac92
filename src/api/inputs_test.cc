#include "api/inputs.h"

#include <gtest/gtest.h>

#include <set>

namespace nnfuse {
namespace {

TEST(CompleteInputs, EightBitInputsSpanTheirRange) {
  Graph g;
  g.add_input(g.add_value("u", DType::kUInt8, Shape::of({16, 16})));
  g.add_input(g.add_value("s", DType::kInt8, Shape::of({16, 16})));
  auto in = complete_inputs(g, {}, 7);
  ASSERT_EQ(in.at("u").dtype(), DType::kUInt8);
  ASSERT_EQ(in.at("s").dtype(), DType::kInt8);
  std::set<int> u, s;
  for (int64_t i = 0; i < 256; ++i) {
    u.insert(in.at("u").data<uint8_t>()[i]);
    s.insert(in.at("s").data<int8_t>()[i]);
  }
  // 256 draws over 256 values: far more than a handful distinct, both signs for int8.
  EXPECT_GT(u.size(), 100u);
  EXPECT_GT(s.size(), 100u);
  EXPECT_LT(*s.begin(), 0);
  EXPECT_GT(*s.rbegin(), 0);
}

}  // namespace
}  // namespace nnfuse
