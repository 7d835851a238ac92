#include "onnx/proto_writer.h"

#include "onnx/exporter.h"
#include "onnx/tensor_proto.h"

namespace nnfuse {

ProtoWriter::ProtoWriter(const Graph& g, onnx::GraphProto* gp, int64_t opset)
    : gp_(gp), opset_(opset) {
  for (const Value* v : g.values()) taken_.insert(v->name());
  for (const Node* n : g.nodes()) node_names_.insert(n->name());
}

std::string ProtoWriter::fresh(const std::string& stem) {
  std::string name = stem;
  for (int k = 1; taken_.count(name); ++k) name = stem + "_" + std::to_string(k);
  taken_.insert(name);
  return name;
}

onnx::NodeProto* ProtoWriter::node(const std::string& op_type,
                                   const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs,
                                   const std::string& domain, const std::string& name) {
  onnx::NodeProto* n = gp_->add_node();
  n->set_op_type(op_type);
  std::string unique = name.empty() ? op_type : name;
  if (!own_.empty() && unique == own_) {
    own_.clear();  // the lowered node's own name, once
  } else {
    const std::string stem = unique;
    for (int k = 1; node_names_.count(unique); ++k) unique = stem + "_" + std::to_string(k);
  }
  node_names_.insert(unique);
  n->set_name(unique);
  if (!domain.empty()) n->set_domain(domain);
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  return n;
}

std::string ProtoWriter::constant(const std::string& stem, const Tensor& t) {
  const std::string name = fresh(stem);
  tensor_to_proto(t, name, gp_->add_initializer());
  return name;
}

std::string ProtoWriter::scalar(float v) { return constant("const", Tensor::scalar(v)); }

std::string ProtoWriter::int64s(const std::vector<int64_t>& v) {
  return constant("shape", Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

void ProtoWriter::set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void ProtoWriter::set_float(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void ProtoWriter::set_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

void ProtoWriter::set_ints(onnx::NodeProto* n, const std::string& name,
                           const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void ProtoWriter::set_floats(onnx::NodeProto* n, const std::string& name,
                             const std::vector<float>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}

void ProtoWriter::set_attr(onnx::NodeProto* n, const std::string& name, const Attribute& a) {
  attribute_to_proto(name, a, n->add_attribute());
}

}  // namespace nnfuse
