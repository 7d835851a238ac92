// The guards every fusion rewrite passes, and the replacement itself.
#include "pattern/rewriter.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "ir/error.h"
#include "pattern/pattern_internal.h"

namespace nnfuse::pattern {

namespace {

std::string quote(const std::string& s) { return "'" + s + "'"; }

// A path that leaves the set and comes back, as a reason; "" when there is none.
std::string find_cycle(const Graph& g, const std::set<const Node*>& in_set) {
  // Breadth-first over nodes outside the set reachable from the set's outputs, remembering
  // for each the set value the path left by. In a sorted graph a path back into the set only
  // passes nodes placed before the set's last node, so the search stops there: its cost is
  // the span of the set, not the rest of the graph.
  size_t last = SIZE_MAX;
  if (g.is_sorted()) {
    last = 0;
    for (const Node* n : in_set) last = std::max(last, n->position());
  }
  std::unordered_map<const Node*, const Value*> seen;
  std::deque<const Node*> queue;
  auto visit = [&](const Node* n, const Value* via) {
    if (n->position() < last && seen.emplace(n, via).second) queue.push_back(n);
  };
  for (const Node* n : in_set) {
    for (const Value* o : n->outputs()) {
      if (!o) continue;
      for (const Use& u : o->uses()) {
        if (!in_set.count(u.node)) visit(u.node, o);
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
          return "fusing would create a cycle: " + quote(seen[x]->name()) +
                 " leaves the set and reaches " + x->describe() + ", whose output " +
                 quote(o->name()) + " flows back into " + u.node->describe();
        }
        visit(u.node, seen[x]);
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
  std::set<const Node*> in_set;
  for (const Node* n : nodes) {
    if (!n) return "a null node in the set to replace";
    if (!g.contains(n)) return n->describe() + " is not in the graph";
    in_set.insert(n);
  }
  std::set<const Value*> kept;
  for (const Value* v : outputs) {
    if (!v) return "a null value among the fused node's outputs";
    if (!v->producer() || !in_set.count(v->producer())) {
      return "output " + quote(v->name()) + " is not produced by the nodes being replaced";
    }
    if (!kept.insert(v).second) return "output " + quote(v->name()) + " is listed twice";
  }
  for (const Node* n : nodes) {
    for (const Value* o : n->outputs()) {
      if (!o || kept.count(o)) continue;
      if (o->is_graph_output()) {
        return "intermediate " + quote(o->name()) + " of " + n->describe() + " is a graph output";
      }
      for (const Use& u : o->uses()) {
        if (!in_set.count(u.node)) {
          return "intermediate " + quote(o->name()) + " is also used by " + u.node->describe();
        }
      }
    }
  }
  return find_cycle(g, in_set);
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
      fail(ErrorKind::kInternal, pass, ": input ", quote(v->name()), " of the fused ", op_type,
           " is produced by ", v->producer()->describe(), ", which it replaces");
    }
  }

  // The set in graph order.
  std::vector<Node*> ordered(in_set.size());
  std::transform(in_set.begin(), in_set.end(), ordered.begin(),
                 [](const Node* n) { return const_cast<Node*>(n); });
  g.ensure_sorted();
  std::sort(ordered.begin(), ordered.end(),
            [](const Node* a, const Node* b) { return a->position() < b->position(); });
  std::vector<std::string> from = provenance(ordered);

  // Constant nodes feeding the set may be left without uses; they go too.
  std::set<Node*> feeders;
  for (const Node* n : ordered) {
    for (const Value* v : n->inputs()) {
      Node* p = v ? v->producer() : nullptr;
      if (p && !in_set.count(p) && p->is(Op::kConstant)) {
        feeders.insert(p);
      }
    }
  }

  // Values the removed nodes read or wrote may be left dead.
  std::vector<Value*> touched;
  for (const Node* n : ordered) {
    touched.insert(touched.end(), n->inputs().begin(), n->inputs().end());
    touched.insert(touched.end(), n->outputs().begin(), n->outputs().end());
  }

  // Old producers first: add_node refuses values that still have one. The fused node takes
  // the last node's place in the order (its inputs are all produced before that node); the
  // name is taken once the old nodes are gone, so the fused node may keep the last one's.
  Node* last = ordered.back();
  const std::string stem = last->name().empty() ? op_type : last->name();
  for (Node* n : ordered) {
    if (n != last) g.remove_node(n);
  }
  Node* fused = g.replace_node(last, op_type, "", inputs, outputs, domain);
  g.rename_node(fused, g.unique_node_name(stem));
  for (const auto& [k, a] : attrs) fused->set_attr(k, a);
  fused->set_provenance(std::move(from), pass);

  for (Node* c : feeders) {
    bool used = false;
    for (const Value* o : c->outputs()) used |= o && (!o->uses().empty() || o->is_graph_output());
    if (!used) {
      touched.insert(touched.end(), c->outputs().begin(), c->outputs().end());
      g.remove_node(c);
    }
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (Value* v : touched) g.remove_if_dead(v);
  g.ensure_sorted();
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
