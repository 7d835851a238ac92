// What the fusion passes did, as data and as files: every pass's matches, effects and declined
// matches with their reasons, every fused node with what it was fused from and what it saves,
// the regions that fell back; and fusion_result.json in CANN GE's shape. A module of its own so
// that the switch-file parser (config/) and the passes both build on it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nnfuse {

struct RejectedMatch {
  std::vector<std::string> nodes;  // original node names of the match
  std::string reason;
};

struct PassRecord {
  std::string name;
  int match_times = 0;   // matches found
  int effect_times = 0;  // matches rewritten
  std::vector<RejectedMatch> rejected;
};

// Per fused node: what it saves at run time.
struct FusionBenefit {
  std::string node;                     // the fused node's name
  std::string pass;                     // the pass that made it
  std::vector<std::string> fused_from;  // original node names
  int64_t bytes_saved = 0;  // intermediates no longer written to and read back from memory
  int kernels_saved = 0;    // kernel launches saved per inference
  // The cost module's figures (cost/cost.h): FLOPs, bytes the original nodes moved and the
  // fused node moves, and their roofline times (0: no estimate).
  int64_t flops = 0, bytes_before = 0, bytes_after = 0;
  double seconds_before = 0, seconds_after = 0;
  // Measured (`--measure`): milliseconds per run of the original nodes' kernels in the unfused
  // model and of this node's kernel in the fused one (-1: not measured); the largest difference
  // of its outputs from the same values unfused, relative to their largest magnitude.
  double measured_ms_before = -1, measured_ms_after = -1;
  double max_rel_error = -1;
};

// A fused node to look at: over-fusion (its working set or live values exceed what it was
// estimated for) or precision (its outputs depart from the unfused nodes' beyond tolerance).
struct FusionWarning {
  std::string kind;  // "over-fusion" or "precision"
  std::string node;
  std::string message;
};

// A whole graph's figures (cost/cost.h): kernels (nodes other than Constant), FLOPs, bytes its
// kernels move and the roofline estimate of one run.
struct GraphFigures {
  int64_t kernels = 0, flops = 0, bytes_moved = 0;
  double seconds = 0;
};

// A fusion that was decided and then could not be carried out (its generated kernel did not
// build): the nodes stay unfused.
struct FallbackRecord {
  std::string pass;
  std::string region;              // the region's name: its root node's name
  std::vector<std::string> nodes;  // original node names
  std::string reason;
};

struct FusionReport {
  std::vector<PassRecord> passes;  // in pipeline order
  std::vector<FusionBenefit> fused;
  std::vector<FallbackRecord> fallbacks;
  std::vector<FusionWarning> warnings;
  GraphFigures before, after;  // the graph as imported, and fused
  // The machine the estimates are for (cost/machine.h) and where its figures come from.
  double peak_gflops = 0, bandwidth_gbps = 0, launch_us = 0;
  std::string machine_source;
  // Measured (`--measure`): milliseconds per run, unfused and fused (-1: not measured).
  double measured_ms_before = -1, measured_ms_after = -1;
  PassRecord& record(const std::string& pass);  // creates on first use
};

struct PassInfo {
  std::string name;         // CANN GE name where one exists, e.g. ConvBatchnormFusionPass
  std::string description;  // one line
  bool fusion = true;       // switchable by the fusion switch file; false: always runs
  bool default_on = true;
  // The ops the switch file's rules format names the pass by ({"ops": [...], "action": "off"}).
  std::vector<std::string> ops = {};
};

// {"graph_fusion": {"<Pass>": {"match_times", "effect_times", "rejected": [{"nodes", "reason"}]}},
//  "fused_nodes": [{"node", "pass", "fused_from", "bytes_saved", "kernels_saved",
//                   "kernels_before", "kernels_after", "kernel_reduction", and where estimated
//                   "flops", "bytes_moved_before", "bytes_moved_after", "mem_reduction",
//                   "estimated_us_before", "estimated_us_after", "estimated_speedup", and where
//                   measured "measured_us_before", "measured_us_after", "measured_speedup",
//                   "max_relative_error"}],
//  "fallback": [{"pass", "region", "nodes", "reason"}],
//  "warnings": [{"kind", "node", "message"}],
//  "summary": {"matches", "effects", "kernels_saved", "bytes_saved", "kernels_before",
//              "kernels_after", "kernel_reduction", "flops", "bytes_moved_before",
//              "bytes_moved_after", "mem_reduction", "estimated_speedup",
//              "machine": {"peak_gflops", "bandwidth_gbps", "launch_us", "source"},
//              and where measured "measured_ms_before", "measured_ms_after", "measured_speedup"}}
// A reduction is the share removed: 1 - after / before.
nlohmann::json fusion_report_json(const FusionReport& report);

// Writes fusion_report_json(report) to `path`; throws kInvalidArgument naming the path when
// it cannot be written.
void write_fusion_report(const FusionReport& report, const std::string& path);

}  // namespace nnfuse
