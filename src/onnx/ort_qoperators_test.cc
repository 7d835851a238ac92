#include "onnx/ort_qoperators.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <string>
#include <vector>

#include "onnx/importer.h"

namespace nnfuse {
namespace {

using namespace std::string_literals;

// A model with uint8 input x [1, 4] and one node (of `domain`) writing y.
struct Builder {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  Builder() : g(m.mutable_graph()) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain(""s);
    o->set_version(13);
    auto* ms = m.add_opset_import();
    ms->set_domain("com.microsoft"s);
    ms->set_version(1);
    g->set_name("q"s);
    auto* x = g->add_input();
    x->set_name("x"s);
    auto* tt = x->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::UINT8);
    tt->mutable_shape()->add_dim()->set_dim_value(1);
    tt->mutable_shape()->add_dim()->set_dim_value(4);
    tt->mutable_shape()->add_dim()->set_dim_value(2);
    tt->mutable_shape()->add_dim()->set_dim_value(2);
    scalar("s"s, onnx::TensorProto::FLOAT, 0);
    scalar("z"s, onnx::TensorProto::UINT8, 0);
    auto* y = g->add_output();
    y->set_name("y"s);
  }
  void scalar(const std::string& name, int type, int v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    if (type == onnx::TensorProto::FLOAT) {
      t->add_float_data(0.5f);
    } else {
      t->add_int32_data(v);
    }
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& ins,
                        const std::string& domain = "com.microsoft"s) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name("the_"s + op);
    n->set_domain(domain);
    for (const auto& i : ins) n->add_input(i);
    n->add_output("y"s);
    return n;
  }
  std::unique_ptr<Graph> load() {
    return load_onnx_from_string(m.SerializeAsString(), ""s, "q.onnx"s);
  }
  std::string error() {
    try {
      load();
    } catch (const Error& e) {
      return e.what();
    }
    return ""s;
  }
};

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> r;
  for (const Node* n : g.nodes()) {
    EXPECT_TRUE(n->domain().empty()) << n->describe();
    r.push_back(n->op_type());
  }
  return r;
}

TEST(OrtQOperators, QLinearAddIsDequantizeAddQuantize) {
  Builder b;
  b.node("QLinearAdd"s, {"x"s, "s"s, "z"s, "x"s, "s"s, "z"s, "s"s, "z"s});
  auto g = b.load();
  EXPECT_EQ(ops_of(*g), (std::vector<std::string>{"DequantizeLinear", "DequantizeLinear", "Add",
                                                  "QuantizeLinear"}));
  EXPECT_EQ(g->find_value("y")->dtype(), DType::kUInt8);
}

TEST(OrtQOperators, OutputTypeComesFromAnInputZeroPoint) {
  Builder b;
  b.scalar("zi"s, onnx::TensorProto::INT8, 3);
  auto* x = b.g->mutable_input(0)->mutable_type()->mutable_tensor_type();
  x->set_elem_type(onnx::TensorProto::INT8);
  // No output zero point: the input's (int8) gives the type.
  b.node("QLinearSigmoid"s, {"x"s, "s"s, "zi"s, "s"s});
  auto g = b.load();
  EXPECT_EQ(g->find_value("y")->dtype(), DType::kInt8);
}

TEST(OrtQOperators, UntypedOutputIsAnErrorNamingTheNode) {
  Builder b;
  b.node("QLinearSigmoid"s, {"x"s, "s"s, ""s, "s"s});
  const std::string e = b.error();
  EXPECT_NE(e.find("QLinearSigmoid node 'the_QLinearSigmoid'"), std::string::npos) << e;
  EXPECT_NE(e.find("zero point"), std::string::npos) << e;
}

TEST(OrtQOperators, MissingInputIsAnErrorNamingTheNode) {
  Builder b;
  b.node("QLinearAdd"s, {"x"s, "s"s, "z"s, "x"s});
  const std::string e = b.error();
  EXPECT_NE(e.find("QLinearAdd node 'the_QLinearAdd'"), std::string::npos) << e;
}

TEST(OrtQOperators, ChannelsLastAveragePoolTransposes) {
  Builder b;
  auto* n = b.node("QLinearAveragePool"s, {"x"s, "s"s, "z"s, "s"s, "z"s});
  auto* a = n->add_attribute();
  a->set_name("channels_last"s);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  auto* k = n->add_attribute();
  k->set_name("kernel_shape"s);
  k->set_type(onnx::AttributeProto::INTS);
  k->add_ints(2);
  k->add_ints(2);
  auto g = b.load();
  EXPECT_EQ(ops_of(*g), (std::vector<std::string>{"DequantizeLinear", "Transpose", "AveragePool",
                                                  "Transpose", "QuantizeLinear"}));
  // NHWC [1, 4, 2, 2] (H 4, W 2, C 2) pooled 2x2 with stride 1, channels still last.
  EXPECT_EQ(g->find_value("y")->shape().str(), "[1, 3, 1, 2]");
}

TEST(OrtQOperators, QGemmBiasIsScaledByBothScales) {
  Builder b;
  auto* w = b.g->add_initializer();
  w->set_name("w"s);
  w->set_data_type(onnx::TensorProto::INT8);
  w->add_dims(2);
  w->add_dims(3);
  for (int i = 0; i < 6; ++i) w->add_int32_data(i - 3);
  auto* c = b.g->add_initializer();
  c->set_name("c"s);
  c->set_data_type(onnx::TensorProto::INT32);
  c->add_dims(3);
  for (int i = 0; i < 3; ++i) c->add_int32_data(i * 100);
  b.scalar("wz"s, onnx::TensorProto::INT8, 0);
  auto* x = b.g->mutable_input(0)->mutable_type()->mutable_tensor_type();
  x->mutable_shape()->Clear();
  x->mutable_shape()->add_dim()->set_dim_value(5);
  x->mutable_shape()->add_dim()->set_dim_value(2);
  b.node("QGemm"s, {"x"s, "s"s, "z"s, "w"s, "s"s, "wz"s, "c"s});
  auto g = b.load();
  const auto ops = ops_of(*g);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "DequantizeLinear"), 2);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Gemm"), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "QuantizeLinear"), 0);  // float output
  EXPECT_EQ(g->find_value("y")->dtype(), DType::kFloat32);
  EXPECT_EQ(g->find_value("y")->shape().str(), "[5, 3]");
}

TEST(OrtQOperators, EightBitMaxPoolRunsInFloat) {
  Builder b;
  auto* n = b.node("MaxPool"s, {"x"s}, ""s);
  auto* k = n->add_attribute();
  k->set_name("kernel_shape"s);
  k->set_type(onnx::AttributeProto::INTS);
  k->add_ints(2);
  k->add_ints(2);
  auto g = b.load();
  EXPECT_EQ(ops_of(*g),
            (std::vector<std::string>{"DequantizeLinear", "MaxPool", "QuantizeLinear"}));
  EXPECT_EQ(g->find_value("y")->dtype(), DType::kUInt8);
  for (const Node* p : g->nodes()) {
    if (p->op_type() == "MaxPool") {
      EXPECT_EQ(p->output(0)->dtype(), DType::kFloat32);
    }
  }
}

}  // namespace
}  // namespace nnfuse
