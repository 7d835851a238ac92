#include "api/insight.h"

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>

#include "api/inputs.h"
#include "api/verify.h"
#include "ir/progress.h"
#include "runtime/session.h"

namespace nnfuse {

namespace {

// Milliseconds per run of each step, by the node's name.
std::map<std::string, double> step_ms(const PlanProfile& p) {
  std::map<std::string, double> r;
  for (const StepProfile& s : p.steps) {
    if (!s.view && p.runs > 0) r[s.name] += s.total_ms / p.runs;
  }
  return r;
}

// Runs both graphs once with every fused node's outputs (and their unfused twins) as extra
// outputs; per fused node, the largest relative difference of its outputs.
std::map<std::string, double> node_errors(const GraphMaker& make, const PlanOptions& opts,
                                          const std::map<std::string, Tensor>& feeds) {
  std::unique_ptr<Graph> fused = make(true), plain = make(false);
  std::map<std::string, std::vector<std::string>> probes;  // fused node -> value names
  for (const Node* n : fused->nodes()) {
    if (n->fused_by().empty()) continue;
    for (Value* o : n->outputs()) {
      if (!o) continue;
      Value* twin = plain->find_value(o->name());
      if (!twin || (!twin->producer() && !twin->is_graph_output())) continue;
      probes[n->name()].push_back(o->name());
      if (!o->is_graph_output()) fused->add_output(o);
      if (!twin->is_graph_output()) plain->add_output(twin);
    }
  }
  PlanOptions plain_opts = opts;
  plain_opts.warn_fallbacks = false;
  PlanSession fs(std::move(fused), opts);
  PlanSession ps(std::move(plain), plain_opts);
  const std::vector<Tensor> got = fs.run(feeds), want = ps.run(feeds);
  std::map<std::string, const Tensor*> got_by, want_by;
  for (size_t i = 0; i < got.size(); ++i) got_by[fs.graph().outputs()[i]->name()] = &got[i];
  for (size_t i = 0; i < want.size(); ++i) want_by[ps.graph().outputs()[i]->name()] = &want[i];
  std::map<std::string, double> errors;
  for (const auto& [node, names] : probes) {
    double worst = 0;
    for (const std::string& v : names) {
      const OutputDiff d = compare_outputs(*got_by.at(v), *want_by.at(v));
      worst = std::max(worst, d.problem.empty() ? d.rel : std::numeric_limits<double>::infinity());
    }
    errors[node] = worst;
  }
  return errors;
}

}  // namespace

Measurement measure_fusion(const GraphMaker& make, FusionReport& report,
                           const MeasureOptions& options) {
  PlanOptions opts;
  opts.threads = options.threads;
  // Both sides' plans choose the same kernel for the same geometry.
  opts.kernel_choices = std::make_shared<KernelChoices>();
  PlanOptions plain_opts = opts;
  plain_opts.warn_fallbacks = false;  // the unfused side is the yardstick
  Measurement m;
  std::map<std::string, Tensor> feeds;
  Progress progress("measuring:", 3);
  progress.keep_ticking();
  {
    progress.update(0, "the unfused model");
    PlanSession plain(make(false), plain_opts);
    feeds = complete_inputs(plain.graph(), {}, options.seed);
    m.unfused = profile_plan(plain, feeds, options.runs, options.warmup);
  }
  {
    progress.update(1, "the fused model");
    PlanSession fused(make(true), opts);
    m.fused = profile_plan(fused, feeds, options.runs, options.warmup);
  }
  progress.update(2, "each fused node's outputs");
  report.measured_ms_before = m.unfused.run_ms();
  report.measured_ms_after = m.fused.run_ms();
  const std::map<std::string, double> before = step_ms(m.unfused), after = step_ms(m.fused);
  const std::map<std::string, double> errors = node_errors(make, opts, feeds);
  progress.finish();
  for (FusionBenefit& b : report.fused) {
    auto it = after.find(b.node);
    if (it != after.end()) {
      b.measured_ms_after = it->second;
      double sum = 0;
      for (const std::string& n : b.fused_from) {
        auto o = before.find(n);
        if (o != before.end()) sum += o->second;
      }
      b.measured_ms_before = sum;
    }
    auto e = errors.find(b.node);
    if (e == errors.end()) continue;
    b.max_rel_error = e->second;
    if (!(e->second <= options.tolerance)) {
      std::ostringstream msg;
      msg << "its outputs depart from the unfused nodes' by " << e->second
          << " (relative to their largest magnitude) on random inputs, over the tolerance "
          << options.tolerance;
      report.warnings.push_back({"precision", b.node, msg.str()});
    }
  }
  return m;
}

}  // namespace nnfuse
