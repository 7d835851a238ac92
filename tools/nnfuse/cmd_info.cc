// nnfuse info MODEL.onnx [--graph]: inputs, outputs, opsets, op histogram, support.
#include <iostream>

#include "onnx/importer.h"
#include "runtime/session.h"
#include "tools/nnfuse/commands.h"

namespace nnfuse::cli {

namespace {

struct InfoArgs {
  std::string model;
  bool graph = false;
};

int info(const InfoArgs& a) {
  auto g = load_onnx(a.model);
  std::cout << "model " << a.model << "\n";
  std::cout << "opsets:";
  for (auto& [d, v] : g->opsets) std::cout << " " << (d.empty() ? "ai.onnx" : d) << "=" << v;
  std::cout << "\ninputs:\n";
  for (const Value* v : g->runtime_inputs()) {
    std::cout << "  " << v->name() << " : " << dtype_name(v->dtype()) << v->shape().str() << "\n";
  }
  std::cout << "outputs:\n";
  for (const Value* v : g->outputs()) {
    std::cout << "  " << v->name() << " : " << dtype_name(v->dtype()) << v->shape().str() << "\n";
  }
  std::map<std::string, int> hist;
  for (const Node* n : g->nodes())
    hist[(n->domain().empty() ? "" : n->domain() + ".") + n->op_type()]++;
  int64_t weights = 0, weight_bytes = 0;
  for (const Value* v : g->values()) {
    if (v->is_constant()) {
      weights++;
      weight_bytes += static_cast<int64_t>(v->constant().nbytes());
    }
  }
  std::cout << "nodes: " << g->num_nodes() << ", initializers: " << weights << " (" << weight_bytes
            << " bytes)\nops:\n";
  for (auto& [op, count] : hist) std::cout << "  " << op << " " << count << "\n";
  auto bad = find_unsupported(*g);
  if (bad.empty()) {
    std::cout << "all nodes are supported\n";
  } else {
    std::cout << bad.size() << " unsupported nodes:\n";
    for (auto& u : bad)
      std::cout << "  " << u.op_type << " '" << u.node << "': " << u.reason << "\n";
  }
  if (a.graph) std::cout << "\n" << graph_to_text(*g);
  return 0;
}

}  // namespace

Action add_info(CLI::App& app) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* c =
      app.add_subcommand("info", "Describe a model: inputs, outputs, opsets, op histogram");
  c->add_option("model", a->model, "ONNX model file")->required();
  c->add_flag("--graph", a->graph, "Also print the whole graph as text");
  return [a] { return info(*a); };
}

}  // namespace nnfuse::cli
