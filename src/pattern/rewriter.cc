// The guards every fusion rewrite passes, and the replacement itself.
#include "pattern/rewriter.h"

#include <deque>
#include <map>
#include <set>
#include <utility>

#include "ir/error.h"
#include "pattern/pattern_internal.h"

namespace nnfuse::pattern {

namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// A path that leaves the set and comes back, as a reason; "" when there is none.
std::string find_cycle(const std::set<const Node*>& in_set) {
  // Breadth-first over nodes outside the set reachable from the set's outputs, remembering
  // for each the set value the path left by.
  std::map<const Node*, const Value*> seen;
  std::deque<const Node*> queue;
  for (const Node* n : in_set) {
    for (const Value* o : n->outputs()) {
      if (!o) continue;
      for (const Use& u : o->uses()) {
        if (!in_set.count(u.node) && seen.emplace(u.node, o).second) queue.push_back(u.node);
      }
    }
  }
  while (!queue.empty()) {
    const Node* x = queue.front();
    queue.pop_front();
    for (const Value* o : x->outputs()) {
      if (!o) continue;
      for (const Use& u : o->uses()) {
        if (in_set.count(u.node)) {
          return "fusing would create a cycle: " + quoted(seen[x]->name()) +
                 " leaves the set and reaches " + x->describe() + ", whose output " +
                 quoted(o->name()) + " flows back into " + u.node->describe();
        }
        if (seen.emplace(u.node, seen[x]).second) queue.push_back(u.node);
      }
    }
  }
  return "";
}

// The names the fused node stands for: original names, looking through earlier fusions.
std::vector<std::string> provenance(const std::vector<Node*>& ordered) {
  std::vector<std::string> names;
  for (const Node* n : ordered) {
    if (n->fused_from().empty()) {
      names.push_back(n->name());
    } else {
      names.insert(names.end(), n->fused_from().begin(), n->fused_from().end());
    }
  }
  return names;
}

}  // namespace

std::string check_replaceable(const Graph& g, const std::vector<Node*>& nodes,
                              const std::vector<Value*>& outputs) {
  if (nodes.empty()) return "no nodes to replace";
  std::set<const Node*> in_graph;
  for (const Node* n : g.nodes()) in_graph.insert(n);
  std::set<const Node*> in_set;
  for (const Node* n : nodes) {
    if (!n) return "a null node in the set to replace";
    if (!in_graph.count(n)) return n->describe() + " is not in the graph";
    in_set.insert(n);
  }
  std::set<const Value*> kept;
  for (const Value* v : outputs) {
    if (!v) return "a null value among the fused node's outputs";
    if (!v->producer() || !in_set.count(v->producer())) {
      return "output " + quoted(v->name()) + " is not produced by the nodes being replaced";
    }
    if (!kept.insert(v).second) return "output " + quoted(v->name()) + " is listed twice";
  }
  for (const Node* n : nodes) {
    for (const Value* o : n->outputs()) {
      if (!o || kept.count(o)) continue;
      if (o->is_graph_output()) {
        return "intermediate " + quoted(o->name()) + " of " + n->describe() + " is a graph output";
      }
      for (const Use& u : o->uses()) {
        if (!in_set.count(u.node)) {
          return "intermediate " + quoted(o->name()) + " is also used by " + u.node->describe();
        }
      }
    }
  }
  return find_cycle(in_set);
}

Node* replace_with(Graph& g, const std::vector<Node*>& nodes, const std::string& op_type,
                   const std::string& domain, const std::vector<Value*>& inputs,
                   const std::vector<Value*>& outputs,
                   const std::map<std::string, Attribute>& attrs, const std::string& pass) {
  if (std::string why = check_replaceable(g, nodes, outputs); !why.empty()) {
    fail(ErrorKind::kInternal, pass, ": cannot replace the matched nodes: ", why);
  }
  if (outputs.empty()) fail(ErrorKind::kInternal, pass, ": a fused node needs an output");
  std::set<const Node*> in_set(nodes.begin(), nodes.end());
  for (const Value* v : inputs) {
    if (v && v->producer() && in_set.count(v->producer())) {
      fail(ErrorKind::kInternal, pass, ": input ", quoted(v->name()), " of the fused ", op_type,
           " is produced by ", v->producer()->describe(), ", which it replaces");
    }
  }

  // The set in graph order; names of the nodes that stay.
  std::vector<Node*> ordered;
  std::set<std::string> taken;
  for (Node* n : g.nodes()) {
    if (in_set.count(n)) {
      ordered.push_back(n);
    } else {
      taken.insert(n->name());
    }
  }
  std::string stem = ordered.back()->name();
  if (stem.empty()) stem = op_type;
  std::string name = stem;
  for (int i = 1; taken.count(name); ++i) name = stem + "_" + std::to_string(i);
  std::vector<std::string> from = provenance(ordered);

  // Constant nodes feeding the set may be left without uses; they go too.
  std::set<Node*> feeders;
  for (const Node* n : ordered) {
    for (const Value* v : n->inputs()) {
      Node* p = v ? v->producer() : nullptr;
      if (p && !in_set.count(p) && p->op_type() == "Constant" && is_default_domain(p->domain())) {
        feeders.insert(p);
      }
    }
  }

  // Old producers first: add_node refuses values that still have one.
  for (Node* n : ordered) g.remove_node(n);
  Node* fused = g.add_node(op_type, name, inputs, outputs, domain);
  for (const auto& [k, a] : attrs) fused->set_attr(k, a);
  fused->set_provenance(std::move(from), pass);

  for (Node* c : feeders) {
    bool used = false;
    for (const Value* o : c->outputs()) used |= o && (!o->uses().empty() || o->is_graph_output());
    if (!used) g.remove_node(c);
  }
  g.remove_dead_values();
  g.topological_sort();
#ifndef NDEBUG
  verify_graph(g);
#endif
  return fused;
}

Value* add_constant(Graph& g, const std::string& stem, Tensor t) {
  Value* v = g.add_value(g.unique_value_name(stem.empty() ? "const" : stem));
  v->set_constant(std::move(t));
  return v;
}

}  // namespace nnfuse::pattern
