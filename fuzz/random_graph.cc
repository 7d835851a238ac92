#include "random_graph.h"

#include "random_graph_gen.h"

namespace nnfuse::fuzz {

std::unique_ptr<Graph> random_graph(const Chooser& choose, const RandomGraphOptions& opts) {
  try {
    return detail::Gen(choose, opts).build();
  } catch (const detail::Rejected&) {
    return nullptr;
  } catch (const Error&) {
    return nullptr;
  }
}

std::string describe_graph(const Graph& g) {
  std::string out;
  for (const Node* n : g.nodes()) {
    if (!out.empty()) out += ' ';
    out += n->op_type();
  }
  return out;
}

}  // namespace nnfuse::fuzz
