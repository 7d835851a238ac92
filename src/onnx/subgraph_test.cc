// Control flow at import and export: a subgraph's reads of outer values (through nested
// subgraphs too) become explicit inputs of its node, the graph runs, and the exported model
// passes the ONNX checker and imports again to the same numbers.
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <set>

#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "runtime/session.h"

namespace nnfuse {
namespace subgraph_test {

void value(onnx::ValueInfoProto* v, const std::string& name, int elem, std::vector<int64_t> dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  auto* s = t->mutable_shape();
  for (int64_t d : dims) s->add_dim()->set_dim_value(d);
}

onnx::NodeProto* node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> ins,
                      std::vector<std::string> outs) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + outs[0]);
  for (const auto& i : ins) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  return n;
}

constexpr int kF = onnx::TensorProto::FLOAT, kB = onnx::TensorProto::BOOL,
              kI = onnx::TensorProto::INT64;

// y = If(c) then Loop(n times: acc += w, from x) else x * w; x [2, 3], w [3] an initializer.
// The Loop's body reads w from two graphs out.
onnx::ModelProto nested_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("nested");
  value(g->add_input(), "x", kF, {2, 3});
  value(g->add_input(), "c", kB, {});
  value(g->add_input(), "n", kI, {});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(kF);
  w->add_dims(3);
  for (float f : {1.0f, 2.0f, 3.0f}) w->add_float_data(f);

  onnx::GraphProto body;
  body.set_name("body");
  value(body.add_input(), "i", kI, {});
  value(body.add_input(), "cond", kB, {});
  value(body.add_input(), "acc", kF, {2, 3});
  node(&body, "Add", {"acc", "w"}, {"acc_out"});
  node(&body, "Identity", {"cond"}, {"cond_out"});
  value(body.add_output(), "cond_out", kB, {});
  value(body.add_output(), "acc_out", kF, {2, 3});

  onnx::GraphProto then_g;
  then_g.set_name("then");
  onnx::NodeProto* loop = node(&then_g, "Loop", {"n", "", "x"}, {"loop_out"});
  onnx::AttributeProto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
  value(then_g.add_output(), "loop_out", kF, {2, 3});

  onnx::GraphProto else_g;
  else_g.set_name("else");
  node(&else_g, "Mul", {"x", "w"}, {"mul_out"});
  value(else_g.add_output(), "mul_out", kF, {2, 3});

  onnx::NodeProto* iff = node(g, "If", {"c"}, {"y"});
  a = iff->add_attribute();
  a->set_name("then_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = then_g;
  a = iff->add_attribute();
  a->set_name("else_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = else_g;
  value(g->add_output(), "y", kF, {2, 3});
  return m;
}

std::vector<float> run(std::unique_ptr<Graph> g, bool c, int64_t n) {
  PlanSession s(std::move(g));
  Tensor x = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  std::vector<Tensor> out =
      s.run({{"x", x}, {"c", Tensor::scalar<bool>(c)}, {"n", Tensor::scalar<int64_t>(n)}});
  const float* p = out.at(0).data<float>();
  return std::vector<float>(p, p + 6);
}

TEST(Subgraphs, NestedCapturesBecomeInputsAndRun) {
  onnx::ModelProto m = nested_model();
  onnx::checker::check_model(m);
  auto g = load_onnx_from_string(m.SerializeAsString(), "", "nested.onnx");
  ASSERT_EQ(g->num_nodes(), 1u);
  const Node* iff = g->nodes()[0];
  // c, then the outer values the branches read: n and x (the Loop's inputs) and w (read by the
  // Loop's body, two graphs in).
  ASSERT_EQ(iff->num_inputs(), 4u);
  std::set<std::string> captured;
  for (size_t i = 1; i < 4; ++i) captured.insert(iff->input(i)->name());
  EXPECT_EQ(captured, (std::set<std::string>{"n", "x", "w"}));
  for (const char* b : {"then_branch", "else_branch"}) {
    EXPECT_EQ(iff->find_attr(b)->g->num_captures, 3u) << b;
  }
  const Graph& then_g = *iff->find_attr("then_branch")->g;
  const Node* loop = then_g.nodes()[0];
  EXPECT_EQ(loop->op_type(), "Loop");
  EXPECT_EQ(loop->find_attr("body")->g->num_captures, 1u);  // w
  EXPECT_EQ(run(std::move(g), true, 3), (std::vector<float>{3, 7, 11, 6, 10, 14}));
  g = load_onnx_from_string(m.SerializeAsString(), "", "nested.onnx");
  EXPECT_EQ(run(std::move(g), false, 3), (std::vector<float>{0, 2, 6, 3, 8, 15}));
  g = load_onnx_from_string(m.SerializeAsString(), "", "nested.onnx");
  EXPECT_EQ(run(std::move(g), true, 0), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(Subgraphs, ExportedModelPassesTheCheckerAndRunsAgain) {
  auto g = load_onnx_from_string(nested_model().SerializeAsString(), "", "nested.onnx");
  const std::string bytes = export_onnx_string(*g);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  onnx::checker::check_model(m);
  // The captures are names again, not inputs: If has one input, Loop three.
  ASSERT_EQ(m.graph().node_size(), 1);
  EXPECT_EQ(m.graph().node(0).input_size(), 1);
  auto again = load_onnx_from_string(bytes, "", "exported.onnx");
  EXPECT_EQ(run(std::move(again), true, 2), (std::vector<float>{2, 5, 8, 5, 8, 11}));
}

TEST(Subgraphs, AnUndefinedNameInASubgraphIsNamed) {
  onnx::ModelProto m = nested_model();
  auto* body = m.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g();
  body->mutable_node(0)->set_input(1, "nowhere");
  try {
    load_onnx_from_string(m.SerializeAsString(), "", "nested.onnx");
    FAIL() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nowhere"), std::string::npos) << e.what();
  }
}

TEST(Subgraphs, NestingIsBounded) {
  // If inside If inside If ... 20 deep: refused with the depth named, not a stack overflow.
  // The deep chain is the then-branch; each else-branch is a leaf, so the model grows linearly
  // with the depth.
  onnx::GraphProto leaf;
  leaf.set_name("leaf");
  node(&leaf, "Identity", {"x"}, {"leaf_out"});
  value(leaf.add_output(), "leaf_out", kF, {2, 3});
  onnx::GraphProto inner = leaf;
  for (int k = 0; k < 20; ++k) {
    const std::string out = std::string("o").append(std::to_string(k));
    onnx::GraphProto outer;
    outer.set_name(std::string("level").append(std::to_string(k)));
    onnx::NodeProto* iff = node(&outer, "If", {"c"}, {out});
    for (const char* b : {"then_branch", "else_branch"}) {
      onnx::AttributeProto* a = iff->add_attribute();
      a->set_name(b);
      a->set_type(onnx::AttributeProto::GRAPH);
      *a->mutable_g() = std::string(b) == "then_branch" ? inner : leaf;
    }
    value(outer.add_output(), out, kF, {2, 3});
    inner = outer;
  }
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  *m.mutable_graph() = inner;
  value(m.mutable_graph()->add_input(), "x", kF, {2, 3});
  value(m.mutable_graph()->add_input(), "c", kB, {});
  try {
    load_onnx_from_string(m.SerializeAsString(), "", "deep.onnx");
    FAIL() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nest more than 16 deep"), std::string::npos) << e.what();
  }
}

}  // namespace subgraph_test
}  // namespace nnfuse
