// Profiling a planned model: every step's time over several runs, and the Chrome trace of them
// (what `nnfuse profile`, Session::profile and the Python module's Model.profile report).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "runtime/session.h"

namespace nnfuse {

struct StepProfile {
  std::string name;                 // the node's name; "reorder <value>" for a layout change
  std::string op;                   // its op type; "Reorder" for a layout change
  std::string kernel;               // the kernel that ran it
  std::string choice;               // how the measured selection chose it (PlanStep::choice)
  bool reference_fallback = false;  // the reference kernel, though the op has a fast one
  bool view = false;                // a free view (no kernel runs)
  double total_ms = 0;              // over every profiled run
};

struct PlanProfile {
  int runs = 0;
  double total_ms = 0;                                    // wall time of the profiled runs
  std::vector<StepProfile> steps;                         // in plan order
  nlohmann::json trace_events = nlohmann::json::array();  // Chrome trace "X" events
  double run_ms() const { return runs ? total_ms / runs : 0; }
};

// Runs `warmup` untimed runs, then `runs` timed ones.
PlanProfile profile_plan(PlanSession& session, const std::map<std::string, Tensor>& feeds, int runs,
                         int warmup);
// Writes the profile's Chrome trace (Perfetto, chrome://tracing); throws kInvalidArgument naming
// the path when it cannot be written.
void write_chrome_trace(const PlanProfile& p, const std::string& path);

}  // namespace nnfuse
