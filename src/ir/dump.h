// Graph dumps for --dump_graph and debugging: JSON and YAML (the same tree), and Graphviz DOT
// with every fused node outlined in a cluster labelled by its pass and original nodes.
#pragma once

#include <string>

#include "ir/graph.h"

namespace nnfuse {

// Graph name, opsets, inputs/outputs (dtype, shape), initializers (name, dtype, shape; no
// data), intermediate values (value_info), and nodes (name, op_type, domain, inputs, outputs,
// attributes with tensors summarized, and fused_by/fused_from for fused nodes).
std::string graph_to_json(const Graph& g);
std::string graph_to_yaml(const Graph& g);
std::string graph_to_dot(const Graph& g);

// Writes one of the above to `path`; `format` is "yaml", "json" or "dot". Throws
// kInvalidArgument for another format or a path that cannot be written.
void dump_graph(const Graph& g, const std::string& format, const std::string& path);

}  // namespace nnfuse
