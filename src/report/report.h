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
//  "fused_nodes": [{"node", "pass", "fused_from", "bytes_saved", "kernels_saved"}],
//  "fallback": [{"pass", "region", "nodes", "reason"}],
//  "summary": {"matches", "effects", "kernels_saved", "bytes_saved"}}
nlohmann::json fusion_report_json(const FusionReport& report);

// Writes fusion_report_json(report) to `path`; throws kInvalidArgument naming the path when
// it cannot be written.
void write_fusion_report(const FusionReport& report, const std::string& path);

}  // namespace nnfuse
