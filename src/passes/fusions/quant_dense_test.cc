// MatMulIntegerToFloatFusionPass: the dense layers ONNX Runtime's quantize_dynamic writes
// (DynamicQuantizeLinear shared by two MatMulIntegers, each Cast to float, multiplied by the
// product of the scales, with and without a bias Add) become one MatMulIntegerToFloat each,
// for int8 and uint8 weights, per tensor and per column; fused == unfused exactly; declined with
// a reason for a scale that is not a vector; the switch turns it off.
#include <gtest/gtest.h>

#include "config/switches.h"
#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace quant_dense_test {

using namespace fusion_test;

struct Form {
  DType weights = DType::kInt8;
  bool per_column = false;
  Dims scale_shape = {};  // default: [] or [N]
  bool gelu = false;      // the first layer's output through GELU as PyTorch exports it
};

Tensor q8(const Dims& shape, DType t, uint32_t seed) {
  Tensor r(t, shape);
  for (int64_t i = 0; i < r.numel(); ++i) {
    const uint32_t v = (static_cast<uint32_t>(i) * 2654435761u + seed * 40503u) >> 8;
    if (t == DType::kInt8) {
      r.data<int8_t>()[i] = static_cast<int8_t>(static_cast<int32_t>(v % 256) - 128);
    } else {
      r.data<uint8_t>()[i] = static_cast<uint8_t>(v % 256);
    }
  }
  return r;
}

// A constant of t's type and shape.
Value* typed(B& b, Tensor t) {
  Value* v = b.g->add_value(b.g->unique_value_name("const"), t.dtype(), Shape::of(t.shape()));
  v->set_constant(std::move(t));
  return v;
}

// x [4, 24] quantized once, then two dense layers of 20 columns: the first with a bias, the
// second without.
std::unique_ptr<Graph> dynamic_dense(const Form& f) {
  B b;
  const int64_t m = 4, k = 24, n = 20;
  Value* x = b.in("x", {m, k});
  Value* xq = b.g->add_value("xq", DType::kUInt8, Shape::of({m, k}));
  Value* xs = b.g->add_value("xs", DType::kFloat32, Shape::of({}));
  Value* xz = b.g->add_value("xz", DType::kUInt8, Shape::of({}));
  b.g->add_node("DynamicQuantizeLinear", "dql", {x}, {xq, xs, xz});
  const Dims col = !f.scale_shape.empty() ? f.scale_shape : f.per_column ? Dims{n} : Dims{};
  for (int layer = 0; layer < 2; ++layer) {
    const std::string s = "layer" + std::to_string(layer);
    Value* w = typed(b, q8({k, n}, f.weights, 10 + layer));
    Value* wz = typed(b, q8(f.per_column ? Dims{n} : Dims{}, f.weights, 20 + layer));
    Node* mm =
        b.node("MatMulInteger", s + "_mm", {xq, w, xz, wz}, DType::kInt32, Shape::of({m, n}));
    Node* cast = b.node("Cast", s + "_cast", {mm->output(0)}, DType::kFloat32, Shape::of({m, n}));
    cast->set_attr("to", attr_int(static_cast<int64_t>(DType::kFloat32)));
    Value* ws = typed(b, random_tensor(col, 30 + layer, 0.001f, 0.01f));
    Value* scale =
        b.node("Mul", s + "_scale", {xs, ws}, DType::kFloat32, Shape::of(col))->output(0);
    Value* y =
        b.node("Mul", s + "_deq", {cast->output(0), scale}, DType::kFloat32, Shape::of({m, n}))
            ->output(0);
    if (layer == 0) {
      y = b.node("Add", s + "_bias", {typed(b, random_tensor({n}, 40)), y}, DType::kFloat32,
                 Shape::of({m, n}))
              ->output(0);
      if (f.gelu) {
        Value* d = b.n("Div", {y, b.c(Tensor::scalar(1.4142135f))}, {m, n});
        Value* e = b.n("Add", {b.n("Erf", {d}, {m, n}), b.c(Tensor::scalar(1.0f))}, {m, n});
        y = b.n("Mul", {b.n("Mul", {y, e}, {m, n}), b.c(Tensor::scalar(0.5f))}, {m, n});
      }
    }
    b.out(y);
  }
  return std::move(b.g);
}

TEST(QuantDenseFusion, EachDenseLayerIsOneNodeAndExact) {
  for (DType w : {DType::kInt8, DType::kUInt8}) {
    for (bool per_column : {false, true}) {
      SCOPED_TRACE(dtype_name(w) + (per_column ? " per column" : " per tensor"));
      const Form form{.weights = w, .per_column = per_column};
      auto f = fuse_without_auto_fusion(dynamic_dense(form));
      EXPECT_EQ(count_op(*f.graph, "MatMulIntegerToFloat"), 2u) << graph_to_text(*f.graph);
      EXPECT_EQ(f.graph->num_nodes(), 3u) << graph_to_text(*f.graph);  // and the quantize
      EXPECT_EQ(record(f.report, "MatMulIntegerToFloatFusionPass")->effect_times, 2);
      for (const Node* n : f.graph->nodes()) {
        if (n->is(Op::kMatMulIntegerToFloat)) {
          EXPECT_EQ(n->input(6) != nullptr, n->output(0)->name() == "layer0_bias_out");
        }
      }
      expect_same_numbers(std::move(f.graph), dynamic_dense(form), 0.0);
    }
  }
}

TEST(QuantDenseFusion, TakesTheActivationAfterTheBias) {
  const Form form{.gelu = true};
  auto f = fuse_without_auto_fusion(dynamic_dense(form));
  EXPECT_EQ(f.graph->num_nodes(), 3u) << graph_to_text(*f.graph);
  size_t gelus = 0;
  for (const Node* n : f.graph->nodes()) {
    gelus += n->is(Op::kMatMulIntegerToFloat) && n->attr_string("activation", "") == "Gelu";
  }
  EXPECT_EQ(gelus, 1u) << graph_to_text(*f.graph);
  expect_same_numbers(std::move(f.graph), dynamic_dense(form), 1e-6);
}

TEST(QuantDenseFusion, DeclinesAScaleThatIsNotAVector) {
  const Form matrix{.scale_shape = {1, 20}};
  expect_declined(fuse_without_auto_fusion(dynamic_dense(matrix)), "MatMulIntegerToFloatFusionPass",
                  "is not a vector", dynamic_dense(matrix));
}

TEST(QuantDenseFusion, SwitchedOffInTheSwitchFile) {
  FusionSwitches sw = switched_off("MatMulIntegerToFloatFusionPass");
  auto f = fuse(dynamic_dense({}), &sw);
  EXPECT_EQ(count_op(*f.graph, "MatMulIntegerToFloat"), 0u);
}

}  // namespace quant_dense_test
}  // namespace nnfuse
