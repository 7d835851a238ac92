// encode_ops / encode_values / decode: exact round trips and every rejection.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/codegen.h"

namespace nnfuse::codegen {
namespace encode_test {

using Shape = std::vector<int64_t>;

uint32_t bits(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// (x - max(x * w)) ... with constants whose bits must survive: -0, a denormal, inf, NaN.
Region sample() {
  Region r;
  r.domain_shape = {2, 5};
  r.output_shape = {2, 5};
  r.input_shapes = {{2, 5}, {5}};
  const int x = r.add_input(0);
  const int xw = r.add_binary(OpKind::kMul, x, r.add_input(1));
  const int m = r.add_reduction(OpKind::kReduceMax, xw);
  int v = r.add_binary(OpKind::kSub, x, m);
  v = r.add_binary(OpKind::kAdd, v, r.add_const(-0.0f));
  v = r.add_binary(OpKind::kMul, v, r.add_const(1e-40f));
  v = r.add_binary(OpKind::kMin, v, r.add_const(std::numeric_limits<float>::infinity()));
  v = r.add_binary(OpKind::kMax, v, r.add_const(std::numeric_limits<float>::quiet_NaN()));
  r.output = r.add_unary(OpKind::kExp, v);
  return r;
}

Region decode_of(const Region& r) {
  return decode(encode_ops(r), encode_values(r), r.output, r.input_shapes, r.output_shape,
                r.domain_shape);
}

TEST(Encode, Layout) {
  Region r;
  r.output_shape = {3};
  r.input_shapes = {{3}};
  const int x = r.add_input(0);
  const int neg = r.add_unary(OpKind::kNeg, x);
  r.output = r.add_binary(OpKind::kAdd, neg, r.add_const(2.5f));
  EXPECT_EQ(encode_ops(r), (std::vector<int64_t>{0, -1, -1, 0,     //
                                                 3, 0, -1, -1,     //
                                                 1, -1, -1, -1,    //
                                                 11, 1, 2, -1}));  //
  EXPECT_EQ(encode_values(r), (std::vector<float>{0, 0, 2.5f, 0}));
}

TEST(Encode, RoundTripIsExact) {
  const Region r = sample();
  ASSERT_EQ(validate(r), "");
  const Region d = decode_of(r);
  EXPECT_EQ(d.input_shapes, r.input_shapes);
  EXPECT_EQ(d.output_shape, r.output_shape);
  EXPECT_EQ(d.domain_shape, r.domain_shape);
  EXPECT_EQ(d.output, r.output);
  ASSERT_EQ(d.ops.size(), r.ops.size());
  for (size_t i = 0; i < r.ops.size(); ++i) {
    EXPECT_EQ(d.ops[i].kind, r.ops[i].kind) << i;
    EXPECT_EQ(d.ops[i].a, r.ops[i].a) << i;
    EXPECT_EQ(d.ops[i].b, r.ops[i].b) << i;
    EXPECT_EQ(d.ops[i].input, r.ops[i].input) << i;
    EXPECT_EQ(bits(d.ops[i].value), bits(r.ops[i].value)) << i;
  }
  EXPECT_EQ(encode_ops(d), encode_ops(r));
  EXPECT_EQ(emit_cpp(d, "f"), emit_cpp(r, "f"));
}

// decode(ops, values, ...) must throw std::invalid_argument mentioning `word`.
void expect_rejected(const std::vector<int64_t>& ops, const std::vector<float>& values, int output,
                     const std::vector<Shape>& ins, const Shape& out, const Shape& dom,
                     const std::string& word) {
  try {
    decode(ops, values, output, ins, out, dom);
    ADD_FAILURE() << "accepted; expected a rejection mentioning '" << word << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
}

TEST(Decode, Rejections) {
  const Shape s = {2, 3};
  const std::vector<Shape> ins = {s};
  // Base: t0 = in0; t1 = relu(t0).
  const std::vector<int64_t> ok = {0, -1, -1, 0, 2, 0, -1, -1};
  const std::vector<float> v2 = {0, 0};
  EXPECT_NO_THROW(decode(ok, v2, 1, ins, s, {}));

  expect_rejected({0, -1, -1}, {0}, 0, ins, s, {}, "multiple of 4");
  expect_rejected(ok, {0}, 1, ins, s, {}, "values");
  expect_rejected({0, -1, -1, 0, 22, 0, -1, -1}, v2, 1, ins, s, {}, "unknown kind");
  expect_rejected({-1, -1, -1, 0}, {0}, 0, ins, s, {}, "unknown kind");
  expect_rejected({0, -1, -1, 0, 2, 1, -1, -1}, v2, 1, ins, s, {}, "not an earlier op");
  expect_rejected({0, -1, -1, 0, 2, -1, -1, -1}, v2, 1, ins, s, {}, "not an earlier op");
  expect_rejected({0, -1, -1, 0, 11, 0, 7, -1}, v2, 1, ins, s, {}, "not an earlier op");
  expect_rejected({0, -1, -1, 0, 18, int64_t{1} << 40, -1, -1}, v2, 1, ins, s, {}, "earlier");
  expect_rejected({0, -1, -1, 1, 2, 0, -1, -1}, v2, 1, ins, s, {}, "reads input 1");
  expect_rejected({0, -1, -1, -1, 2, 0, -1, -1}, v2, 1, ins, s, {}, "reads input -1");
  expect_rejected({0, -1, -1, 0, 2, 0, 0, -1}, v2, 1, ins, s, {}, "unused operand b");
  expect_rejected({0, 0, -1, 0, 2, 0, -1, -1}, v2, 1, ins, s, {}, "unused operand a");
  expect_rejected({0, -1, -1, 0, 2, 0, -1, 0}, v2, 1, ins, s, {}, "unused input");
  expect_rejected(ok, {0, 1.0f}, 1, ins, s, {}, "only Const");
  expect_rejected(ok, v2, 1, std::vector<Shape>{Shape{2, -3}}, s, {}, "input 0 has a negative");
  expect_rejected(ok, v2, 1, ins, {-2, 3}, {}, "output shape has a negative");
  expect_rejected(ok, v2, 1, ins, s, {2, -3}, "domain shape has a negative");
  // What validate rejects: output op, shapes, two reductions.
  expect_rejected(ok, v2, 2, ins, s, {}, "output op");
  expect_rejected(ok, v2, -1, ins, s, {}, "output op");
  expect_rejected(ok, v2, 1, std::vector<Shape>{Shape{4}}, s, {}, "broadcast");
  expect_rejected(ok, v2, 1, ins, {7}, s, "elements");
  expect_rejected({0, -1, -1, 0, 18, 0, -1, -1, 19, 0, -1, -1, 11, 1, 2, -1}, {0, 0, 0, 0}, 3, ins,
                  {2}, s, "more than one reduction");
}

}  // namespace encode_test
}  // namespace nnfuse::codegen
