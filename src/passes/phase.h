// The pipeline's structure as data: phases of passes, and the order each pass (or phase) needs
// with its reason. order_violations() checks a run order against those constraints; the
// pipeline is checked when it is built, and its test checks that the checker catches each swap.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace nnfuse {

// An ordering need as a pass or a phase states it: it runs after (or before) each of `others`,
// pass names (PassInfo::name) or phase names (a phase's name stands for every pass in it).
struct Order {
  enum Kind { kAfter, kBefore };
  Kind kind;
  std::vector<std::string> others;
  std::string reason;
};

inline Order runs_after(std::vector<std::string> others, std::string reason) {
  return {Order::kAfter, std::move(others), std::move(reason)};
}
inline Order runs_before(std::vector<std::string> others, std::string reason) {
  return {Order::kBefore, std::move(others), std::move(reason)};
}

// A pass in its phase, with the order it needs.
struct PhasePass {
  std::unique_ptr<Pass> pass;
  std::vector<Order> order = {};
  // Its place among the listed passes, from 1 (list-passes' order after the user patterns); a
  // pass of an unlisted phase has the number of the listed pass after it. Set by check_phases.
  int number = 0;
};

struct Phase {
  std::string name;
  std::string purpose;  // one line
  std::vector<PhasePass> passes;
  std::vector<Order> order = {};  // what every pass of the phase needs
  // Whether list-passes names the phase's passes (the user phase's are listed as the user's
  // patterns, which they run).
  bool listed = true;
};

// `first` runs before `then`, because `reason`.
struct OrderConstraint {
  std::string first;
  std::string then;
  std::string reason;
};

// Every constraint the phases and their passes state, between pass names: a phase's name stands
// for each of its passes; a name that is neither is kept as it is, for order_violations() to
// report.
std::vector<OrderConstraint> order_constraints(const std::vector<Phase>& phases);
// The names of the phases' passes, in the order they run.
std::vector<std::string> pass_order(const std::vector<Phase>& phases);
// One line for each constraint that `order` (pass names in run order) breaks, naming both passes
// and the reason, and for each name a constraint gives that `order` lacks. Empty: `order`
// satisfies every constraint. Linear in the passes and constraints.
std::vector<std::string> order_violations(const std::vector<std::string>& order,
                                          const std::vector<OrderConstraint>& constraints);
// Numbers the passes (PhasePass::number); throws kInternal when a pass or phase name is given
// twice or the phases' order breaks one of their constraints.
void check_phases(std::vector<Phase>& phases);

// What watches the passes run without changing what they do (dumps, progress, verification,
// cost figures: pass_observers.h).
class PassObserver {
 public:
  virtual ~PassObserver() = default;
  virtual void started(const Graph&) {}
  virtual void before(const PhasePass&) {}               // each pass, whether it runs or not
  virtual void after(const PhasePass&, const Graph&) {}  // each pass that ran
  virtual void finished(const Graph&) {}
};

// Runs the phases' passes on `g` in order, each that is enabled(ctx) (a fusion pass that runs is
// listed in the report even with no match), the observers told in their order around each.
void run_phases(const std::vector<Phase>& phases, Graph& g, PassContext& ctx,
                const std::vector<PassObserver*>& observers);

}  // namespace nnfuse
