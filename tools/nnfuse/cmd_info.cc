// nnfuse info MODEL.onnx [--graph] [--shape NAME=dims]: inputs, outputs, opsets, op
// histogram, support, and which values have no static shape once shapes are folded.
#include <iostream>

#include "onnx/importer.h"
#include "runtime/session.h"
#include "shape/shape_inference.h"
#include "tools/nnfuse/commands.h"

namespace nnfuse::cli {

namespace {

struct InfoArgs {
  std::string model;
  bool graph = false;
  FusionFlags flags;  // --shape only
};

// What shape folding and inference leave without a static shape, and where each loss began.
void print_shape_coverage(Graph& g) {
  const shape::SweepStats st = shape::infer_and_fold(g);
  const shape::ShapeCoverage c = shape::shape_coverage(g);
  std::cout << "static shapes: " << c.values - c.unknown << " of " << c.values << " values"
            << " (after folding " << st.folded << " node" << (st.folded == 1 ? "" : "s")
            << " of shape arithmetic and constants)\n";
  if (c.unknown == 0) return;
  size_t from_inputs = c.unknown;
  for (const auto& l : c.lost) from_inputs -= 1 + l.downstream;
  if (from_inputs > 0) {
    std::cout << "  " << from_inputs << " values are dynamic because an input is (give --shape)\n";
  }
  if (c.lost.empty()) return;
  std::cout << "  shapes lost at " << c.lost.size() << " node" << (c.lost.size() == 1 ? "" : "s")
            << " whose inputs are all static:\n";
  constexpr size_t kShown = 20;
  for (size_t i = 0; i < c.lost.size() && i < kShown; ++i) {
    const shape::LostShape& l = c.lost[i];
    std::cout << "    " << l.node->describe() << ": output '" << l.value << "' is "
              << dtype_name(g.find_value(l.value)->dtype()) << l.shape;
    if (l.downstream) std::cout << ", and " << l.downstream << " values after it";
    if (!l.bound.empty()) std::cout << "; " << l.bound;
    std::cout << "\n";
  }
  if (c.lost.size() > kShown) std::cout << "    ... and " << c.lost.size() - kShown << " more\n";
}

int info(const InfoArgs& a) {
  auto g = load_onnx(a.model, import_options(a.flags));
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
  print_shape_coverage(*g);
  if (a.graph) std::cout << "\n" << graph_to_text(*g);
  return 0;
}

}  // namespace

Action add_info(CLI::App& app) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* c =
      app.add_subcommand("info", "Describe a model: inputs, outputs, opsets, op histogram");
  c->add_option("model", a->model, "ONNX model file")->required();
  c->add_flag("--graph", a->graph,
              "Also print the whole graph as text (shape arithmetic folded, shapes inferred)");
  add_shape_flag(c, a->flags);
  return [a] { return info(*a); };
}

}  // namespace nnfuse::cli
