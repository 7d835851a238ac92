// The fusion report as files: fusion_result.json in CANN GE's shape, plus what each fused node
// saves at run time.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace nnfuse {

// {"graph_fusion": {"<Pass>": {"match_times", "effect_times", "rejected": [{"nodes", "reason"}]}},
//  "fused_nodes": [{"node", "pass", "fused_from", "bytes_saved", "kernels_saved"}],
//  "fallback": [{"pass", "region", "nodes", "reason"}],
//  "summary": {"matches", "effects", "kernels_saved", "bytes_saved"}}
nlohmann::json fusion_report_json(const FusionReport& report);

// Writes fusion_report_json(report) to `path`; throws kInvalidArgument naming the path when
// it cannot be written.
void write_fusion_report(const FusionReport& report, const std::string& path);

// Bytes saved by not writing the intermediates to memory and reading them back: twice the sum
// of their static sizes. Values of unknown shape or dtype count 0; a value listed twice counts
// once; nullptr entries are ignored.
int64_t intermediate_bytes(const std::vector<const Value*>& values);

}  // namespace nnfuse
