// THE pass pipeline: phases of passes (canonicalization, the user's fusions, then the built-in
// fusions), each pass with the order it needs as data (phase.h), checked when the pipeline is
// built. Around the passes, instrumentation (pass_observers.h): cost figures, the graph verifier
// after every pass in debug builds, dumps of the graph after every pass, the progress line.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/switches.h"
#include "ir/graph.h"
#include "passes/pass.h"
#include "passes/phase.h"
#include "passes/user_phase.h"

namespace nnfuse {

struct PipelineOptions {
  const FusionSwitches* switches = nullptr;  // nullptr: every pass at its default
  std::string dump_format;                   // "", yaml, json or dot
  std::string dump_dir;                      // with dump_format: the graph after every pass
  std::string target = "cpu";                // generated kernels: "cpu" (built now) or "cuda"
  // The machine benefits are estimated for; unset: this CPU's calibration, else the defaults
  // (cost::estimate_machine).
  std::optional<cost::Machine> machine;
};

// Every phase and its passes, in the order they run: built on first use (the rules' patterns
// take a while to build), its order checked against its constraints, and shared by every
// compile after.
const std::vector<Phase>& pipeline();
// The registered user fusion patterns first (they run before the built-in fusions), then the
// passes of the listed phases (all but the user phase, which runs those patterns).
std::vector<PassInfo> list_passes();
// For the rules format of the switch file: each fusion pass's op list (PassInfo::ops).
std::map<std::string, std::vector<std::string>> pass_op_lists();

// Runs the pipeline on `g` and returns what every pass matched and did.
FusionReport run_pipeline(Graph& g, const PipelineOptions& opts = {});

}  // namespace nnfuse
