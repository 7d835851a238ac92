#include "ir/dump.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace nnfuse {
namespace dump_test {

// x -> [fused conv1+bn1+relu1] -> h -> Neg "say \"hi\"" -> y, with a weight initializer.
struct Sample {
  Graph g;
  Node* fused;
  Sample() {
    g.name = "tiny";
    g.opsets[""] = 17;
    g.opsets["ai.nnfuse"] = 1;
    Shape xs = Shape::of({1, 3, 4, 4});
    xs.dims[0] = Dim{-1, "batch"};
    Value* x = g.add_value("x", DType::kFloat32, xs);
    g.add_input(x);
    Value* w = g.add_value("w");
    w->set_constant(Tensor(DType::kFloat32, {3, 3, 1, 1}));
    Value* h = g.add_value("h\"quoted", DType::kFloat32, Shape::of({1, 3, 4, 4}));
    Value* y = g.add_value("y", DType::kFloat32);
    fused = g.add_node("FusedConv", "conv1_bn1_relu1", {x, w, nullptr}, {h}, "ai.nnfuse");
    fused->set_provenance({"conv1", "bn1", "relu1"}, "ConvBatchnormFusionPass");
    Attribute a;
    a.kind = Attribute::Kind::kInts;
    a.ints = {1, 1};
    fused->set_attr("strides", a);
    a = {};
    a.kind = Attribute::Kind::kFloat;
    a.f = 0.1f;
    fused->set_attr("alpha", a);
    a = {};
    a.kind = Attribute::Kind::kString;
    a.s = "Relu";
    fused->set_attr("activation", a);
    a.s = "on";
    fused->set_attr("mode", a);
    a = {};
    a.kind = Attribute::Kind::kTensor;
    a.t = Tensor(DType::kFloat32, {3});
    fused->set_attr("bias", a);
    a = {};
    a.kind = Attribute::Kind::kFloats;
    a.floats = {1e-5f, 2.5f};
    fused->set_attr("scales", a);
    a = {};
    a.kind = Attribute::Kind::kStrings;
    a.strings = {"a: b", "#c"};
    fused->set_attr("names", a);
    g.add_node("Neg", "say \"hi\"", {h}, {y});
    g.add_output(y);
  }
};

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Dump, JsonParsesBackWithNodesAndProvenance) {
  Sample s;
  nlohmann::json j = nlohmann::json::parse(graph_to_json(s.g));
  EXPECT_EQ(j["name"], "tiny");
  EXPECT_EQ(j["opsets"]["ai.onnx"], 17);
  EXPECT_EQ(j["opsets"]["ai.nnfuse"], 1);
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  EXPECT_EQ(j["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json({"batch", 3, 4, 4}));
  EXPECT_EQ(j["outputs"][0]["name"], "y");
  EXPECT_TRUE(j["outputs"][0]["shape"].is_null());  // rank unknown
  ASSERT_EQ(j["initializers"].size(), 1u);
  EXPECT_EQ(j["initializers"][0]["name"], "w");
  EXPECT_EQ(j["initializers"][0]["shape"], nlohmann::json({3, 3, 1, 1}));
  EXPECT_FALSE(j["initializers"][0].contains("data"));
  EXPECT_EQ(j["value_info"][0]["name"], "h\"quoted");

  ASSERT_EQ(j["nodes"].size(), 2u);
  const auto& n = j["nodes"][0];
  EXPECT_EQ(n["name"], "conv1_bn1_relu1");
  EXPECT_EQ(n["op_type"], "FusedConv");
  EXPECT_EQ(n["domain"], "ai.nnfuse");
  EXPECT_EQ(n["inputs"], nlohmann::json({"x", "w", ""}));
  EXPECT_EQ(n["outputs"], nlohmann::json({"h\"quoted"}));
  EXPECT_EQ(n["fused_by"], "ConvBatchnormFusionPass");
  EXPECT_EQ(n["fused_from"], nlohmann::json({"conv1", "bn1", "relu1"}));
  const auto& a = n["attributes"];
  EXPECT_EQ(a["strides"], nlohmann::json({1, 1}));
  EXPECT_EQ(a["alpha"], 0.1);  // the float's shortest form, not 0.10000000149...
  EXPECT_EQ(a["activation"], "Relu");
  EXPECT_EQ(a["bias"], "tensor<float32[3]>");
  EXPECT_EQ(a["names"], nlohmann::json({"a: b", "#c"}));
  EXPECT_EQ(j["nodes"][1]["name"], "say \"hi\"");
  EXPECT_FALSE(j["nodes"][1].contains("fused_by"));
}

TEST(Dump, YamlHasNodesAndQuotesWhatNeedsIt) {
  Sample s;
  std::string y = graph_to_yaml(s.g);
  EXPECT_NE(y.find("name: tiny\n"), std::string::npos) << y;
  EXPECT_NE(y.find("  - name: conv1_bn1_relu1\n"), std::string::npos) << y;
  EXPECT_NE(y.find("  - name: \"say \\\"hi\\\"\"\n"), std::string::npos) << y;
  EXPECT_NE(y.find("fused_by: ConvBatchnormFusionPass\n"), std::string::npos) << y;
  EXPECT_NE(y.find("fused_from: [conv1, bn1, relu1]\n"), std::string::npos) << y;
  EXPECT_NE(y.find("shape: [batch, 3, 4, 4]"), std::string::npos) << y;
  EXPECT_NE(y.find("inputs: [x, w, \"\"]"), std::string::npos) << y;
  EXPECT_NE(y.find("mode: \"on\""), std::string::npos) << y;  // would read as a boolean
  EXPECT_NE(y.find("names: [\"a: b\", \"#c\"]"), std::string::npos) << y;
  EXPECT_NE(y.find("scales: [1.0e-05, 2.5]"), std::string::npos) << y;
  EXPECT_NE(y.find("shape: null"), std::string::npos) << y;
  EXPECT_NE(y.find("attributes: {}"), std::string::npos) << y;
  EXPECT_EQ(y.find('\t'), std::string::npos);
}

TEST(Dump, DotOutlinesFusedNodesAndIsValid) {
  Sample s;
  std::string d = graph_to_dot(s.g);
  EXPECT_NE(d.find("subgraph cluster_0"), std::string::npos) << d;
  EXPECT_NE(d.find("label=\"ConvBatchnormFusionPass: conv1, bn1, relu1\""), std::string::npos) << d;
  EXPECT_NE(d.find("label=\"Neg\\nsay \\\"hi\\\"\""), std::string::npos) << d;
  EXPECT_NE(d.find("label=\"h\\\"quoted\\n[1, 3, 4, 4]\""), std::string::npos) << d;
  EXPECT_NE(d.find("shape=ellipse"), std::string::npos) << d;
  EXPECT_EQ(d.find("-> n0 [label=\"w"), std::string::npos) << d;  // no edges from weights

  if (access("/usr/bin/dot", X_OK) != 0) GTEST_SKIP() << "graphviz not installed";
  std::string path = write_temp("dump_test.dot", d);
  std::string cmd = "/usr/bin/dot -Tsvg '" + path + "' -o /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << d;
  std::remove(path.c_str());
}

TEST(Dump, DotWithoutFusionHasNoCluster) {
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({2}));
  Value* y = g.add_value("y", DType::kFloat32, Shape::of({2}));
  g.add_input(x);
  g.add_node("Relu", "relu", {x}, {y});
  g.add_output(y);
  std::string d = graph_to_dot(g);
  EXPECT_EQ(d.find("cluster"), std::string::npos) << d;
  EXPECT_NE(d.find("i0 -> n0 [label=\"x\\n[2]\"]"), std::string::npos) << d;
  EXPECT_NE(d.find("n0 -> o0 [label=\"y\\n[2]\"]"), std::string::npos) << d;
}

TEST(Dump, InvalidUtf8NamesDoNotThrow) {
  Graph g;
  Value* x = g.add_value("x\xff", DType::kFloat32, Shape::of({2}));
  g.add_input(x);
  g.add_output(x);
  EXPECT_TRUE(nlohmann::json::accept(graph_to_json(g)));
  EXPECT_NO_THROW((void)graph_to_yaml(g));
  EXPECT_NO_THROW((void)graph_to_dot(g));
}

TEST(Dump, DumpGraphWritesEachFormat) {
  Sample s;
  std::string base = ::testing::TempDir() + "dump_test_out.";
  for (const char* fmt : {"json", "yaml", "dot"}) {
    std::string path = base + fmt;
    dump_graph(s.g, fmt, path);
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("conv1_bn1_relu1"), std::string::npos) << fmt;
    std::remove(path.c_str());
  }
}

TEST(Dump, DumpGraphErrors) {
  Sample s;
  try {
    dump_graph(s.g, "xml", ::testing::TempDir() + "x.xml");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_STREQ(e.what(), "unknown graph dump format \"xml\" (accepted: yaml, json, dot)");
  }
  std::string bad = ::testing::TempDir() + "no/such/dir/g.json";
  try {
    dump_graph(s.g, "json", bad);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()),
              "cannot write the graph dump '" + bad + "' (No such file or directory)");
  }
}

}  // namespace dump_test
}  // namespace nnfuse
