#include <set>

#include "ir/error.h"
#include "ir/graph.h"

namespace nnfuse {

namespace {
[[noreturn]] void broken(const std::string& what) {
  fail(ErrorKind::kInternal, "graph verifier: ", what);
}
}  // namespace

void verify_graph(const Graph& g) {
  std::set<const Value*> available;
  std::set<std::string> names;
  for (const Value* v : g.values()) {
    if (!names.insert(v->name()).second) broken("value name '" + v->name() + "' is not unique");
    if (v->is_constant() || v->is_graph_input()) available.insert(v);
    if (v->is_constant() && v->producer()) broken("constant '" + v->name() + "' has a producer");
    for (const Use& u : v->uses()) {
      if (u.node->input(static_cast<size_t>(u.input_index)) != v) {
        broken("use list of '" + v->name() + "' names " + u.node->describe() + " input " +
               std::to_string(u.input_index) + ", which is another value");
      }
    }
  }
  for (const Value* v : g.inputs()) {
    if (!v->is_graph_input()) broken("graph input '" + v->name() + "' is not marked as input");
    if (v->producer()) broken("graph input '" + v->name() + "' has a producer");
  }
  std::set<std::string> node_names;
  for (const Node* n : g.nodes()) {
    if (!n->name().empty() && !node_names.insert(n->name()).second) {
      broken("node name '" + n->name() + "' is not unique");
    }
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const Value* v = n->input(i);
      if (!v) continue;
      if (!available.count(v)) {
        broken(n->describe() + " reads '" + v->name() + "' before it is produced");
      }
      bool listed = false;
      for (const Use& u : v->uses()) listed |= u.node == n && u.input_index == static_cast<int>(i);
      if (!listed) broken("'" + v->name() + "' does not list its use by " + n->describe());
    }
    for (const Value* o : n->outputs()) {
      if (!o) continue;
      if (o->producer() != n)
        broken("output '" + o->name() + "' of " + n->describe() + " names another producer");
      if (!available.insert(o).second) broken("'" + o->name() + "' is produced twice");
    }
  }
  for (const Value* v : g.outputs()) {
    if (!available.count(v)) broken("graph output '" + v->name() + "' is never produced");
    if (!v->is_graph_output()) broken("graph output '" + v->name() + "' is not marked as output");
  }
}

}  // namespace nnfuse
