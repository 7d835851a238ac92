#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace elementwise_test {

using testing::run_ref1;
using testing::values;

Tensor F(Dims shape, std::vector<float> v) { return Tensor::from_vector<float>(shape, v); }
template <typename T>
Tensor T_(Dims shape, std::vector<T> v) {
  return Tensor::from_vector<T>(shape, v);
}
Tensor B(Dims shape, std::vector<bool> v) {
  Tensor t(DType::kBool, shape);
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

void expect_floats(const Tensor& got, const Dims& shape, const std::vector<float>& want,
                   float tol = 1e-6f) {
  ASSERT_EQ(got.dtype(), DType::kFloat32);
  ASSERT_EQ(got.shape(), shape);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    float g = got.data<float>()[i];
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g)) << "at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(g, want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(g, want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
    }
  }
}

// A float16 or bfloat16 tensor from bit patterns, and the bit patterns of one.
Tensor H_(DType t, Dims shape, std::vector<uint16_t> bits) {
  Tensor x(t, shape);
  EXPECT_EQ(x.numel(), static_cast<int64_t>(bits.size()));
  std::memcpy(x.raw(), bits.data(), bits.size() * 2);
  return x;
}
std::vector<uint16_t> bits_of(const Tensor& t, DType want) {
  EXPECT_EQ(t.dtype(), want);
  std::vector<uint16_t> b(static_cast<size_t>(t.numel()));
  std::memcpy(b.data(), t.raw(), b.size() * 2);
  return b;
}
using H = std::vector<uint16_t>;

std::vector<bool> bools(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kBool);
  std::vector<bool> r;
  for (int64_t i = 0; i < t.numel(); ++i) r.push_back(t.data<bool>()[i]);
  return r;
}

// Why a node of `op` with inputs of the given dtypes is unsupported ("" if supported).
std::string reason(const std::string& op, const std::vector<DType>& dtypes,
                   const std::map<std::string, Attribute>& attrs = {}) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    ins.push_back(g.add_value("in" + std::to_string(i), dtypes[i], Shape::of({2})));
  }
  Node* n = g.add_node(op, "n", ins, {g.add_value("out")});
  for (auto& [k, a] : attrs) n->set_attr(k, a);
  return ref_unsupported_reason(*n, 17);
}

// ---------------------------------------------------------------------------------------
// Unary.

TEST(RefElementwiseUnary, FormulaTable) {
  struct Case {
    std::string op;
    std::vector<float> x;
    std::function<double(double)> f;
    std::map<std::string, Attribute> attrs = {};
  };
  const std::vector<float> xs = {-2.5f, -1.0f, -0.25f, 0.0f, 0.3f, 1.0f, 3.5f};
  const std::vector<float> unit = {-0.9f, -0.5f, 0.0f, 0.25f, 0.75f};
  const std::vector<float> pos = {0.01f, 0.5f, 1.0f, 2.0f, 100.0f};
  const double selu_a = 1.6732632423543772, selu_g = 1.0507009873554805;
  const std::vector<Case> cases = {
      {"Sigmoid", xs, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"Tanh", xs, [](double x) { return std::tanh(x); }},
      {"Erf", xs, [](double x) { return std::erf(x); }},
      {"Exp", xs, [](double x) { return std::exp(x); }},
      {"Log", pos, [](double x) { return std::log(x); }},
      {"Sqrt", pos, [](double x) { return std::sqrt(x); }},
      {"Reciprocal", pos, [](double x) { return 1 / x; }},
      {"Sin", xs, [](double x) { return std::sin(x); }},
      {"Cos", xs, [](double x) { return std::cos(x); }},
      {"Tan", xs, [](double x) { return std::tan(x); }},
      {"Asin", unit, [](double x) { return std::asin(x); }},
      {"Acos", unit, [](double x) { return std::acos(x); }},
      {"Atan", xs, [](double x) { return std::atan(x); }},
      {"Sinh", xs, [](double x) { return std::sinh(x); }},
      {"Cosh", xs, [](double x) { return std::cosh(x); }},
      {"Asinh", xs, [](double x) { return std::asinh(x); }},
      {"Acosh", {1.0f, 1.5f, 2.0f, 10.0f}, [](double x) { return std::acosh(x); }},
      {"Atanh", unit, [](double x) { return std::atanh(x); }},
      {"Softsign", xs, [](double x) { return x / (1 + std::fabs(x)); }},
      {"Softplus", xs, [](double x) { return std::log(1 + std::exp(x)); }},
      {"Elu", xs, [](double x) { return x >= 0 ? x : std::exp(x) - 1; }},
      {"Elu",
       xs,
       [](double x) { return x >= 0 ? x : 0.5 * (std::exp(x) - 1); },
       {{"alpha", attr_float(0.5f)}}},
      {"Selu", xs, [&](double x) { return selu_g * (x > 0 ? x : selu_a * (std::exp(x) - 1)); }},
      {"Celu",
       xs,
       [](double x) { return x > 0 ? x : 2.0 * (std::exp(x / 2.0) - 1); },
       {{"alpha", attr_float(2.0f)}}},
      {"HardSigmoid", xs, [](double x) { return std::min(1.0, std::max(0.0, 0.2 * x + 0.5)); }},
      {"HardSigmoid",
       xs,
       [](double x) { return std::min(1.0, std::max(0.0, 0.5 * x + 0.1)); },
       {{"alpha", attr_float(0.5f)}, {"beta", attr_float(0.1f)}}},
      {"HardSwish", xs, [](double x) { return x * std::min(1.0, std::max(0.0, x / 6 + 0.5)); }},
      {"LeakyRelu", xs, [](double x) { return x >= 0 ? x : 0.01 * x; }},
      {"LeakyRelu",
       xs,
       [](double x) { return x >= 0 ? x : 0.2 * x; },
       {{"alpha", attr_float(0.2f)}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    std::vector<float> want;
    for (float v : c.x) want.push_back(static_cast<float>(c.f(v)));
    Dims shape = {static_cast<int64_t>(c.x.size())};
    expect_floats(run_ref1(c.op, {F(shape, c.x)}, c.attrs), shape, want, 2e-6f);
  }
}

TEST(RefElementwiseUnary, HandComputed) {
  Dims s = {7};
  Tensor x = F(s, {-2.5f, -1.5f, -0.5f, 0.0f, 0.5f, 1.5f, 2.5f});
  expect_floats(run_ref1("Relu", {x}), s, {0, 0, 0, 0, 0.5f, 1.5f, 2.5f});
  expect_floats(run_ref1("Neg", {x}), s, {2.5f, 1.5f, 0.5f, 0, -0.5f, -1.5f, -2.5f});
  expect_floats(run_ref1("Abs", {x}), s, {2.5f, 1.5f, 0.5f, 0, 0.5f, 1.5f, 2.5f});
  expect_floats(run_ref1("Floor", {x}), s, {-3, -2, -1, 0, 0, 1, 2});
  expect_floats(run_ref1("Ceil", {x}), s, {-2, -1, 0, 0, 1, 2, 3});
  expect_floats(run_ref1("Round", {x}), s, {-2, -2, 0, 0, 0, 2, 2});  // half to even
  expect_floats(run_ref1("Sign", {x}), s, {-1, -1, -1, 0, 1, 1, 1});
  expect_floats(run_ref1("ThresholdedRelu", {x}), s, {0, 0, 0, 0, 0, 1.5f, 2.5f});
  expect_floats(run_ref1("ThresholdedRelu", {x}, {{"alpha", attr_float(0.25f)}}), s,
                {0, 0, 0, 0, 0.5f, 1.5f, 2.5f});
  expect_floats(run_ref1("HardSwish", {F({3}, {-3, 1, 3})}), {3}, {0, 2.0f / 3, 3});
  expect_floats(run_ref1("HardSigmoid", {F({3}, {-5, 0, 5})}), {3}, {0, 0.5f, 1});
  expect_floats(run_ref1("Round", {F({3}, {2.4f, 2.6f, -3.5f})}), {3}, {2, 3, -4});
}

TEST(RefElementwiseUnary, StableAtExtremes) {
  expect_floats(run_ref1("Softplus", {F({2}, {100, -100})}), {2}, {100, 3.720076e-44f});
  expect_floats(run_ref1("Sigmoid", {F({2}, {-1000, 1000})}), {2}, {0, 1});
  expect_floats(run_ref1("Log", {F({2}, {0, -1})}), {2},
                {-std::numeric_limits<float>::infinity(), NAN});
}

TEST(RefElementwiseUnary, Float64) {
  Tensor y = run_ref1("Exp", {T_<double>({2}, {0.0, 1.0})});
  ASSERT_EQ(y.dtype(), DType::kFloat64);
  EXPECT_DOUBLE_EQ(y.data<double>()[1], std::exp(1.0));
}

TEST(RefElementwiseUnary, Integers) {
  EXPECT_EQ(values<int32_t>(run_ref1("Relu", {T_<int32_t>({3}, {-5, 0, 7})})),
            (std::vector<int32_t>{0, 0, 7}));
  EXPECT_EQ(values<int8_t>(run_ref1("Neg", {T_<int8_t>({3}, {-128, -3, 4})})),
            (std::vector<int8_t>{-128, 3, -4}));  // -(-128) wraps
  EXPECT_EQ(values<int64_t>(run_ref1("Abs", {T_<int64_t>({2}, {-9, 9})})),
            (std::vector<int64_t>{9, 9}));
  EXPECT_EQ(values<int32_t>(run_ref1("Sign", {T_<int32_t>({3}, {-9, 0, 4})})),
            (std::vector<int32_t>{-1, 0, 1}));
  EXPECT_EQ(values<uint8_t>(run_ref1("Sign", {T_<uint8_t>({2}, {0, 200})})),
            (std::vector<uint8_t>{0, 1}));
}

TEST(RefElementwiseUnary, PredicatesAndNot) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = F({4}, {1.0f, NAN, inf, -inf});
  EXPECT_EQ(bools(run_ref1("IsNaN", {x})), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(bools(run_ref1("IsInf", {x})), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(bools(run_ref1("IsInf", {x}, {{"detect_negative", attr_int(0)}})),
            (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(bools(run_ref1("IsInf", {x}, {{"detect_positive", attr_int(0)}})),
            (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(bools(run_ref1("Not", {B({2}, {true, false})})), (std::vector<bool>{false, true}));
}

TEST(RefElementwiseUnary, Clip) {
  Tensor x = F({5}, {-3, -1, 0, 2, 5});
  Tensor none;
  expect_floats(run_ref1("Clip", {x, Tensor::scalar(-1.5f), Tensor::scalar(2.5f)}), {5},
                {-1.5f, -1, 0, 2, 2.5f});
  expect_floats(run_ref1("Clip", {x, none, Tensor::scalar(1.0f)}), {5}, {-3, -1, 0, 1, 1});
  expect_floats(run_ref1("Clip", {x, Tensor::scalar(0.0f)}), {5}, {0, 0, 0, 2, 5});
  expect_floats(run_ref1("Clip", {x}), {5}, {-3, -1, 0, 2, 5});
  // min > max: every value becomes max.
  expect_floats(run_ref1("Clip", {x, Tensor::scalar(3.0f), Tensor::scalar(1.0f)}), {5},
                {1, 1, 1, 1, 1});
  EXPECT_EQ(
      values<int64_t>(run_ref1("Clip", {T_<int64_t>({3}, {-10, 3, 10}), Tensor::scalar<int64_t>(0),
                                        Tensor::scalar<int64_t>(5)})),
      (std::vector<int64_t>{0, 3, 5}));
  // Opset 6: attributes.
  expect_floats(run_ref1("Clip", {x}, {{"min", attr_float(-1)}, {"max", attr_float(1)}}, 6), {5},
                {-1, -1, 0, 1, 1});
  EXPECT_THROW(run_ref1("Clip", {x, F({2}, {0, 1})}), Error);
}

// ---------------------------------------------------------------------------------------
// Binary arithmetic and broadcasting.

// Expected a OP b for shapes a [2,1,3] style, computed by explicit index arithmetic.
TEST(RefElementwiseBinary, BroadcastShapes) {
  Tensor a = F({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_floats(run_ref1("Add", {a, Tensor::scalar(10.0f)}), {2, 3}, {11, 12, 13, 14, 15, 16});
  expect_floats(run_ref1("Add", {Tensor::scalar(10.0f), a}), {2, 3}, {11, 12, 13, 14, 15, 16});
  expect_floats(run_ref1("Sub", {a, F({3}, {1, 2, 3})}), {2, 3}, {0, 0, 0, 3, 3, 3});
  expect_floats(run_ref1("Mul", {a, F({2, 1}, {10, 100})}), {2, 3}, {10, 20, 30, 400, 500, 600});
  expect_floats(run_ref1("Div", {F({2, 1}, {6, 12}), F({1, 3}, {1, 2, 3})}), {2, 3},
                {6, 3, 2, 12, 6, 4});
  // Rank mismatch: [2,1,3] + [4,1] -> [2,4,3].
  std::vector<float> av(6), bv(4), want;
  for (int i = 0; i < 6; ++i) av[i] = static_cast<float>(i);
  for (int j = 0; j < 4; ++j) bv[j] = 100.0f * static_cast<float>(j);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 3; ++k) want.push_back(av[i * 3 + k] + bv[j]);
    }
  }
  expect_floats(run_ref1("Add", {F({2, 1, 3}, av), F({4, 1}, bv)}), {2, 4, 3}, want);
  // Empty dims broadcast to empty.
  EXPECT_EQ(run_ref1("Add", {F({0, 3}, {}), F({3}, {1, 2, 3})}).shape(), (Dims{0, 3}));
}

TEST(RefElementwiseBinary, IncompatibleShapesThrow) {
  EXPECT_THROW(run_ref1("Add", {F({2, 3}, {1, 2, 3, 4, 5, 6}), F({4}, {1, 2, 3, 4})}), Error);
  EXPECT_THROW(run_ref1("Add", {F({2}, {1, 2}), T_<int32_t>({2}, {1, 2})}), Error);
  EXPECT_THROW(run_ref1("Where", {B({3}, {true, false, true}), F({2}, {1, 2}), F({1}, {0})}),
               Error);
}

TEST(RefElementwiseBinary, IntegerDivisionTruncates) {
  Tensor a = T_<int32_t>({4}, {7, -7, 7, -7});
  Tensor b = T_<int32_t>({4}, {2, 2, -2, -2});
  EXPECT_EQ(values<int32_t>(run_ref1("Div", {a, b})), (std::vector<int32_t>{3, -3, -3, 3}));
  EXPECT_EQ(
      values<int64_t>(run_ref1("Div", {T_<int64_t>({1}, {INT64_MIN}), T_<int64_t>({1}, {-1})})),
      (std::vector<int64_t>{INT64_MIN}));  // wraps, does not trap
  EXPECT_THROW(run_ref1("Div", {a, T_<int32_t>({1}, {0})}), Error);
  EXPECT_EQ(values<uint8_t>(run_ref1("Div", {T_<uint8_t>({1}, {255}), T_<uint8_t>({1}, {2})})),
            (std::vector<uint8_t>{127}));
}

TEST(RefElementwiseBinary, IntegerArithmeticWraps) {
  EXPECT_EQ(
      values<int32_t>(run_ref1("Add", {T_<int32_t>({1}, {INT32_MAX}), T_<int32_t>({1}, {1})})),
      (std::vector<int32_t>{INT32_MIN}));
  EXPECT_EQ(
      values<uint16_t>(run_ref1("Mul", {T_<uint16_t>({1}, {65535}), T_<uint16_t>({1}, {65535})})),
      (std::vector<uint16_t>{1}));
  EXPECT_EQ(values<int64_t>(run_ref1("Sub", {T_<int64_t>({2}, {5, -5}), T_<int64_t>({1}, {8})})),
            (std::vector<int64_t>{-3, -13}));
}

TEST(RefElementwiseBinary, Mod) {
  Tensor a = T_<int32_t>({4}, {7, -7, 7, -7});
  Tensor b = T_<int32_t>({4}, {3, 3, -3, -3});
  // fmod=0: sign of the divisor (Python).
  EXPECT_EQ(values<int32_t>(run_ref1("Mod", {a, b})), (std::vector<int32_t>{1, 2, -2, -1}));
  // fmod=1: sign of the dividend (C).
  EXPECT_EQ(values<int32_t>(run_ref1("Mod", {a, b}, {{"fmod", attr_int(1)}})),
            (std::vector<int32_t>{1, -1, 1, -1}));
  EXPECT_EQ(values<int32_t>(run_ref1("Mod", {a, T_<int32_t>({1}, {-1})})),
            (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_THROW(run_ref1("Mod", {a, T_<int32_t>({1}, {0})}), Error);
  expect_floats(run_ref1("Mod", {F({2}, {-7.5f, 7.5f}), F({1}, {2})}, {{"fmod", attr_int(1)}}), {2},
                {-1.5f, 1.5f});
  EXPECT_EQ(values<uint8_t>(run_ref1("Mod", {T_<uint8_t>({2}, {7, 250}), T_<uint8_t>({1}, {4})})),
            (std::vector<uint8_t>{3, 2}));
}

TEST(RefElementwiseBinary, HalfTypesComputeInDoubleAndRoundOnce) {
  const DType f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  // float16: 3, NaN, -0.5 against 2, 1, 1.
  Tensor a = H_(f16, {3}, {0x4200, 0x7e00, 0xb800});
  Tensor b = H_(f16, {3}, {0x4000, 0x3c00, 0x3c00});
  H mx = bits_of(run_ref1("Max", {a, b}), f16);
  EXPECT_EQ(mx[0], 0x4200);
  EXPECT_TRUE((mx[1] & 0x7c00) == 0x7c00 && (mx[1] & 0x3ff)) << mx[1];  // NaN
  EXPECT_EQ(mx[2], 0x3c00);
  H mn = bits_of(run_ref1("Min", {a, b, H_(f16, {}, {0x3800})}), f16);  // and 0.5
  EXPECT_EQ(mn[0], 0x3800);
  EXPECT_EQ(mn[2], 0xb800);
  // bfloat16, broadcast: max(1, 2) and max(-2, 2).
  EXPECT_EQ(
      bits_of(run_ref1("Max", {H_(bf16, {2}, {0x3f80, 0xc000}), H_(bf16, {1}, {0x4000})}), bf16),
      (H{0x4000, 0x4000}));
  // Mod: -4.5 mod 2 is -0.5 (fmod=1) or 1.5 (sign of the divisor).
  Tensor x = H_(f16, {2}, {0xc480, 0x9400});  // -4.5, -2^-10
  Tensor y = H_(f16, {2}, {0x4000, 0x6800});  // 2, 2048
  EXPECT_EQ(bits_of(run_ref1("Mod", {x, y}, {{"fmod", attr_int(1)}}), f16), (H{0xb800, 0x9400}));
  // fmod=0: -2^-10 + 2048 is computed exactly, then rounded: to 2048, float16 keeping no
  // fraction there.
  EXPECT_EQ(bits_of(run_ref1("Mod", {x, y}), f16), (H{0x3e00, 0x6800}));
  EXPECT_THROW(run_ref1("Max", {a, H_(bf16, {3}, {0, 0, 0})}), Error);  // mixed types
}

TEST(RefElementwiseUnary, Shrink) {
  Tensor x = F({5}, {-2, -1, 0, 1, 2});
  expect_floats(run_ref1("Shrink", {x}, {{"lambd", attr_float(1.5f)}}), {5}, {-2, 0, 0, 0, 2});
  expect_floats(run_ref1("Shrink", {x}, {{"lambd", attr_float(1.5f)}, {"bias", attr_float(1.5f)}}),
                {5}, {-0.5f, 0, 0, 0, 0.5f});
  // Defaults: lambd 0.5, bias 0; the bounds themselves give 0; NaN gives 0.
  expect_floats(run_ref1("Shrink", {F({5}, {-0.6f, -0.5f, 0.5f, 0.7f, NAN})}), {5},
                {-0.6f, 0, 0, 0.7f, 0});
  // Integers: the result rounds toward zero and saturates.
  std::map<std::string, Attribute> soft = {{"lambd", attr_float(1.5f)}, {"bias", attr_float(1.5f)}};
  EXPECT_EQ(values<int32_t>(run_ref1("Shrink", {T_<int32_t>({5}, {-5, -1, 0, 1, 5})}, soft)),
            (std::vector<int32_t>{-3, 0, 0, 0, 3}));
  EXPECT_EQ(values<uint8_t>(
                run_ref1("Shrink", {T_<uint8_t>({3}, {0, 1, 200})}, {{"bias", attr_float(2)}})),
            (std::vector<uint8_t>{0, 0, 198}));
  // float16: -2, 1, 2 -> -0.5, 0, 0.5; 2 - 0.1 rounds to 1.9 in float16 (1 + 922 / 1024).
  Tensor h = H_(DType::kFloat16, {3}, {0xc000, 0x3c00, 0x4000});
  EXPECT_EQ(bits_of(run_ref1("Shrink", {h}, soft), DType::kFloat16), (H{0xb800, 0x0000, 0x3800}));
  EXPECT_EQ(bits_of(run_ref1("Shrink", {h}, {{"bias", attr_float(0.1f)}}), DType::kFloat16)[2],
            0x3f9a);
}

TEST(RefElementwiseBinary, Pow) {
  expect_floats(run_ref1("Pow", {F({3}, {2, 4, 9}), F({3}, {3, 0.5f, -1})}), {3}, {8, 2, 1.0f / 9});
  expect_floats(run_ref1("Pow", {F({2, 2}, {1, 2, 3, 4}), T_<int64_t>({}, {2})}), {2, 2},
                {1, 4, 9, 16});
  EXPECT_EQ(
      values<int64_t>(run_ref1("Pow", {T_<int64_t>({2}, {2, -3}), T_<int64_t>({2}, {10, 3})})),
      (std::vector<int64_t>{1024, -27}));
  EXPECT_EQ(values<int32_t>(run_ref1("Pow", {T_<int32_t>({1}, {3}), F({1}, {2})})),
            (std::vector<int32_t>{9}));
}

TEST(RefElementwiseBinary, VariadicMinMaxSumMean) {
  Tensor a = F({2, 2}, {1, 8, 3, 4});
  Tensor b = F({2}, {5, 2});
  Tensor c = F({}, {3});
  expect_floats(run_ref1("Sum", {a, b, c}), {2, 2}, {9, 13, 11, 9});
  expect_floats(run_ref1("Mean", {a, b, c}), {2, 2}, {3, 13.0f / 3, 11.0f / 3, 3});
  expect_floats(run_ref1("Max", {a, b, c}), {2, 2}, {5, 8, 5, 4});
  expect_floats(run_ref1("Min", {a, b, c}), {2, 2}, {1, 2, 3, 2});
  expect_floats(run_ref1("Sum", {a}), {2, 2}, {1, 8, 3, 4});
  expect_floats(run_ref1("Max", {F({2}, {NAN, 1}), F({2}, {0, 2})}), {2}, {NAN, 2});
  EXPECT_EQ(values<int64_t>(run_ref1("Max", {T_<int64_t>({3}, {-1, 5, 2}), T_<int64_t>({1}, {1})})),
            (std::vector<int64_t>{1, 5, 2}));
}

TEST(RefElementwiseBinary, PRelu) {
  Tensor x = F({2, 3}, {-1, 2, -3, 4, -5, 6});
  expect_floats(run_ref1("PRelu", {x, F({3}, {0.1f, 0.2f, 0.3f})}), {2, 3},
                {-0.1f, 2, -0.9f, 4, -1.0f, 6});
  expect_floats(run_ref1("PRelu", {x, F({1}, {0.5f})}), {2, 3}, {-0.5f, 2, -1.5f, 4, -2.5f, 6});
  // The slope must broadcast to X's shape, not beyond it.
  EXPECT_THROW(run_ref1("PRelu", {F({3}, {-1, 2, -3}), F({2, 3}, {1, 1, 1, 1, 1, 1})}), Error);
}

TEST(RefElementwiseBinary, BitShift) {
  Tensor x = T_<uint8_t>({3}, {1, 16, 255});
  Tensor s = T_<uint8_t>({3}, {2, 1, 8});
  EXPECT_EQ(values<uint8_t>(run_ref1("BitShift", {x, s}, {{"direction", attr_string("LEFT")}})),
            (std::vector<uint8_t>{4, 32, 0}));
  EXPECT_EQ(values<uint8_t>(run_ref1("BitShift", {x, s}, {{"direction", attr_string("RIGHT")}})),
            (std::vector<uint8_t>{0, 8, 0}));
  EXPECT_EQ(values<uint64_t>(run_ref1("BitShift", {T_<uint64_t>({1}, {3}), T_<uint64_t>({1}, {62})},
                                      {{"direction", attr_string("LEFT")}})),
            (std::vector<uint64_t>{uint64_t{3} << 62}));
}

// ---------------------------------------------------------------------------------------
// Comparisons, logic, Where.

TEST(RefElementwiseCompare, AllOps) {
  Tensor a = F({2, 2}, {1, 2, 3, 4});
  Tensor b = F({2}, {2, 3});
  EXPECT_EQ(bools(run_ref1("Equal", {a, b})), (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(bools(run_ref1("Equal", {a, F({2, 1}, {2, 3})})),
            (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(bools(run_ref1("Less", {a, b})), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(bools(run_ref1("Greater", {a, b})), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(bools(run_ref1("LessOrEqual", {a, F({}, {2})})),
            (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(bools(run_ref1("GreaterOrEqual", {a, F({}, {2})})),
            (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(bools(run_ref1("Equal", {B({2}, {true, false}), B({1}, {false})})),
            (std::vector<bool>{false, true}));
  EXPECT_EQ(bools(run_ref1("Less", {T_<int64_t>({2}, {-1, 5}), T_<int64_t>({}, {0})})),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(bools(run_ref1("Equal", {F({1}, {NAN}), F({1}, {NAN})})), (std::vector<bool>{false}));
}

TEST(RefElementwiseCompare, Logic) {
  Tensor a = B({4}, {false, false, true, true});
  Tensor b = B({4}, {false, true, false, true});
  EXPECT_EQ(bools(run_ref1("And", {a, b})), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(bools(run_ref1("Or", {a, b})), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(bools(run_ref1("Xor", {a, b})), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(bools(run_ref1("And", {a, B({}, {true})})),
            (std::vector<bool>{false, false, true, true}));
}

TEST(RefElementwiseCompare, Where) {
  Tensor c = B({2, 1}, {true, false});
  expect_floats(run_ref1("Where", {c, F({}, {9}), F({3}, {1, 2, 3})}), {2, 3}, {9, 9, 9, 1, 2, 3});
  Tensor wi = run_ref1(
      "Where", {B({3}, {false, true, false}), T_<int64_t>({3}, {1, 2, 3}), T_<int64_t>({1}, {-1})});
  EXPECT_EQ(values<int64_t>(wi), (std::vector<int64_t>{-1, 2, -1}));
  Tensor wb = run_ref1("Where", {B({2}, {true, false}), B({2}, {false, false}), B({}, {true})});
  EXPECT_EQ(bools(wb), (std::vector<bool>{false, true}));
}

// ---------------------------------------------------------------------------------------
// Support.

TEST(RefElementwiseSupport, UnsupportedTypesGiveReasons) {
  EXPECT_NE(reason("Add", {DType::kFloat16, DType::kFloat16}), "");
  EXPECT_NE(reason("Relu", {DType::kBFloat16}), "");
  EXPECT_NE(reason("Sigmoid", {DType::kInt32}), "");
  EXPECT_NE(reason("Neg", {DType::kUInt8}), "");
  EXPECT_NE(reason("Equal", {DType::kString, DType::kString}), "");
  EXPECT_NE(reason("And", {DType::kFloat32, DType::kFloat32}), "");
  EXPECT_NE(reason("Where", {DType::kFloat32, DType::kFloat32, DType::kFloat32}), "");
  EXPECT_NE(reason("BitShift", {DType::kUInt8, DType::kUInt8}), "");  // no direction
  EXPECT_NE(
      reason("BitShift", {DType::kInt32, DType::kInt32}, {{"direction", attr_string("LEFT")}}), "");
  EXPECT_NE(reason("Mean", {DType::kInt32}), "");
  EXPECT_EQ(reason("Add", {DType::kFloat32, DType::kUndefined}), "");
  EXPECT_EQ(reason("Relu", {DType::kInt8}), "");
  EXPECT_EQ(reason("Where", {DType::kBool, DType::kInt64, DType::kInt64}), "");
  EXPECT_EQ(
      reason("BitShift", {DType::kUInt32, DType::kUInt32}, {{"direction", attr_string("RIGHT")}}),
      "");
  EXPECT_THROW(run_ref1("Tanh", {Tensor(DType::kFloat16, {2})}), Error);
  // The 16-bit floats: Max, Min and Mod take both, Shrink float16 only (as the spec lists).
  EXPECT_EQ(reason("Max", {DType::kFloat16, DType::kFloat16}), "");
  EXPECT_EQ(reason("Min", {DType::kBFloat16, DType::kBFloat16}), "");
  EXPECT_EQ(reason("Mod", {DType::kFloat16, DType::kFloat16}), "");
  EXPECT_EQ(reason("Shrink", {DType::kFloat16}), "");
  EXPECT_EQ(reason("Shrink", {DType::kUInt64}), "");
  EXPECT_EQ(reason("Shrink", {DType::kBFloat16}), "input 0 of type bfloat16 is not supported");
  EXPECT_NE(reason("Shrink", {DType::kBool}), "");
  EXPECT_EQ(reason("Sub", {DType::kBFloat16, DType::kBFloat16}),
            "input 0 of type bfloat16 is not supported");
  EXPECT_NE(reason("Max", {DType::kString, DType::kString}), "");
}

}  // namespace elementwise_test
}  // namespace nnfuse
