// QLinearConv and QLinearMatMul as DequantizeLinear -> float op -> QuantizeLinear: the rewrite's
// nodes, and its outputs against the integer op on the reference kernels, within one step.
#include "onnx/qlinear_lowering.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ir/builder.h"
#include "passes/pipeline.h"
#include "runtime/session.h"
#include "testing/graph_builder.h"

namespace nnfuse {
namespace {

using testing::GraphBuilder;

template <typename T>
Tensor codes(const Dims& d, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  Tensor t(DTypeOf<T>::value, d);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(u(rng));
  return t;
}

// x uint8 [1, 3, 6, 6] -> QLinearConv (int8 weights [4, 3, 3, 3], one scale per output channel,
// int32 bias, pads 1) -> y uint8 [1, 4, 6, 6].
std::unique_ptr<Graph> qlinear_conv() {
  GraphBuilder b;
  Value* x = b.in("x", {1, 3, 6, 6}, DType::kUInt8);
  Node* n = b.node(
      "QLinearConv", "conv",
      {x, b.c(Tensor::scalar<float>(0.0213f)), b.c(Tensor::scalar<uint8_t>(120)),
       b.c(codes<int8_t>({4, 3, 3, 3}, -127, 127, 1)),
       b.c(Tensor::from_vector<float>({4}, {0.0031f, 0.0047f, 0.0029f, 0.0052f})),
       b.c(Tensor::from_vector<int8_t>({4}, {0, 0, 0, 0})), b.c(Tensor::scalar<float>(0.0517f)),
       b.c(Tensor::scalar<uint8_t>(101)), b.c(codes<int32_t>({4}, -2000, 2000, 2))},
      DType::kUInt8, Shape::of({1, 4, 6, 6}));
  n->set_attr("kernel_shape", attr_ints({3, 3}));
  n->set_attr("pads", attr_ints({1, 1, 1, 1}));
  b.out(n->output(0));
  return std::move(b.g);
}

// a uint8 [5, 8] -> QLinearMatMul (int8 b [8, 3], one scale per column) -> y int8 [5, 3];
// `a_scales` values of a's scale (2 or more: one per row, which the rewrite leaves).
std::unique_ptr<Graph> qlinear_matmul(int a_scales = 1) {
  GraphBuilder b;
  Value* a = b.in("a", {5, 8}, DType::kUInt8);
  Tensor as = a_scales == 1 ? Tensor::scalar<float>(0.0131f)
                            : Tensor::from_vector<float>({5}, {0.01f, 0.02f, 0.01f, 0.02f, 0.01f});
  Tensor az = a_scales == 1 ? Tensor::scalar<uint8_t>(128)
                            : Tensor::from_vector<uint8_t>({5}, {128, 128, 128, 128, 128});
  Node* n =
      b.node("QLinearMatMul", "dense",
             {a, b.c(std::move(as)), b.c(std::move(az)), b.c(codes<int8_t>({8, 3}, -127, 127, 3)),
              b.c(Tensor::from_vector<float>({3}, {0.004f, 0.0061f, 0.0023f})),
              b.c(Tensor::from_vector<int8_t>({3}, {0, 0, 0})), b.c(Tensor::scalar<float>(0.0197f)),
              b.c(Tensor::scalar<int8_t>(-3))},
             DType::kInt8, Shape::of({5, 3}));
  b.out(n->output(0));
  return std::move(b.g);
}

std::vector<std::string> ops(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes()) out.push_back(n->op_type());
  return out;
}

// The largest difference, in grid units, between the lowered graph fused on the fast kernels and
// the integer op on the reference kernels.
double steps_apart(std::unique_ptr<Graph> original, std::unique_ptr<Graph> lowered,
                   const std::string& input, const Dims& d) {
  std::map<std::string, Tensor> feeds = {{input, codes<uint8_t>(d, 0, 255, 7)}};
  PlanOptions ref;
  ref.reference_only = true;
  const Tensor want = PlanSession(std::move(original), ref).run(feeds)[0];
  // Fused as a model is (the weights' DequantizeLinear folds), on fast kernels only.
  run_pipeline(*lowered);
  PlanOptions fast;
  fast.strict = true;
  const Tensor got = PlanSession(std::move(lowered), fast).run(feeds)[0];
  EXPECT_EQ(got.dtype(), want.dtype());
  EXPECT_EQ(got.shape(), want.shape());
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    worst = std::max(worst, std::abs(got.double_at(i) - want.double_at(i)));
  }
  return worst;
}

TEST(QLinearLowering, ConvIsDequantizeConvQuantizeWithinOneStep) {
  auto g = qlinear_conv();
  EXPECT_EQ(lower_qlinear_ops(*g), 1u);
  const std::vector<std::string> want = {
      "DequantizeLinear", "DequantizeLinear", "Cast", "Mul", "Mul", "Conv", "QuantizeLinear"};
  std::vector<std::string> got = ops(*g);
  std::sort(got.begin(), got.end());
  std::vector<std::string> sorted = want;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(got, sorted);
  // The conv keeps the node's name; the output its name and type; the weights dequantize per
  // output channel.
  Node* conv = nullptr;
  for (Node* n : g->nodes()) {
    if (n->is(Op::kConv)) conv = n;
  }
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->name(), "conv");
  EXPECT_EQ(conv->attr_ints("pads", {}), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(conv->input(1)->producer()->attr_int("axis", -1), 0);
  EXPECT_EQ(g->outputs()[0]->dtype(), DType::kUInt8);
  verify_graph(*g);
  EXPECT_LE(steps_apart(qlinear_conv(), std::move(g), "x", {1, 3, 6, 6}), 1.0);
}

TEST(QLinearLowering, MatMulDequantizesBPerColumnWithinOneStep) {
  auto g = qlinear_matmul();
  EXPECT_EQ(lower_qlinear_ops(*g), 1u);
  Node* mm = nullptr;
  for (Node* n : g->nodes()) {
    if (n->is(Op::kMatMul)) mm = n;
  }
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->input(1)->producer()->attr_int("axis", -1), 1);
  EXPECT_EQ(g->outputs()[0]->dtype(), DType::kInt8);
  verify_graph(*g);
  EXPECT_LE(steps_apart(qlinear_matmul(), std::move(g), "a", {5, 8}), 1.0);
}

TEST(QLinearLowering, AScalePerRowIsLeftToTheIntegerKernel) {
  auto g = qlinear_matmul(5);
  EXPECT_EQ(lower_qlinear_ops(*g), 0u);
  EXPECT_EQ(ops(*g), std::vector<std::string>{"QLinearMatMul"});
}

}  // namespace
}  // namespace nnfuse
