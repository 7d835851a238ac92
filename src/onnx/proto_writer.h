// Writing nodes and constants into a GraphProto by hand: what an export that lowers one IR node
// to several ONNX nodes (the ONNX Runtime export, ort_export.h) builds them with.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace nnfuse {

class ProtoWriter {
 public:
  // `g`: the graph written (value names taken from it are never reused); `opset`: the default
  // domain's version the nodes are written for.
  ProtoWriter(const Graph& g, onnx::GraphProto* gp, int64_t opset);

  int64_t opset() const { return opset_; }
  onnx::GraphProto* graph_proto() { return gp_; }
  // A value name no value of the graph and no earlier fresh() has, starting with `stem`.
  std::string fresh(const std::string& stem);
  // The node being lowered: the first node written with its name keeps it.
  void begin(const std::string& node_name) { own_ = node_name; }
  // Appends a node (domain "" is ONNX's) named `name` (or the op type) made unique among the
  // graph's and the written nodes' names.
  onnx::NodeProto* node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& domain = "",
                        const std::string& name = "");
  // An initializer holding `t` under a fresh name from `stem`; returns the name.
  std::string constant(const std::string& stem, const Tensor& t);
  std::string scalar(float v);                        // a float32 scalar
  std::string int64s(const std::vector<int64_t>& v);  // a 1-D int64 tensor (shapes, axes)

  static void set_int(onnx::NodeProto* n, const std::string& name, int64_t v);
  static void set_float(onnx::NodeProto* n, const std::string& name, float v);
  static void set_string(onnx::NodeProto* n, const std::string& name, const std::string& v);
  static void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v);
  static void set_floats(onnx::NodeProto* n, const std::string& name, const std::vector<float>& v);
  // Copies an IR attribute.
  static void set_attr(onnx::NodeProto* n, const std::string& name, const Attribute& a);

 private:
  onnx::GraphProto* gp_;
  int64_t opset_;
  std::unordered_set<std::string> taken_;       // value names
  std::unordered_set<std::string> node_names_;  // the graph's nodes' and the written nodes'
  std::string own_;
};

}  // namespace nnfuse
