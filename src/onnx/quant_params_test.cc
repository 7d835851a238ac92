#include "onnx/quant_params.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <string>
#include <vector>

#include "onnx/importer.h"

namespace nnfuse {
namespace {

using namespace std::string_literals;

// One node `op` named "node" over input x (type, shape) and constant inputs.
struct Model {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  onnx::NodeProto* n;
  Model(const std::string& op, int x_type, const std::vector<int64_t>& x_shape)
      : g(m.mutable_graph()) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain(""s);
    o->set_version(13);
    g->set_name("g"s);
    auto* x = g->add_input();
    x->set_name("x"s);
    auto* tt = x->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(x_type);
    for (auto d : x_shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
    g->add_output()->set_name("y"s);
    n = g->add_node();
    n->set_op_type(op);
    n->set_name("node"s);
    n->add_input("x"s);
    n->add_output("y"s);
  }
  // A constant input: floats (scales) or integers of `type`; rank 0 for one value.
  void input(const std::string& name, int type, const std::vector<double>& v, bool vector) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    if (vector) t->add_dims(static_cast<int64_t>(v.size()));
    for (double x : v) {
      if (type == onnx::TensorProto::FLOAT) {
        t->add_float_data(static_cast<float>(x));
      } else {
        t->add_int32_data(static_cast<int32_t>(x));
      }
    }
    n->add_input(name);
  }
  void axis(int64_t a) {
    auto* at = n->add_attribute();
    at->set_name("axis"s);
    at->set_type(onnx::AttributeProto::INT);
    at->set_i(a);
  }
  std::string error() const {
    try {
      load_onnx_from_string(m.SerializeAsString(), ""s, "m.onnx"s);
    } catch (const Error& e) {
      return e.what();
    }
    return ""s;
  }
};

constexpr int kF = onnx::TensorProto::FLOAT;
constexpr int kU8 = onnx::TensorProto::UINT8;
constexpr int kI8 = onnx::TensorProto::INT8;
constexpr int kI32 = onnx::TensorProto::INT32;

std::string quantize_error(const std::vector<double>& scale, bool vector = false) {
  Model q("QuantizeLinear"s, kF, {2, 3});
  q.input("s"s, kF, scale, vector);
  q.input("z"s, kU8, std::vector<double>(scale.size(), 3), vector);
  return q.error();
}

TEST(QuantParams, GoodScalesLoad) {
  EXPECT_EQ(quantize_error({0.5}), "");
  EXPECT_EQ(quantize_error({0.5, 0.25, 1.0}, true), "");  // per axis 1, three values
}

TEST(QuantParams, ScaleMustBePositiveAndFinite) {
  for (double s : {0.0, -0.5, std::nan(""), HUGE_VAL}) {
    const std::string e = quantize_error({s});
    EXPECT_NE(e.find("m.onnx: QuantizeLinear node 'node': the scale is"), std::string::npos) << e;
    EXPECT_NE(e.find("must be positive and finite"), std::string::npos) << e;
  }
  const std::string e = quantize_error({0.5, -1, 1}, true);
  EXPECT_NE(e.find("at index 1"), std::string::npos) << e;
}

TEST(QuantParams, AxisLengthMustMatchTheInput) {
  Model q("QuantizeLinear"s, kF, {2, 3});
  q.input("s"s, kF, {0.5, 0.5}, true);
  q.input("z"s, kU8, {1, 1}, true);
  const std::string e = q.error();
  EXPECT_NE(e.find("QuantizeLinear node 'node': the scale has 2 values but the input has 3 along "
                   "axis 1"),
            std::string::npos)
      << e;
  Model d("DequantizeLinear"s, kU8, {2, 3});
  d.input("s"s, kF, {0.5, 0.5}, true);
  d.input("z"s, kU8, {1, 1}, true);
  d.axis(0);
  EXPECT_EQ(d.error(), "");
}

TEST(QuantParams, ScaleAndZeroPointHaveOneLength) {
  Model d("DequantizeLinear"s, kU8, {2, 3});
  d.input("s"s, kF, {0.5, 0.5, 0.5}, true);
  d.input("z"s, kU8, {1}, true);
  const std::string e = d.error();
  EXPECT_NE(e.find("DequantizeLinear node 'node'"), std::string::npos) << e;
}

TEST(QuantParams, Int32ZeroPointIsZero) {
  Model d("DequantizeLinear"s, kI32, {4});
  d.input("s"s, kF, {0.5}, false);
  d.input("z"s, kI32, {7}, false);
  const std::string e = d.error();
  EXPECT_NE(e.find("DequantizeLinear node 'node': the zero point of an int32 input is 7"),
            std::string::npos)
      << e;
}

TEST(QuantParams, ProductZeroPointsOnePerColumn) {
  Model mm("MatMulInteger"s, kU8, {2, 3});
  mm.input("w"s, kI8, {1, 2, 3, 4, 5, 6}, false);
  mm.g->mutable_initializer(0)->add_dims(3);
  mm.g->mutable_initializer(0)->add_dims(2);
  mm.input("xz"s, kU8, {0}, false);
  mm.input("wz"s, kI8, {0, 0, 0}, true);
  const std::string e = mm.error();
  EXPECT_NE(e.find("MatMulInteger node 'node': b_zero_point has 3 values; it takes one, or one "
                   "per column of B (2)"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace nnfuse
