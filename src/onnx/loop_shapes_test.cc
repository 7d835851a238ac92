// relax_loop_carried_shapes: a Loop body's carried inputs keep only the dims its outputs declare
// alike; Scan states too; nested bodies are reached; other inputs are left alone.
#include "onnx/loop_shapes.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace nnfuse {
namespace loop_shapes_test {

// A value of float type and the given dims (0: a dim_param, -1: no dim value at all).
void typed(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  auto* s = t->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = s->add_dim();
    if (d > 0) dim->set_dim_value(d);
    if (d == 0) dim->set_dim_param(name + "_d");
  }
}

std::vector<std::string> dims_of(const onnx::ValueInfoProto& v) {
  std::vector<std::string> out;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    out.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : "?");
  }
  return out;
}

// Loop(M, cond, h [1, 128], kv [4, 16, 32]) whose body gives h as [1, 128] and kv symbolic.
onnx::NodeProto loop_node() {
  onnx::NodeProto n;
  n.set_op_type("Loop");
  for (const char* i : {"M", "cond", "h", "kv"}) n.add_input(i);
  n.add_output("h_out");
  n.add_output("kv_out");
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* b = a->mutable_g();
  typed(b->add_input(), "iter", {});
  typed(b->add_input(), "cond_in", {});
  typed(b->add_input(), "h_in", {1, 128});
  typed(b->add_input(), "kv_in", {4, 16, 32});
  typed(b->add_output(), "cond_out", {});
  typed(b->add_output(), "h_next", {1, 128});
  typed(b->add_output(), "kv_next", {4, 0, 32});
  return n;
}

TEST(LoopShapes, CarriedDimsThatChangeBecomeUnknown) {
  onnx::GraphProto g;
  *g.add_node() = loop_node();
  EXPECT_EQ(relax_loop_carried_shapes(g), 1u);
  const onnx::GraphProto& body = g.node(0).attribute(0).g();
  EXPECT_EQ(dims_of(body.input(2)), (std::vector<std::string>{"1", "128"}));
  EXPECT_EQ(dims_of(body.input(3)), (std::vector<std::string>{"4", "?", "32"}));
  EXPECT_EQ(body.input(3).type().tensor_type().shape().dim(1).dim_param(), "kv_in_carried_1");
}

TEST(LoopShapes, NestedLoopsAndScanStatesAreRelaxedToo) {
  // If(then: the Loop) and a Scan whose state grows: both reached.
  onnx::GraphProto g;
  onnx::NodeProto* iff = g.add_node();
  iff->set_op_type("If");
  onnx::AttributeProto* then = iff->add_attribute();
  then->set_name("then_branch");
  then->set_type(onnx::AttributeProto::GRAPH);
  *then->mutable_g()->add_node() = loop_node();
  onnx::NodeProto* scan = g.add_node();
  scan->set_op_type("Scan");
  scan->add_input("state");
  scan->add_input("xs");
  onnx::AttributeProto* m = scan->add_attribute();
  m->set_name("num_scan_inputs");
  m->set_i(1);
  onnx::AttributeProto* body = scan->add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  typed(body->mutable_g()->add_input(), "s", {2, 3});
  typed(body->mutable_g()->add_input(), "x", {5});
  typed(body->mutable_g()->add_output(), "s2", {2, 4});
  EXPECT_EQ(relax_loop_carried_shapes(g), 2u);
  EXPECT_EQ(dims_of(body->g().input(0)), (std::vector<std::string>{"2", "?"}));
  EXPECT_EQ(dims_of(body->g().input(1)), (std::vector<std::string>{"5"}));  // a slice: as is
}

}  // namespace loop_shapes_test
}  // namespace nnfuse
