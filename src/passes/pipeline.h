// THE ordered pass pipeline: canonicalization first, then the fusion passes. Every pass
// re-runs the graph verifier in debug builds; graphs can be dumped after every pass.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/switches.h"
#include "ir/graph.h"
#include "passes/pass.h"

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

// Every pass, in the order it runs: built on first use (the rules' patterns take a while to
// build) and shared by every compile after.
const std::vector<std::unique_ptr<Pass>>& pipeline();
// The registered user fusion patterns first (they run before the built-in fusions), then the
// pipeline's passes.
std::vector<PassInfo> list_passes();
// How a user fusion pattern appears among the passes (switchable by its name).
PassInfo user_pattern_info(const std::string& name);
// For the rules format of the switch file: each fusion pass's op list (PassInfo::ops).
std::map<std::string, std::vector<std::string>> pass_op_lists();

// Runs the pipeline on `g` and returns what every pass matched and did.
FusionReport run_pipeline(Graph& g, const PipelineOptions& opts = {});

}  // namespace nnfuse
