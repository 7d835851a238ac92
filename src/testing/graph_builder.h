// Small graphs built by hand for tests, one builder for every module's tests:
//
//   GraphBuilder b;
//   Value* x = b.in("x", {1, 8});
//   Value* y = b.n("Relu", {b.n("MatMul", {x, b.c(w)}, {1, 4})}, {1, 4});
//   b.out(y);
//
// n() names nodes after their op (Relu3) and gives their output the static shape it is told;
// node() and op() name them as the test says and leave the output's shape unknown unless told.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nnfuse::testing {

struct GraphBuilder {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  int k = 0;  // for generated names

  explicit GraphBuilder(int64_t opset = 17) { g->opsets[""] = opset; }

  // A graph input.
  Value* in(const std::string& name, const Dims& d, DType t = DType::kFloat32) {
    return input(name, Shape::of(d), t);
  }
  Value* input(const std::string& name, Shape s = Shape::of({2, 3}), DType t = DType::kFloat32) {
    Value* v = g->add_value(name, t, std::move(s));
    g->add_input(v);
    return v;
  }
  // A constant (an initializer), named or not.
  Value* c(Tensor t) { return cst(g->unique_value_name("const"), std::move(t)); }
  Value* cst(const std::string& name, Tensor t) {
    Value* v = g->add_value(name);
    ++k;
    v->set_constant(std::move(t));
    return v;
  }
  Value* cst(const std::string& name, float x) { return cst(name, Tensor::scalar<float>(x)); }
  // A node named after its op, writing one float32 value of static shape `out`.
  Value* n(const std::string& op, std::vector<Value*> ins, const Dims& out,
           std::map<std::string, Attribute> attrs = {}, const std::string& name = "") {
    Node* node = add(op, name.empty() ? op + std::to_string(k++) : name, std::move(ins),
                     DType::kFloat32, Shape::of(out), "");
    for (auto& [a, v] : attrs) node->set_attr(a, v);
    return node->output(0);
  }
  Node* node(const std::string& op, std::vector<Value*> ins, const Dims& out,
             const std::string& domain = "") {
    return add(op, op + std::to_string(k++), std::move(ins), DType::kFloat32, Shape::of(out),
               domain);
  }
  // A node named `name` (its output `name`_out).
  Node* node(const std::string& op, const std::string& name, std::vector<Value*> ins,
             DType t = DType::kFloat32, Shape s = Shape::unknown()) {
    return add(op, name, std::move(ins), t, std::move(s), "");
  }
  Value* op(const std::string& op, const std::string& name, std::vector<Value*> ins) {
    return node(op, name, std::move(ins))->output(0);
  }
  // A node with one output of unknown type and shape (as exporters often leave them), its
  // output named `op`_k and the node `op`k.
  Value* untyped(const std::string& op, std::vector<Value*> ins,
                 std::map<std::string, Attribute> attrs = {}) {
    Value* o = g->add_value(std::string(op).append("_").append(std::to_string(k)));
    Node* node = g->add_node(op, std::string(op).append(std::to_string(k++)), ins, {o});
    for (auto& [a, v] : attrs) node->set_attr(a, v);
    return o;
  }
  void out(Value* v) { g->add_output(v); }
  Node* find(const std::string& name) const {
    for (Node* n : g->nodes()) {
      if (n->name() == name) return n;
    }
    return nullptr;
  }

 private:
  Node* add(const std::string& op, const std::string& name, std::vector<Value*> ins, DType t,
            Shape s, const std::string& domain) {
    Value* o = g->add_value(std::string(name).append("_out"), t, std::move(s));
    return g->add_node(op, name, ins, {o}, domain);
  }
};

}  // namespace nnfuse::testing
