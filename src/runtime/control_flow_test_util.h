// Test graphs with control flow for the runtime's tests: If(c) over two branches that each
// apply one op to the constant [1, 2].
#pragma once

#include <memory>
#include <string>

#include "ir/builder.h"
#include "ir/graph.h"

namespace nnfuse::testing {

inline Attribute graph_attr(std::shared_ptr<Graph> g) {
  Attribute a;
  a.kind = Attribute::Kind::kGraph;
  a.g = std::move(g);
  return a;
}

// y = If(c) then then_op([1, 2]) else else_op([1, 2]); the branches' nodes are named
// "then_<op>" and "else_<op>". An Einsum takes the equation "i->i".
inline std::unique_ptr<Graph> constant_if_graph(const std::string& then_op,
                                                const std::string& else_op) {
  auto branch = [](const std::string& which, const std::string& op) {
    auto b = std::make_shared<Graph>();
    b->opsets[""] = 17;
    Value* c = b->add_value(which + "_c");
    c->set_constant(Tensor::from_vector<float>({2}, {1, 2}));
    Value* o = b->add_value(which + "_o", DType::kFloat32, Shape::of({2}));
    Node* n = b->add_node(op, which + "_" + op, {c}, {o});
    if (op == "Einsum") n->set_attr("equation", attr_string("i->i"));
    b->add_output(o);
    return graph_attr(b);
  };
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* c = g->add_value("c", DType::kBool, Shape::of({}));
  g->add_input(c);
  Value* y = g->add_value("y", DType::kFloat32, Shape::of({2}));
  Node* n = g->add_node("If", "if", {c}, {y});
  n->set_attr("then_branch", branch("then", then_op));
  n->set_attr("else_branch", branch("else", else_op));
  g->add_output(y);
  return g;
}

}  // namespace nnfuse::testing
