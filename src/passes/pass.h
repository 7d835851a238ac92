// Passes and what they report. A pass rewrites the graph in place; fusion passes record each
// match they found, whether they applied it, and why not, in the FusionReport that becomes
// fusion_result.json.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

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

class FusionSwitches;

struct PassContext {
  FusionReport& report;
  // What generated kernels are for: "cpu" (built and loaded while fusing, so a region whose
  // code does not build falls back to its nodes at once) or "cuda" (source only).
  std::string target = "cpu";
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
  virtual void run(Graph& g, PassContext& ctx) = 0;
};

}  // namespace nnfuse
