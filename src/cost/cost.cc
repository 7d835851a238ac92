#include "cost/cost.h"

#include <algorithm>
#include <set>

#include "ops/def.h"

namespace nnfuse::cost {

int64_t value_bytes(const Value& v) {
  const size_t elem = dtype_size(v.dtype());
  if (elem == 0 || !v.shape().fully_known()) return -1;
  return checked_numel(v.shape().static_dims(), elem) * static_cast<int64_t>(elem);
}

int64_t intermediate_bytes(const std::vector<const Value*>& values) {
  std::set<const Value*> seen;
  int64_t total = 0;
  for (const Value* v : values) {
    if (!v || !seen.insert(v).second) continue;
    total = sat_add(total, std::max<int64_t>(0, value_bytes(*v)));
  }
  return sat_mul(2, total);
}

std::vector<const Value*> intermediates(const std::vector<Node*>& nodes,
                                        const std::vector<Value*>& outputs) {
  std::vector<const Value*> r;
  for (const Node* n : nodes) {
    for (const Value* o : n->outputs()) {
      if (o && std::find(outputs.begin(), outputs.end(), o) == outputs.end()) r.push_back(o);
    }
  }
  return r;
}

namespace {

std::optional<Dims> dims_of(const Value* v) {
  if (!v || !v->shape().fully_known()) return std::nullopt;
  return v->shape().static_dims();
}

}  // namespace

int64_t flops(const Node& n) {
  if (const ops::FlopsFn f = ops::traits_of(n).flops) return f(n);
  const auto y = dims_of(n.output(0));
  return y ? checked_numel(*y) : -1;
}

int64_t bytes_moved(const Node& n) {
  std::vector<const Value*> seen;
  int64_t total = 0;
  auto add = [&](const Value* v) {
    if (!v || std::find(seen.begin(), seen.end(), v) != seen.end()) return;
    seen.push_back(v);
    total = sat_add(total, std::max<int64_t>(value_bytes(*v), 0));
  };
  for (const Value* v : n.inputs()) add(v);
  for (const Value* v : n.outputs()) add(v);
  return total;
}

int64_t domain_elements(const std::vector<Node*>& nodes) {
  int64_t domain = 0;
  for (const Node* n : nodes) {
    for (const Value* v : n->outputs()) {
      if (const auto d = dims_of(v)) domain = std::max(domain, checked_numel(*d));
    }
  }
  return domain;
}

Recompute recomputation(const std::vector<Node*>& nodes, int64_t per_row) {
  const int64_t domain = domain_elements(nodes);
  Recompute r;
  for (const Node* n : nodes) {
    const auto d = n->num_outputs() == 1 ? dims_of(n->output(0)) : std::nullopt;
    if (!d) continue;
    const int64_t k = checked_numel(*d);
    if (k >= domain || k == per_row) continue;
    r.elements = sat_add(r.elements, domain - k);
    // An op whose evaluation costs about as much as a dozen or more adds weighs 16.
    r.cost = sat_add(r.cost, sat_mul(domain - k, ops::traits_of(*n).expensive ? 16 : 1));
  }
  return r;
}

double roofline_seconds(int64_t flops, int64_t bytes, const Machine& m) {
  const double compute = static_cast<double>(std::max<int64_t>(flops, 0)) / m.flops_per_s;
  const double memory = static_cast<double>(std::max<int64_t>(bytes, 0)) / m.bytes_per_s;
  return std::max(compute, memory) + m.launch_s;
}

Benefit fusion_benefit(const std::vector<Node*>& nodes, const std::vector<Value*>& outputs,
                       const Machine& m) {
  Benefit b{intermediate_bytes(intermediates(nodes, outputs)), kernels_saved(nodes.size())};
  for (const Node* n : nodes) {
    const int64_t f = std::max<int64_t>(flops(*n), 0), moved = bytes_moved(*n);
    b.flops = sat_add(b.flops, f);
    b.bytes_before = sat_add(b.bytes_before, moved);
    b.seconds_before += roofline_seconds(f, moved, m);
  }
  b.bytes_after = std::max<int64_t>(b.bytes_before - b.bytes_saved, 0);
  if (!nodes.empty()) b.seconds_after = roofline_seconds(b.flops, b.bytes_after, m);
  return b;
}

GraphCost graph_cost(const Graph& g, const Machine& m) {
  GraphCost c;
  for (const Node* n : g.nodes()) {
    if (n->is(Op::kConstant)) continue;
    const int64_t f = std::max<int64_t>(flops(*n), 0), moved = bytes_moved(*n);
    ++c.kernels;
    c.flops = sat_add(c.flops, f);
    c.bytes_moved = sat_add(c.bytes_moved, moved);
    c.seconds += roofline_seconds(f, moved, m);
  }
  return c;
}

}  // namespace nnfuse::cost
