// Passes and what they report. A pass rewrites the graph in place; fusion passes record each
// match they found, whether they applied it, and why not, in the FusionReport that becomes
// fusion_result.json.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cost/cost.h"
#include "ir/graph.h"
#include "report/report.h"

namespace nnfuse {

class FusionSwitches;

struct PassContext {
  FusionReport& report;
  // What generated kernels are for: "cpu" (built and loaded while fusing, so a region whose
  // code does not build falls back to its nodes at once) or "cuda" (source only).
  std::string target = "cpu";
  // The machine fusions' benefits are estimated for (cost/machine.h).
  cost::Machine machine{};
  // Which passes run (the switch file); nullptr: every pass at its default.
  const FusionSwitches* switches = nullptr;
  // Records a match and its outcome for `pass`.
  void matched(const std::string& pass) { report.record(pass).match_times++; }
  void applied(const std::string& pass) { report.record(pass).effect_times++; }
  void rejected(const std::string& pass, std::vector<std::string> nodes, std::string reason) {
    report.record(pass).rejected.push_back({std::move(nodes), std::move(reason)});
  }
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual const PassInfo& info() const = 0;
  // Const: a pass keeps nothing between runs, so the pipeline's passes are built once and
  // shared by every compile, on any thread.
  virtual void run(Graph& g, PassContext& ctx) const = 0;
  // Whether it runs in this compile: by default as ctx.switches says (without them, as
  // info().default_on says); a pass that is not a fusion always runs.
  virtual bool enabled(const PassContext& ctx) const;
};

}  // namespace nnfuse
