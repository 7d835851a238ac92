#include "api/verify.h"

#include <cmath>
#include <memory>
#include <vector>

#include "ops/activation.h"

namespace nnfuse {

OutputDiff compare_outputs(const Tensor& got, const Tensor& want) {
  OutputDiff d;
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    d.problem = "fused gives " + dtype_name(got.dtype()) + dims_str(got.shape()) +
                ", unfused gives " + dtype_name(want.dtype()) + dims_str(want.shape());
    d.rel = INFINITY;
    return d;
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.double_at(i), g = got.double_at(i);
    if (std::isnan(w) != std::isnan(g)) {
      d.max_abs = INFINITY;
      continue;
    }
    if (std::isnan(w)) continue;
    d.scale = std::max(d.scale, std::abs(w));
    d.max_abs = std::max(d.max_abs, std::abs(g - w));
  }
  d.rel = d.scale > 0 ? d.max_abs / d.scale : d.max_abs;
  return d;
}

bool quantizes_at_run_time(const Graph& g) {
  for (const Node* n : g.nodes()) {
    if (n->is(Op::kDynamicQuantizeLinear)) return true;
    if (n->is(Op::kQuantizeLinear) && n->input(0) && !n->input(0)->is_constant()) return true;
  }
  return false;
}

double output_step(const Node& n, size_t i) {
  const Value* o = i < n.outputs().size() ? n.output(i) : nullptr;
  if (!o) return 0;
  const bool rounds = n.is(Op::kQuantizeLinear) || n.is(Op::kDynamicQuantizeLinear) ||
                      n.is(Op::kQLinearConv) || n.is(Op::kQLinearMatMul);
  if (rounds && o->dtype() != DType::kFloat32) return 1;
  if (o->dtype() == DType::kFloat32 &&
      n.attr_string("activation", "") == ops::activation_name(ops::ActivationKind::kQuantize)) {
    return n.attr_float("activation_alpha", 0.0f);
  }
  return 0;
}

NodeCheck check_nodes(const Graph& g, const std::map<std::string, Tensor>& values,
                      const PlanOptions& opts, const NodeCheckOptions& check) {
  NodeCheck r;
  // Outputs of nodes run alone that `values` lacks (a fused node's new intermediate, such as a
  // packed Q, K and V projection): the nodes reading them are fed these, so a chain of fused
  // nodes is checked from the other run's values at its start to its first output it knows.
  std::map<std::string, Tensor> computed;
  for (const Node* n : g.nodes()) {
    if (!check.all_nodes && n->fused_by().empty()) continue;
    auto owned = std::make_unique<Graph>();
    Graph& one = *owned;
    one.opsets = g.opsets;
    std::map<std::string, Tensor> feeds;
    std::vector<Value*> ins;
    bool ok = true;
    for (const Value* v : n->inputs()) {
      if (!v) {
        ins.push_back(nullptr);
        continue;
      }
      Value* c = one.find_value(v->name());
      if (!c) {
        c = one.add_value(v->name(), v->dtype(), v->shape());
        if (v->is_constant()) {
          c->set_constant(v->constant());
        } else if (values.count(v->name())) {
          one.add_input(c);
          feeds[v->name()] = values.at(v->name());
        } else if (computed.count(v->name())) {
          one.add_input(c);
          feeds[v->name()] = computed.at(v->name());
        } else {
          ok = false;
        }
      }
      ins.push_back(c);
    }
    std::vector<Value*> outs;
    for (const Value* o : n->outputs()) {
      Value* c = o ? one.add_value(o->name(), o->dtype(), o->shape()) : nullptr;
      outs.push_back(c);
    }
    if (!ok) {
      ++r.skipped;
      continue;
    }
    Node* copy = one.add_node(n->op_type(), n->name(), ins, outs, n->domain());
    for (const auto& [k, v] : n->attrs()) copy->set_attr(k, v);
    for (Value* o : outs) {
      if (o) one.add_output(o);
    }
    PlanOptions o = opts;
    o.warn_fallbacks = false;
    PlanSession session(std::move(owned), o);
    const std::vector<Tensor> got = session.run(feeds);
    ++r.checked;
    size_t k = 0;  // the node's output that got[i] is (absent outputs are not graph outputs)
    for (size_t i = 0; i < got.size(); ++i, ++k) {
      while (k < n->outputs().size() && !n->output(k)) ++k;
      const std::string& name = session.graph().outputs()[i]->name();
      if (!values.count(name)) {
        computed[name] = got[i];
        continue;
      }
      const OutputDiff d = compare_outputs(got[i], values.at(name));
      const double rel = d.problem.empty() ? d.rel : INFINITY;
      const bool agrees = d.problem.empty() && (rel <= check.rtol || d.max_abs <= check.atol);
      // A last-bit difference before the rounding moves an element by at most one step. Both
      // sides' elements lie on the grid (k x step, each product rounded to float32), so they
      // differ by whole steps give or take that rounding (up to 255 x 2^-24 of a step between
      // two float32 grid points): half a step separates one step from two.
      const double step = output_step(*n, k);
      if (!agrees && step > 0 && d.problem.empty() && d.max_abs <= step * 1.5) {
        ++r.within_step;
        continue;
      }
      if (rel > r.worst_rel || !r.worst) {
        r.worst_rel = rel;
        r.worst = n;
        r.worst_problem = d.problem;
      }
      r.pass &= agrees;
    }
  }
  return r;
}

}  // namespace nnfuse
