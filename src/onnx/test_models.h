// Small hand-built ONNX models for tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace nnfuse::testing {

// y = Relu(Add(x, w)) with w an initializer; x has a symbolic batch dim.
// Names are passed as std::string: GCC 12 at -O3 reports a false -Wrestrict overlap inside
// the inlined const char* overloads in some translation units.
inline onnx::ModelProto small_model(int64_t opset = 13) {
  using namespace std::string_literals;
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain(""s);
  o->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("small"s);
  auto* x = g->add_input();
  x->set_name("x"s);
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("batch"s);
  tt->mutable_shape()->add_dim()->set_dim_value(3);
  auto* w = g->add_initializer();
  w->set_name("w"s);
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  for (float f : {1.0f, -2.0f, 3.0f}) w->add_float_data(f);
  auto* add = g->add_node();
  add->set_op_type("Add"s);
  add->set_name("add"s);
  add->add_input("x"s);
  add->add_input("w"s);
  add->add_output("s"s);
  auto* relu = g->add_node();
  relu->set_op_type("Relu"s);
  relu->set_name("relu"s);
  relu->add_input("s"s);
  relu->add_output("y"s);
  auto* y = g->add_output();
  y->set_name("y"s);
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

}  // namespace nnfuse::testing
