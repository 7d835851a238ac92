// What the fused model measurably gained, node by node: both graphs profiled on the same
// generated inputs (each fused node's time next to its original nodes' time unfused), and
// every fused node's outputs checked against the same values of the unfused graph (precision
// warnings beyond the tolerance). What `nnfuse report --measure` and `nnfuse compile --measure`
// add to the fusion report.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "api/profile.h"
#include "ir/graph.h"
#include "report/report.h"

namespace nnfuse {

struct MeasureOptions {
  int runs = 10;
  int warmup = 2;
  int threads = 0;          // 0: all cores
  double tolerance = 1e-4;  // largest relative difference of a fused node's outputs
  uint32_t seed = 0;        // the generated inputs'
};

// Makes the model's graph: fused (the pass pipeline run) or as imported. Called once per side
// for the timings and once more per side for the precision check (whose graphs keep the fused
// nodes' outputs as extra outputs, which would change the timed plans).
using GraphMaker = std::function<std::unique_ptr<Graph>(bool fused)>;

struct Measurement {
  PlanProfile unfused, fused;
};

// Fills report's measured figures: per fused node measured_ms_before (its original nodes'
// kernels in the unfused profile), measured_ms_after and max_rel_error; the whole runs'
// milliseconds; and a "precision" warning for each fused node over the tolerance.
Measurement measure_fusion(const GraphMaker& make, FusionReport& report,
                           const MeasureOptions& options = {});

}  // namespace nnfuse
