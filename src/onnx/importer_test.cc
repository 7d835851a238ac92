#include "onnx/importer.h"

#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "onnx/exporter.h"
#include "onnx/provenance.h"
#include "onnx/tensor_proto.h"
#include "onnx/test_models.h"

namespace nnfuse {
namespace importer_test {

namespace fs = std::filesystem;

std::unique_ptr<Graph> load(const onnx::ModelProto& m, const std::string& dir = "") {
  return load_onnx_from_string(m.SerializeAsString(), dir, "test.onnx");
}

std::string error_of(const onnx::ModelProto& m, const std::string& dir = "") {
  try {
    load(m, dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OnnxImport, BuildsTypedGraph) {
  auto g = load(testing::small_model());
  ASSERT_EQ(g->num_nodes(), 2u);
  EXPECT_EQ(g->opset(), 13);
  Value* s = g->find_value("s");
  ASSERT_NE(s, nullptr);
  // Shape inference typed the intermediate value, keeping the symbolic dim.
  EXPECT_EQ(s->dtype(), DType::kFloat32);
  EXPECT_EQ(s->shape().str(), "[batch, 3]");
  EXPECT_TRUE(g->find_value("w")->is_constant());
  EXPECT_EQ(g->find_value("w")->constant().data<float>()[1], -2.0f);
  ASSERT_EQ(g->runtime_inputs().size(), 1u);
  verify_graph(*g);
}

TEST(OnnxImport, RawDataAndTypedFieldsAgree) {
  auto m = testing::small_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  float vals[3] = {1.0f, -2.0f, 3.0f};
  w->set_raw_data(vals, sizeof vals);
  auto g = load(m);
  const Tensor& t = g->find_value("w")->constant();
  EXPECT_EQ(t.data<float>()[2], 3.0f);

  w->set_raw_data(vals, 8);  // too short for shape [3]
  EXPECT_NE(error_of(m).find("raw_data has 8 bytes"), std::string::npos) << error_of(m);
}

TEST(OnnxImport, Int64AndBoolTypedFields) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::INT64);
  p.add_dims(2);
  p.add_int64_data(-5);
  p.add_int64_data(7);
  Tensor t = tensor_from_proto(p, "", "t");
  EXPECT_EQ(t.data<int64_t>()[0], -5);
  p.Clear();
  p.set_data_type(onnx::TensorProto::BOOL);
  p.add_dims(2);
  p.add_int32_data(1);
  p.add_int32_data(0);
  Tensor b = tensor_from_proto(p, "", "b");
  EXPECT_TRUE(b.data<bool>()[0]);
  EXPECT_FALSE(b.data<bool>()[1]);
}

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nnfuse-ext-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "model");
    float vals[3] = {4.0f, 5.0f, 6.0f};
    std::ofstream(dir_ / "model" / "weights.bin", std::ios::binary)
        .write(reinterpret_cast<char*>(vals), sizeof vals);
    std::ofstream(dir_ / "outside.bin", std::ios::binary)
        .write(reinterpret_cast<char*>(vals), sizeof vals);
  }
  void TearDown() override { fs::remove_all(dir_); }

  onnx::ModelProto with_location(const std::string& loc) {
    auto m = testing::small_model();
    auto* w = m.mutable_graph()->mutable_initializer(0);
    w->clear_float_data();
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = w->add_external_data();
    kv->set_key("location");
    kv->set_value(loc);
    return m;
  }
  fs::path dir_;
};

TEST_F(ExternalData, ResolvesRelativeToModelFolder) {
  auto g = load(with_location("weights.bin"), (dir_ / "model").string());
  EXPECT_EQ(g->find_value("w")->constant().data<float>()[2], 6.0f);
}

TEST_F(ExternalData, RefusesLocationsOutsideTheFolder) {
  std::string model_dir = (dir_ / "model").string();
  EXPECT_NE(error_of(with_location("../outside.bin"), model_dir).find("outside"),
            std::string::npos);
  EXPECT_NE(error_of(with_location((dir_ / "outside.bin").string()), model_dir).find("absolute"),
            std::string::npos);
  EXPECT_NE(error_of(with_location("missing.bin"), model_dir).find("missing.bin"),
            std::string::npos);
}

TEST(OnnxImport, ConstantNodesAreKept) {
  auto m = testing::small_model();
  auto* g = m.mutable_graph();
  g->clear_initializer();
  auto* c = g->add_node();
  c->set_op_type("Constant");
  c->set_name("const_w");
  c->add_output("w");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(3);
  for (float f : {1.0f, 2.0f, 3.0f}) a->mutable_t()->add_float_data(f);
  // Constant is listed last: the importer sorts the nodes topologically.
  auto gr = load(m);
  EXPECT_EQ(gr->nodes()[0]->op_type(), "Constant");
  EXPECT_EQ(gr->nodes()[0]->find_attr("value")->t.data<float>()[2], 3.0f);
  verify_graph(*gr);
}

TEST(OnnxImport, OpsetRange) {
  EXPECT_NE(error_of(testing::small_model(0)).find("opset 0"), std::string::npos);
  EXPECT_NE(error_of(testing::small_model(18)).find("opset 18"), std::string::npos);
  EXPECT_EQ(error_of(testing::small_model(11)), "");
  EXPECT_EQ(error_of(testing::small_model(17)), "");
}

// Older opsets are converted to the lowest one nnfuse runs, ops whose form changed rewritten.
TEST(OnnxImport, OldOpsetsAreConverted) {
  for (int64_t opset : {1, 7, 10}) {
    auto g = load(testing::small_model(opset));
    EXPECT_EQ(g->opsets.at(""), 11) << opset;
    std::vector<std::string> ops;
    for (const Node* n : g->nodes()) ops.push_back(n->op_type());
    EXPECT_EQ(ops, (std::vector<std::string>{"Add", "Relu"})) << opset;
  }
  // Upsample with its scales as an attribute (opset 7): a Resize at opset 11.
  auto m = testing::small_model(7);
  auto* up = m.mutable_graph()->mutable_node(1);
  up->set_op_type("Upsample");
  auto* scales = up->add_attribute();
  scales->set_name("scales");
  scales->set_type(onnx::AttributeProto::FLOATS);
  scales->add_floats(1.0f);
  scales->add_floats(2.0f);
  auto g = load(m);
  bool resize = false;
  for (const Node* n : g->nodes()) resize = resize || n->op_type() == "Resize";
  EXPECT_TRUE(resize);
}

TEST(OnnxImport, OpsetThatCannotBeConvertedIsAClearError) {
  auto m = testing::small_model(1);
  m.mutable_graph()->mutable_node(1)->set_op_type("Crop");  // experimental, gone since opset 10
  const std::string e = error_of(m);
  for (const char* part : {"test.onnx", "opset 1 ", "'relu' (Crop)", "opset 11"}) {
    EXPECT_NE(e.find(part), std::string::npos) << part << " in: " << e;
  }
}

// Found by fuzz_model: ONNX's version converter crashed on a graph output (or a node input)
// that nothing defines, and so did its MaxUnpool shape inference on an undefined input; such a
// model is refused before either runs.
TEST(OnnxImport, UndefinedNamesAreRefusedBeforeOnnxConvertsOrInfers) {
  auto m = testing::small_model(9);
  m.mutable_graph()->mutable_output(0)->set_name("nowhere");
  std::string e = error_of(m);
  EXPECT_NE(e.find("graph output 'nowhere' is not produced"), std::string::npos) << e;
  m = testing::small_model(9);
  m.mutable_graph()->mutable_node(1)->set_input(0, "ghost");
  e = error_of(m);
  EXPECT_NE(e.find("reads 'ghost'"), std::string::npos) << e;
  // MaxUnpool (opset 11, no conversion) with its indices input undefined.
  m = testing::small_model(11);
  onnx::NodeProto* n = m.mutable_graph()->mutable_node(1);
  n->set_op_type("MaxUnpool");
  n->add_input("indices");
  e = error_of(m);
  EXPECT_NE(e.find("'relu' (MaxUnpool) reads 'indices'"), std::string::npos) << e;
}

// A model fuzz_model found (EyeLike on an input whose tensor type has no element type).
constexpr char kEyeLikeNoElemType[] =
    "\x08\x64\x2d\x74\x65\x73\x74\x3a\x62\x0a\x1d\x0a\x01\x78\x12\x01\x79\x22\x07\x45"
    "\x79\x65\x4c\x69\x6b\x65\x2a\x0c\x0a\x05\x64\x74\x79\x70\x65\x18\x0b\xa0\x01\x02"
    "\x12\x17\x74\x65\x73\x74\x5f\x65\x79\x65\x6c\x69\x6b\x65\x5f\x77\x69\x74\x68\x5f"
    "\x64\x74\x79\x70\x65\x5a\x13\x0a\x01\x78\x12\x0e\x0a\x0c\x3a\x06\x12\x08\x0a\x02"
    "\x08\x03\x0a\x02\x08\x04\x62\x13\x0a\x01\x79\x12\x0e\x0a\x0c\x08\x0b\x12\x08\x0a"
    "\x02\x08\x03\x0a\x02\x08\x04\x42\x04\x0a\x00\x10\x09";

// Attributes and ranks ONNX's own inference or converter would read out of bounds on (found by
// fuzz_model; src/api/operator_sweep_test.cc covers every operator).
TEST(OnnxImport, AttributesOnnxWouldReadOutOfBoundsOnAreRefused) {
  auto with_node = [](int64_t opset, const std::string& op, const std::string& attr, int64_t value,
                      int rank) {
    auto m = testing::small_model(opset);
    auto* x = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type();
    x->mutable_shape()->clear_dim();
    for (int d = 0; d < rank; ++d) x->mutable_shape()->add_dim()->set_dim_value(2 + d);
    onnx::NodeProto* n = m.mutable_graph()->mutable_node(1);
    n->set_op_type(op);
    n->set_name("bad");
    n->set_input(0, "x");
    n->add_input("x");
    if (!attr.empty()) {
      auto* a = n->add_attribute();
      a->set_name(attr);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(value);
    }
    return m;
  };
  auto m = with_node(17, "LayerNormalization", "axis", -35, 3);
  m.mutable_graph()->mutable_node(1)->add_output("mean");
  std::string e = error_of(m);
  EXPECT_NE(e.find("a LayerNormalization node: axis -35 is out of range for an input of rank 3"),
            std::string::npos)
      << e;
  e = error_of(with_node(13, "GatherND", "batch_dims", -35, 3));
  EXPECT_NE(e.find("a GatherND node: batch_dims -35 is negative"), std::string::npos) << e;
  // Opset 6: the converter's Gemm adapter reads two dims of each matrix.
  m = with_node(6, "Gemm", "", 0, 1);
  m.mutable_graph()->mutable_node(1)->add_input("x");
  e = error_of(m);
  EXPECT_NE(e.find("input 0 has rank 1; it must be 2"), std::string::npos) << e;
  // A QLinearConv whose image has rank 3 and whose weight has rank 4 (the same check guards
  // Conv, ConvInteger and ConvTranspose).
  m = with_node(13, "Conv", "", 0, 3);
  auto* w4 = m.mutable_graph()->add_input();
  w4->set_name("w4");
  w4->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int d : {1, 3, 1, 1}) {
    w4->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  }
  m.mutable_graph()->mutable_node(1)->set_input(1, "w4");
  e = error_of(m);
  EXPECT_NE(e.find("a Conv node: the input has rank 3 and the weight rank 4"), std::string::npos)
      << e;
  // A stride of 0 (found by fuzz_model: ONNX's inference divided by it); the same check guards
  // the other convolutions and the pools, at every version.
  for (const std::string op : {"Conv", "MaxPool"}) {
    for (int64_t opset : {6, 11, 13}) {
      m = with_node(opset, op, "", 0, 4);
      onnx::NodeProto* node = m.mutable_graph()->mutable_node(1);
      if (op == "MaxPool") node->mutable_input()->RemoveLast();
      for (auto [name, values] :
           {std::pair<std::string, std::vector<int64_t>>{"kernel_shape", {1, 1}},
            {"strides", {0, 2}}}) {
        auto* a = node->add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : values) a->add_ints(v);
      }
      e = error_of(m);
      EXPECT_NE(e.find("a " + op + " node: strides has 0; each must be at least 1"),
                std::string::npos)
          << op << " " << opset << ": " << e;
    }
  }
  // A graph input with no type (found by fuzz_model: EyeLike's inference read it).
  m = testing::small_model(9);
  m.mutable_graph()->mutable_input(0)->clear_type();
  m.mutable_graph()->mutable_node(1)->set_op_type("EyeLike");
  m.mutable_graph()->mutable_node(1)->set_input(0, "x");
  e = error_of(m);
  EXPECT_NE(e.find("graph input 'x' has no type"), std::string::npos) << e;
  // Or a tensor type of no element type (found by fuzz_model: ONNX took it for no type, and
  // EyeLike's inference read the null type). The fuzzer's model as it found it: IR version 100,
  // the input's elem_type written with the wrong wire type.
  {
    onnx::ModelProto found;
    ASSERT_TRUE(
        found.ParseFromString(std::string(kEyeLikeNoElemType, sizeof kEyeLikeNoElemType - 1)));
    e = error_of(found);
    EXPECT_NE(e.find("graph input 'x' is a tensor of no element type"), std::string::npos) << e;
  }
  // A graph input of a map type (found by fuzz_model: MaxUnpool's inference read it as a tensor)
  // or a sequence: refused as unsupported before inference.
  for (const bool map : {true, false}) {
    m = testing::small_model(11);
    auto* t = m.mutable_graph()->mutable_input(0)->mutable_type();
    t->clear_tensor_type();
    if (map) {
      t->mutable_map_type()->set_key_type(onnx::TensorProto::INT64);
      t->mutable_map_type()->mutable_value_type()->mutable_tensor_type()->set_elem_type(1);
    } else {
      t->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(1);
    }
    m.mutable_graph()->mutable_node(1)->set_op_type("MaxUnpool");
    e = error_of(m);
    EXPECT_NE(e.find(std::string("graph input 'x' is a ") + (map ? "map" : "sequence") +
                     "; nnfuse runs tensors only"),
              std::string::npos)
        << e;
  }
  // In range, the same LayerNormalization imports.
  m = with_node(17, "LayerNormalization", "axis", -1, 3);
  EXPECT_EQ(error_of(m), "");
}

// Found by fuzz_model: MaxUnpool's inference (without output_shape) copied the channel dim from
// the indices' shape unchecked. Indices of unknown shape import (the output's shape is left to
// nnfuse's inference); indices of another rank than the input are refused.
TEST(OnnxImport, MaxUnpoolIndicesOfUnknownOrWrongRank) {
  auto model = [](int indices_rank) {
    onnx::ModelProto m;
    m.set_ir_version(6);
    m.add_opset_import()->set_version(11);
    onnx::GraphProto* g = m.mutable_graph();
    g->set_name("unpool");
    onnx::NodeProto* n = g->add_node();
    n->set_op_type("MaxUnpool");
    n->set_name("unpool");
    n->add_input("x");
    n->add_input("i");
    n->add_output("y");
    for (const char* name : {"kernel_shape", "strides"}) {
      auto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INTS);
      a->add_ints(2);
      a->add_ints(2);
    }
    auto add_value = [](onnx::ValueInfoProto* v, const char* name, int elem, int rank) {
      v->set_name(name);
      auto* t = v->mutable_type()->mutable_tensor_type();
      t->set_elem_type(elem);
      if (rank < 0) return;
      t->mutable_shape();
      for (int d = 0; d < rank; ++d) t->mutable_shape()->add_dim()->set_dim_value(d < 2 ? 1 : 2);
    };
    add_value(g->add_input(), "x", onnx::TensorProto::FLOAT, 4);
    add_value(g->add_input(), "i", onnx::TensorProto::INT64, indices_rank);
    add_value(g->add_output(), "y", onnx::TensorProto::FLOAT, -1);
    return m;
  };
  EXPECT_EQ(error_of(model(-1)), "");
  EXPECT_EQ(error_of(model(4)), "");
  for (int rank : {0, 1, 3}) {
    const std::string e = error_of(model(rank));
    EXPECT_NE(e.find("a MaxUnpool node: the indices have rank " + std::to_string(rank)),
              std::string::npos)
        << rank << ": " << e;
  }
}

TEST(OnnxImport, BadBytesAreErrors) {
  std::string good = testing::small_model().SerializeAsString();
  for (size_t cut : {size_t{0}, size_t{5}, good.size() / 2, good.size() - 3}) {
    EXPECT_THROW(load_onnx_from_string(good.substr(0, cut), "", "cut.onnx"), Error) << cut;
  }
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::string junk(200 + trial * 13, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    EXPECT_THROW(load_onnx_from_string(junk, "", "junk.onnx"), Error);
  }
}

TEST(OnnxImport, UndefinedInputIsAnError) {
  auto m = testing::small_model();
  m.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
  EXPECT_NE(error_of(m).find("nowhere"), std::string::npos) << error_of(m);
}

TEST(OnnxImport, OverflowingInitializerShapeIsAnError) {
  auto m = testing::small_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  w->add_dims(int64_t{1} << 62);
  w->add_dims(16);
  EXPECT_NE(error_of(m).find("64 bits"), std::string::npos) << error_of(m);
}

TEST(OnnxExport, RoundTripsAndPassesChecker) {
  auto g = load(testing::small_model());
  g->nodes()[1]->set_provenance({"add", "relu"}, "TestPass");
  onnx::ModelProto out;
  graph_to_model(*g, &out);
  EXPECT_NO_THROW(onnx::checker::check_model(out));
  auto g2 = load(out);
  EXPECT_EQ(graph_to_text(*g), graph_to_text(*g2));
  EXPECT_EQ(g2->nodes()[1]->fused_by(), "TestPass");
  EXPECT_EQ(g2->nodes()[1]->fused_from(), (std::vector<std::string>{"add", "relu"}));
}

}  // namespace importer_test
}  // namespace nnfuse

namespace nnfuse {
namespace importer_test {

TEST(ImporterInputShapes, OverrideSetsInputDimsAndReinfersTheRest) {
  const std::string bytes = testing::small_model().SerializeAsString();
  ImportOptions o;
  o.input_shapes["x"] = {5, 3};
  auto g = load_onnx_from_string(bytes, "", "small.onnx", o);
  EXPECT_EQ(g->inputs()[0]->shape().static_dims(), (Dims{5, 3}));
  EXPECT_EQ(g->outputs()[0]->shape().static_dims(), (Dims{5, 3}));
}

TEST(ImporterInputShapes, BadOverridesNameTheInput) {
  const std::string bytes = testing::small_model().SerializeAsString();
  auto message = [&](std::map<std::string, std::vector<int64_t>> shapes) {
    ImportOptions o;
    o.input_shapes = std::move(shapes);
    try {
      load_onnx_from_string(bytes, "", "small.onnx", o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"nope", {1, 3}}}).find("no input 'nope'"), std::string::npos);
  EXPECT_NE(message({{"x", {1, 3, 4}}}).find("rank 2"), std::string::npos);
  EXPECT_NE(message({{"x", {0, 3}}}).find("must be positive"), std::string::npos);
}

}  // namespace importer_test
}  // namespace nnfuse

namespace nnfuse {
namespace importer_test {

TEST(Provenance, DocStringRoundTripsAndOtherDocsAreIgnored) {
  const std::string doc = provenance_doc("ConvAddFusionPass", {"conv", "add", "relu"});
  EXPECT_EQ(doc, "nnfuse: fused by ConvAddFusionPass from conv,add,relu");
  std::string pass;
  std::vector<std::string> from;
  ASSERT_TRUE(parse_provenance_doc(doc, &pass, &from));
  EXPECT_EQ(pass, "ConvAddFusionPass");
  EXPECT_EQ(from, (std::vector<std::string>{"conv", "add", "relu"}));
  EXPECT_FALSE(parse_provenance_doc("a layer written by hand", &pass, &from));
  EXPECT_FALSE(parse_provenance_doc("nnfuse: fused by X", &pass, &from));  // no " from "
}

}  // namespace importer_test
}  // namespace nnfuse
