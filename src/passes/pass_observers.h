// The instrumentation run_pipeline puts around the passes (PassObserver, phase.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cost/cost.h"
#include "ir/progress.h"
#include "passes/fusions/fusion_records.h"
#include "passes/phase.h"

namespace nnfuse {

// The graph as imported (00_imported.<format>), then after each pass that ran, in `dir`
// ("": the current folder), the file numbered by the pass (PhasePass::number) and named by it:
// 06_LayerNormFusionPass.yaml.
class DumpObserver : public PassObserver {
 public:
  DumpObserver(std::string format, std::string dir);
  void started(const Graph& g) override;
  void after(const PhasePass& p, const Graph& g) override;

 private:
  void dump(const Graph& g, int number, const std::string& name) const;
  std::string format_;
  std::string dir_;
};

// On a terminal, the pass running now: "fusing: pass 23/38 LayerNormFusionPass  1.2 s".
class ProgressObserver : public PassObserver {
 public:
  explicit ProgressObserver(int64_t passes) : passes_(passes) {}
  void started(const Graph& g) override;
  void before(const PhasePass& p) override;

 private:
  int64_t passes_;
  std::optional<Progress> progress_;
};

// The graph verifier after each pass (debug builds).
class VerifyObserver : public PassObserver {
 public:
  void after(const PhasePass& p, const Graph& g) override;
};

// The report's cost figures: the machine, the graph's cost before and after the passes, and
// each fusion record's savings against the nodes it replaced (settle_fusion_records).
class CostObserver : public PassObserver {
 public:
  CostObserver(FusionReport& report, const cost::Machine& machine, std::string machine_source);
  void started(const Graph& g) override;
  void finished(const Graph& g) override;

 private:
  FusionReport& report_;
  const cost::Machine& machine_;
  std::string machine_source_;
  std::map<std::string, OriginalCost> originals_;
};

}  // namespace nnfuse
