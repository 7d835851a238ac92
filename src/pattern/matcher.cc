// The matcher: a backtracking walk of the pattern DAG against the graph. Each step takes a
// continuation (the rest of the match), so a choice made early (an operand order of a
// commutative op, an alternative of any_of, how many pass-through nodes to skip) is undone
// and retried when something later fails, not only when the choice itself fails.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/error.h"
#include "pattern/pattern.h"
#include "pattern/pattern_internal.h"

namespace nnfuse::pattern {

namespace {

// A non-owning reference to a callable returning bool: the rest of the match. Only ever
// bound to a named lambda that outlives the call it is passed to.
class Cont {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, Cont>)
      Cont(const F& f)  // NOLINT(google-explicit-constructor)
      : obj_(&f), call_([](const void* o) { return (*static_cast<const F*>(o))(); }) {}
  bool operator()() const { return call_(obj_); }

 private:
  const void* obj_;
  bool (*call_)(const void*);
};

// A map of few entries as a vector searched in order: a match binds a few dozen pattern nodes
// at most, and the matcher binds and undoes them far more often than the result is read, so
// this saves the tree's allocation per binding.
template <typename K, typename V>
class SmallMap {
 public:
  using Entry = std::pair<K, V>;
  using iterator = typename std::vector<Entry>::iterator;
  iterator end() { return e_.end(); }
  iterator find(const K& k) {
    return std::find_if(e_.begin(), e_.end(), [&](const Entry& x) { return x.first == k; });
  }
  // The caller knows `k` is not bound yet.
  void add(const K& k, V v) { e_.emplace_back(k, std::move(v)); }
  void erase(const K& k) {
    auto it = find(k);
    if (it != e_.end()) e_.erase(it);
  }
  std::map<K, V> to_map() const { return std::map<K, V>(e_.begin(), e_.end()); }

 private:
  std::vector<Entry> e_;
};

// Where a value was met: input `index` of `consumer`, or (consumer == nullptr) an output of
// the root node the match started at.
struct Site {
  const Node* consumer = nullptr;
  size_t index = 0;
  const Node* root = nullptr;
};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string node_label(const Node* n) {
  return n->name().empty() ? "unnamed " + n->op_type() + " node" : "node " + quoted(n->name());
}

std::string place(const Site& s, const Value* v) {
  std::string vn = v ? quoted(v->name()) : "(none)";
  if (s.consumer) {
    return node_label(s.consumer) + ": input " + std::to_string(s.index) + " (" + vn + ")";
  }
  return node_label(s.root) + ": output " + vn;
}

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", x);
  return buf;
}

size_t used_inputs(const Node* n) {
  size_t count = n->num_inputs();
  while (count > 0 && !n->input(count - 1)) --count;
  return count;
}

}  // namespace

class Matcher {
 public:
  explicit Matcher(bool want_why) : want_why_(want_why) {}

  // Tries `root` at the outputs of `n`. `order` gives node positions for sorting the result;
  // when null they are taken from `g`, on success only.
  std::optional<Match> run(const Graph& g, const PatNode* root, Node* n,
                           const std::map<const Node*, size_t>* order) {
    std::vector<Value*> candidates;
    if (root->kind == PatNode::Kind::kOp) {
      Value* v = n->output(static_cast<size_t>(root->output));
      if (!v) {
        reject([&] {
          return node_label(n) + " has no output " + std::to_string(root->output) +
                 " (the pattern's value)";
        });
      } else {
        candidates.push_back(v);
      }
    } else {
      for (Value* v : n->outputs()) {
        if (v) candidates.push_back(v);
      }
    }
    for (Value* v : candidates) {
      st_ = State{};
      Site site{nullptr, 0, n};
      auto done = [] { return true; };
      if (match(root, v, site, done)) return result(g, n, order);
    }
    return std::nullopt;
  }

  std::string why() const { return why_.empty() ? "the pattern does not match" : why_; }

 private:
  struct State {
    SmallMap<const PatNode*, Value*> values;
    SmallMap<const PatNode*, Node*> producers;
    std::map<std::string, Value*> by_name;
    std::map<std::string, const PatNode*> names;
    std::map<const PatNode*, NativeResult> natives;
    std::map<const PatNode*, std::vector<Match>> repeats;
    std::vector<Node*> nodes;  // op, pass-through, native and tree nodes, in match order
    int steps = 0;             // progress, to pick the deepest failure
    // What was bound since the start, in order, so a choice point undoes its branch by erasing
    // the keys added after its mark instead of copying the maps.
    std::vector<const PatNode*> bound;  // keys of values (and producers, natives, repeats)
    std::vector<std::string> named;     // keys of by_name (and names)
  };

  struct Mark {
    size_t bound = 0, named = 0, nodes = 0;
    int steps = 0;
  };

  Mark mark() const { return {st_.bound.size(), st_.named.size(), st_.nodes.size(), st_.steps}; }

  void undo(const Mark& m) {
    for (size_t i = m.bound; i < st_.bound.size(); ++i) {
      const PatNode* k = st_.bound[i];
      st_.values.erase(k);
      st_.producers.erase(k);
      st_.natives.erase(k);
      st_.repeats.erase(k);
    }
    st_.bound.resize(m.bound);
    for (size_t i = m.named; i < st_.named.size(); ++i) {
      st_.by_name.erase(st_.named[i]);
      st_.names.erase(st_.named[i]);
    }
    st_.named.resize(m.named);
    st_.nodes.resize(m.nodes);
    st_.steps = m.steps;
  }

  template <typename F>
  bool reject(F&& msg) {
    if (want_why_ && st_.steps > best_) {
      best_ = st_.steps;
      why_ = msg();
    }
    return false;
  }

  Match result(const Graph& g, Node* root, const std::map<const Node*, size_t>* order) {
    Match m;
    m.values_ = st_.values.to_map();
    m.producers_ = st_.producers.to_map();
    m.names_ = st_.names;
    m.natives_ = st_.natives;
    m.repeats_ = st_.repeats;
    m.root_ = root;
    if (order) {
      std::vector<Node*> nodes = st_.nodes;
      auto pos = [&](const Node* n) {
        auto it = order->find(n);
        return it == order->end() ? order->size() : it->second;
      };
      std::stable_sort(nodes.begin(), nodes.end(),
                       [&](const Node* a, const Node* b) { return pos(a) < pos(b); });
      nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
      m.nodes_ = std::move(nodes);
    } else {
      // In graph order: a node's position is its slot, and the slots are in topological order.
      for (Node* n : st_.nodes) {
        if (g.contains(n)) m.nodes_.push_back(n);
      }
      std::sort(m.nodes_.begin(), m.nodes_.end(),
                [](const Node* a, const Node* b) { return a->position() < b->position(); });
      m.nodes_.erase(std::unique(m.nodes_.begin(), m.nodes_.end()), m.nodes_.end());
    }
    return m;
  }

  static std::string pattern_label(const PatNode* p) {
    return p->name.empty() ? "this pattern node" : "pattern " + quoted(p->name);
  }

  // Constraints of `p` on the value and on `node` (the value's producer, or the matched op).
  bool checks(const PatNode* p, Value* v, const Node* node, const Site& s) {
    for (const ValueCheck& c : p->value_checks) {
      std::string error;
      bool ok = false;
      try {
        ok = c.pred(*v);
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (!ok) {
        return reject([&] {
          std::string r = place(s, v) + " fails the check " + quoted(c.why);
          if (!error.empty()) return r + " (" + error + ")";
          if (c.detail) r += " (" + c.detail(*v) + ")";
          return r;
        });
      }
    }
    for (const NodeCheck& c : p->node_checks) {
      if (!node) {
        return reject(
            [&] { return place(s, v) + " has no producing node for the check " + quoted(c.why); });
      }
      std::string error;
      bool ok = false;
      try {
        ok = c.pred(*node);
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (!ok) {
        return reject([&] {
          std::string r = node->describe() + " fails the check " + quoted(c.why);
          return error.empty() ? r : r + " (" + error + ")";
        });
      }
    }
    return true;
  }

  bool bind(const PatNode* p, Value* v, Node* producer, const Site& s) {
    if (!p->name.empty()) {
      auto it = st_.by_name.find(p->name);
      if (it != st_.by_name.end() && it->second != v) {
        return reject([&] {
          return place(s, v) + " differs from " + quoted(it->second->name()) +
                 ", already bound to " + pattern_label(p);
        });
      }
      if (it == st_.by_name.end()) {
        st_.by_name.emplace(p->name, v);
        st_.names.emplace(p->name, p->identity());
        st_.named.push_back(p->name);
      }
    }
    // Only a pattern node not yet bound gets here (match() checks first), so each key is new.
    st_.values.add(p->identity(), v);
    if (producer) st_.producers.add(p->identity(), producer);
    st_.bound.push_back(p->identity());
    ++st_.steps;
    return true;
  }

  bool match(const PatNode* p, Value* v, const Site& s, Cont k) {
    if (!p) fail(ErrorKind::kInternal, "pattern: empty pattern node");
    if (p->kind == PatNode::Kind::kOptional) return v ? match(p->inputs[0].get(), v, s, k) : k();
    if (!v) return reject([&] { return place(s, v) + " is omitted"; });
    auto bound = st_.values.find(p->identity());
    if (bound != st_.values.end()) {
      // A DAG pattern met again: it must be the same value.
      if (bound->second != v) {
        return reject([&] {
          return place(s, v) + " differs from " + quoted(bound->second->name()) +
                 ", already bound to " + pattern_label(p);
        });
      }
      auto prod = st_.producers.find(p->identity());
      const Node* node = prod != st_.producers.end() ? prod->second : v->producer();
      return checks(p, v, node, s) && k();
    }
    switch (p->kind) {
      case PatNode::Kind::kAny:
        return checks(p, v, v->producer(), s) && bind(p, v, nullptr, s) && k();
      case PatNode::Kind::kConstant:
        if (!constant_value(v)) {
          return reject([&] { return place(s, v) + " is not a compile-time constant"; });
        }
        return checks(p, v, v->producer(), s) && bind(p, v, nullptr, s) && k();
      case PatNode::Kind::kScalar:
        return match_scalar(p, v, s) && checks(p, v, v->producer(), s) && bind(p, v, nullptr, s) &&
               k();
      case PatNode::Kind::kOp:
        return match_op(p, v, s, k);
      case PatNode::Kind::kAnyOf: {
        if (!checks(p, v, v->producer(), s) || !bind(p, v, nullptr, s)) return false;
        for (const Pat& alt : p->inputs) {
          const Mark saved = mark();
          if (match(alt.get(), v, s, k)) return true;
          undo(saved);
        }
        return false;
      }
      case PatNode::Kind::kThrough:
        if (!checks(p, v, v->producer(), s) || !bind(p, v, nullptr, s)) return false;
        return walk(p, v, s, k);
      case PatNode::Kind::kNative:
        return match_native(p, v, s, k);
      case PatNode::Kind::kOptional:
        return false;  // handled above
      case PatNode::Kind::kTree: {
        if (!checks(p, v, v->producer(), s) || !bind(p, v, nullptr, s)) return false;
        std::vector<Match> leaves;
        return match_tree(p, v, s, leaves) && (st_.repeats[p->identity()] = std::move(leaves), k());
      }
    }
    return false;
  }

  bool match_scalar(const PatNode* p, Value* v, const Site& s) {
    auto want = [&] { return " is not the constant " + number(p->value); };
    const Tensor* t = constant_value(v);
    if (!t) return reject([&] { return place(s, v) + want() + " (not a compile-time constant)"; });
    if (t->numel() == 0) return reject([&] { return place(s, v) + want() + " (it is empty)"; });
    const double limit = static_cast<double>(p->tol) * std::max(1.0, std::fabs(double{p->value}));
    for (int64_t i = 0; i < t->numel(); ++i) {
      std::optional<double> e = element(*t, i);
      if (!e) {
        return reject([&] {
          return place(s, v) + want() + " (it holds " + dtype_name(t->dtype()) + " elements)";
        });
      }
      if (!(std::fabs(*e - double{p->value}) <= limit)) {
        return reject([&] {
          std::string at = t->numel() > 1 ? " at element " + std::to_string(i) : "";
          return place(s, v) + want() + " (it holds " + number(*e) + at + ")";
        });
      }
    }
    return true;
  }

  bool match_op(const PatNode* p, Value* v, const Site& s, Cont k) {
    Node* n = v->producer();
    if (!n) {
      return reject([&] {
        const char* what = v->is_graph_input() ? "a graph input"
                           : v->is_constant()  ? "an initializer"
                                               : "not produced by any node";
        return place(s, v) + " is " + what + ", not the output of " + p->op_type;
      });
    }
    if (!n->is(p->op)) {
      return reject([&] {
        std::string got = n->op_type();
        if (!is_default_domain(n->domain())) got += " (domain " + quoted(n->domain()) + ")";
        if (!s.consumer && n == s.root) return node_label(n) + " is " + got + ", not " + p->op_type;
        return place(s, v) + " comes from " + got + " " + quoted(n->name()) + ", not " + p->op_type;
      });
    }
    if (n->output(static_cast<size_t>(p->output)) != v) {
      return reject([&] {
        return place(s, v) + " is not output " + std::to_string(p->output) + " of " + n->describe();
      });
    }
    const size_t have = used_inputs(n);
    size_t want = p->inputs.size();  // trailing optional inputs may be missing
    while (want > 0 && p->inputs[want - 1].get()->kind == PatNode::Kind::kOptional) --want;
    if (p->exact_inputs ? have < want || have > p->inputs.size() : have < want) {
      return reject([&] {
        return node_label(n) + " has " + std::to_string(have) + " inputs, the pattern expects " +
               (p->exact_inputs ? "" : "at least ") + std::to_string(want);
      });
    }
    if (!checks(p, v, n, s) || !bind(p, v, n, s)) return false;
    st_.nodes.push_back(n);
    if (want == 2 && have == 2 && is_commutative(p->op)) {
      const Mark saved = mark();
      if (match_inputs(p, n, false, 0, k)) return true;
      undo(saved);
      return match_inputs(p, n, true, 0, k);
    }
    return match_inputs(p, n, false, 0, k);
  }

  bool match_inputs(const PatNode* p, Node* n, bool swap, size_t i, Cont k) {
    if (i == p->inputs.size()) return k();
    const size_t idx = swap && i < 2 ? 1 - i : i;
    Site site{n, idx, nullptr};
    auto next = [&] { return match_inputs(p, n, swap, i + 1, k); };
    return match(p->inputs[i].get(), idx < n->num_inputs() ? n->input(idx) : nullptr, site, next);
  }

  bool match_native(const PatNode* p, Value* v, const Site& s, Cont k) {
    NativeResult r;
    std::string why;
    try {
      why = p->native(v, r);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) return reject([&] { return place(s, v) + ": " + why; });
    if (!checks(p, v, v->producer(), s) || !bind(p, v, v->producer(), s)) return false;
    st_.nodes.insert(st_.nodes.end(), r.nodes.begin(), r.nodes.end());
    st_.natives[p->identity()] = std::move(r);
    return k();
  }

  // The tree of p->op_type nodes above `v`; each leaf matched by p's leaf pattern on its own.
  bool match_tree(const PatNode* p, Value* v, const Site& s, std::vector<Match>& leaves) {
    Node* n = v->producer();
    if (n && n->is(p->op) && n->num_inputs() == 2 && n->input(0) && n->input(1) &&
        n->output(0) == v) {
      st_.nodes.push_back(n);
      ++st_.steps;
      return match_tree(p, n->input(0), Site{n, 0, nullptr}, leaves) &&
             match_tree(p, n->input(1), Site{n, 1, nullptr}, leaves);
    }
    Matcher leaf(want_why_);
    auto done = [] { return true; };
    if (!leaf.match(p->inputs[0].get(), v, s, done)) {
      return reject([&] { return leaf.why(); });
    }
    Match m;
    m.values_ = leaf.st_.values.to_map();
    m.producers_ = leaf.st_.producers.to_map();
    m.names_ = leaf.st_.names;
    m.natives_ = leaf.st_.natives;
    m.repeats_ = leaf.st_.repeats;
    m.nodes_ = leaf.st_.nodes;
    m.root_ = v->producer();
    st_.nodes.insert(st_.nodes.end(), m.nodes_.begin(), m.nodes_.end());
    leaves.push_back(std::move(m));
    return true;
  }

  // Whether `n` (producing `v`) may be skipped by a through() pattern.
  static bool passes(const PatNode* p, const Node* n, const Value* v) {
    if (!n || !p->pass_ops.count(n->op())) return false;
    if (n->output(0) != v || used_inputs(n) < 1 || !n->input(0)) return false;
    for (size_t i = 1; i < n->num_inputs(); ++i) {
      if (n->input(i) && !constant_value(n->input(i))) return false;  // a data input
    }
    if (n->is(Op::kCast)) {
      const Attribute* to = n->find_attr("to");
      if (!to || to->kind != Attribute::Kind::kInt) return false;
      const DType in = n->input(0)->dtype();
      if (in == DType::kUndefined || static_cast<int64_t>(dtype_to_onnx(in)) != to->i) return false;
      if (v->dtype() != DType::kUndefined && v->dtype() != in) return false;
    }
    return true;
  }

  // Zero or more pass-through nodes above `v`, then the inner pattern (shortest first).
  bool walk(const PatNode* p, Value* v, const Site& s, Cont k) {
    {
      const Mark saved = mark();
      if (match(p->inputs[0].get(), v, s, k)) return true;
      undo(saved);
    }
    Node* n = v->producer();
    if (!passes(p, n, v)) return false;
    st_.nodes.push_back(n);
    ++st_.steps;
    return walk(p, n->input(0), Site{n, 0, nullptr}, k);
  }

  State st_;
  bool want_why_;
  int best_ = -1;
  std::string why_;
};

namespace {

std::map<const Node*, size_t> positions(const Graph& g) {
  std::map<const Node*, size_t> order;
  size_t i = 0;
  for (const Node* n : g.nodes()) order[n] = i++;
  return order;
}

}  // namespace

namespace {

// False when `p` cannot match at an output of `n` by `n`'s op type alone: most (pattern, node)
// pairs a pass tries end here, before any matcher state is made.
bool may_start_at(const PatNode* p, const Node* n) {
  switch (p->kind) {
    case PatNode::Kind::kOp:
      return n->is(p->op);
    case PatNode::Kind::kAnyOf:
      return std::any_of(p->inputs.begin(), p->inputs.end(),
                         [&](const Pat& alt) { return may_start_at(alt.get(), n); });
    case PatNode::Kind::kThrough:
      return p->pass_ops.count(n->op()) || may_start_at(p->inputs[0].get(), n);
    case PatNode::Kind::kTree:
      return n->is(p->op) || may_start_at(p->inputs[0].get(), n);
    default:
      return true;
  }
}

}  // namespace

bool may_match_at(const Pat& root, const Node* n) {
  return root.valid() && n != nullptr && may_start_at(root.get(), n);
}

std::optional<Match> match_at(const Graph& g, const Pat& root, Node* n, std::string* why) {
  if (!root.valid()) fail(ErrorKind::kInternal, "match_at: empty pattern");
  if (!n) {
    if (why) *why = "no node to match at";
    return std::nullopt;
  }
  // Without a reason wanted, a pattern whose root cannot be this op is not tried.
  if (!why && !may_start_at(root.get(), n)) return std::nullopt;
  Matcher m(why != nullptr);
  std::optional<Match> r = m.run(g, root.get(), n, nullptr);
  if (why) *why = r ? "" : m.why();
  return r;
}

std::vector<Match> find_all(const Graph& g, const Pat& root) {
  if (!root.valid()) fail(ErrorKind::kInternal, "find_all: empty pattern");
  const std::vector<Node*> nodes = g.nodes();
  const std::map<const Node*, size_t> order = positions(g);
  std::vector<Match> all;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Matcher m(false);
    if (std::optional<Match> r = m.run(g, root.get(), *it, &order)) all.push_back(std::move(*r));
  }
  return all;
}

}  // namespace nnfuse::pattern
