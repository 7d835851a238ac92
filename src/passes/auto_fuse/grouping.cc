#include "passes/auto_fuse/grouping.h"

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "passes/auto_fuse/op_class.h"

namespace nnfuse {

namespace {

// The distinct nodes using any output of `n`.
std::vector<Node*> consumers(const Node& n) {
  std::vector<Node*> r;
  for (const Value* v : n.outputs()) {
    if (!v) continue;
    for (const Use& u : v->uses()) {
      if (std::find(r.begin(), r.end(), u.node) == r.end()) r.push_back(u.node);
    }
  }
  return r;
}

bool has_graph_output(const Node& n) {
  for (const Value* v : n.outputs()) {
    if (v && v->is_graph_output()) return true;
  }
  return false;
}

std::vector<Value*> root_outputs(const Node& root) {
  std::vector<Value*> r;
  for (Value* v : root.outputs()) {
    if (v && (!v->uses().empty() || v->is_graph_output())) r.push_back(v);
  }
  return r;
}

// Values used by `nodes` and produced by none of them, in order of first use.
std::vector<Value*> inputs_of(const std::vector<Node*>& nodes) {
  std::unordered_set<const Node*> in(nodes.begin(), nodes.end());
  std::vector<Value*> r;
  for (const Node* n : nodes) {
    for (Value* v : n->inputs()) {
      if (!v || (v->producer() && in.count(v->producer()))) continue;
      if (std::find(r.begin(), r.end(), v) == r.end()) r.push_back(v);
    }
  }
  return r;
}

bool is_reduction(const Node& n) { return ops::op_class(n) == OpClass::kReduction; }

class Grower {
 public:
  Grower(const Graph& g, const GroupingOptions& o) : opts_(o), nodes_(g.nodes()) {
    const int64_t opset = g.opset("");
    for (size_t i = 0; i < nodes_.size(); ++i) {
      index_[nodes_[i]] = static_cast<int>(i);
      candidate_.push_back(region_member_candidate(*nodes_[i], opset) &&
                           (!o.accept || o.accept(*nodes_[i])));
    }
    taken_.assign(nodes_.size(), false);
  }

  std::vector<Region> run() {
    std::vector<Region> r;
    if (opts_.max_ops < 2) return r;
    for (int i = static_cast<int>(nodes_.size()) - 1; i >= 0; --i) {
      if (!candidate_[i] || taken_[i]) continue;
      std::vector<int> members = grow(i);
      if (members.size() < 2) continue;
      std::sort(members.begin(), members.end());
      Region reg;
      for (int m : members) {
        reg.nodes.push_back(nodes_[m]);
        reg.reductions += is_reduction(*nodes_[m]);
      }
      reg.inputs = inputs_of(reg.nodes);
      reg.outputs = root_outputs(*nodes_[i]);
      r.push_back(std::move(reg));
    }
    std::reverse(r.begin(), r.end());
    return r;
  }

 private:
  // The members of the region rooted at node `root` (marked taken).
  std::vector<int> grow(int root) {
    taken_[root] = true;
    Node* rn = nodes_[root];
    const bool root_red = is_reduction(*rn);
    std::vector<int> members{root};
    std::unordered_set<const Value*> ins;  // the inputs that count against max_inputs
    auto counts = [&](const Value* v) { return v && !(opts_.free_input && opts_.free_input(*v)); };
    for (const Value* v : rn->inputs()) {
      if (counts(v)) ins.insert(v);
    }
    if (static_cast<int>(ins.size()) > opts_.max_inputs || (root_red && opts_.max_reductions < 1)) {
      return members;
    }
    int reductions = root_red;
    std::unordered_set<const Node*> in{rn};
    // The reductions of the region each member feeds (has a path to inside the region).
    std::unordered_map<const Node*, std::vector<const Node*>> feeds;
    std::priority_queue<int> queue;
    std::unordered_set<int> queued;
    auto push_producers = [&](const Node* n) {
      for (const Value* v : n->inputs()) {
        if (!v || !v->producer()) continue;
        int p = index_.at(v->producer());
        if (queued.insert(p).second) queue.push(p);
      }
    };
    push_producers(rn);
    while (!queue.empty()) {
      const int p = queue.top();
      queue.pop();
      Node* pn = nodes_[p];
      if (taken_[p] || !candidate_[p] || has_graph_output(*pn)) continue;
      if (static_cast<int>(members.size()) >= opts_.max_ops) break;
      const std::vector<Node*> cons = consumers(*pn);
      if (cons.empty() ||
          !std::all_of(cons.begin(), cons.end(), [&](const Node* c) { return in.count(c); })) {
        continue;
      }
      const bool red = is_reduction(*pn);
      if (red && reductions + 1 > opts_.max_reductions) continue;
      // Precision guard: every consumer must feed each reduction this producer feeds.
      std::vector<const Node*> pf;
      for (const Node* c : cons) {
        const std::vector<const Node*>& cf = feeds[c];
        for (const Node* x : cf) {
          if (std::find(pf.begin(), pf.end(), x) == pf.end()) pf.push_back(x);
        }
        if (is_reduction(*c) && std::find(pf.begin(), pf.end(), c) == pf.end()) pf.push_back(c);
      }
      bool duplicates = false;
      for (const Node* x : pf) {
        for (const Node* c : cons) {
          const std::vector<const Node*>& cf = feeds[c];
          if (c != x && std::find(cf.begin(), cf.end(), x) == cf.end()) duplicates = true;
        }
      }
      if (duplicates) continue;
      // Inputs once p joins: its outputs stop being inputs, its own inputs become ones.
      int count = static_cast<int>(ins.size());
      for (const Value* v : pn->outputs()) count -= v && ins.count(v);
      std::unordered_set<const Value*> fresh;
      for (const Value* v : pn->inputs()) {
        if (counts(v) && !ins.count(v)) fresh.insert(v);
      }
      count += static_cast<int>(fresh.size());
      if (count > opts_.max_inputs) continue;
      for (const Value* v : pn->outputs()) {
        if (v) ins.erase(v);
      }
      ins.insert(fresh.begin(), fresh.end());
      taken_[p] = true;
      in.insert(pn);
      members.push_back(p);
      feeds[pn] = std::move(pf);
      reductions += red;
      push_producers(pn);
    }
    return members;
  }

  const GroupingOptions& opts_;
  std::vector<Node*> nodes_;
  std::unordered_map<const Node*, int> index_;
  std::vector<bool> candidate_, taken_;
};

}  // namespace

bool region_member_candidate(const Node& node, int64_t opset) {
  switch (ops::op_class(node)) {
    case OpClass::kElementwise:
    case OpClass::kBroadcast:
    case OpClass::kInjective:
      return true;
    case OpClass::kReduction:
      return is_last_axis_reduction(node, opset);
    default:
      return false;
  }
}

std::vector<Region> find_regions(const Graph& g, const GroupingOptions& options) {
  return Grower(g, options).run();
}

std::string region_violation(const Graph& g, const Region& r, const GroupingOptions& options) {
  const std::vector<Node*> all = g.nodes();
  std::unordered_map<const Node*, int> index;
  for (size_t i = 0; i < all.size(); ++i) index[all[i]] = static_cast<int>(i);
  if (r.nodes.size() < 2) return "fewer than 2 nodes";
  if (static_cast<int>(r.nodes.size()) > options.max_ops) return "more than max_ops nodes";
  std::unordered_set<const Node*> in;
  int reductions = 0, last = -1;
  for (const Node* n : r.nodes) {
    auto it = index.find(n);
    if (it == index.end()) return "a node is not in the graph";
    if (it->second <= last) return "nodes not in topological order (or repeated)";
    last = it->second;
    if (!region_member_candidate(*n, g.opset("")) || (options.accept && !options.accept(*n))) {
      return n->describe() + " cannot be a member";
    }
    in.insert(n);
    reductions += is_reduction(*n);
  }
  if (reductions != r.reductions) return "wrong reduction count";
  if (reductions > options.max_reductions) return "more than max_reductions reductions";
  const Node* root = r.nodes.back();
  for (const Node* n : r.nodes) {
    if (n == root) continue;
    if (has_graph_output(*n)) return n->describe() + " produces a graph output";
    const std::vector<Node*> cons = consumers(*n);
    if (cons.empty()) return n->describe() + " does not reach the root";
    for (const Node* c : cons) {
      if (!in.count(c)) return n->describe() + " is used outside the region by " + c->describe();
    }
  }
  if (r.inputs != inputs_of(r.nodes)) return "wrong inputs";
  const auto counted = std::count_if(r.inputs.begin(), r.inputs.end(), [&](const Value* v) {
    return !(options.free_input && options.free_input(*v));
  });
  if (counted > options.max_inputs) return "more than max_inputs inputs";
  if (r.outputs != root_outputs(*root)) return "wrong outputs";
  // Precision guard: the members upstream of a reduction are used only upstream of it.
  for (const Node* red : r.nodes) {
    if (!is_reduction(*red)) continue;
    std::unordered_set<const Node*> up;
    for (auto it = r.nodes.rbegin(); it != r.nodes.rend(); ++it) {
      const Node* n = *it;
      if (n == red) continue;
      for (const Node* c : consumers(*n)) {
        if (c == red || up.count(c)) up.insert(n);
      }
    }
    for (const Node* n : up) {
      for (const Node* c : consumers(*n)) {
        if (c != red && !up.count(c)) {
          return n->describe() + " feeds " + red->describe() + " and is used after it by " +
                 c->describe();
        }
      }
    }
  }
  return "";
}

}  // namespace nnfuse
