#include "report/report.h"

#include <fstream>

#include "ir/atomic_file.h"
#include "ir/error.h"

namespace nnfuse {

PassRecord& FusionReport::record(const std::string& pass) {
  for (PassRecord& r : passes) {
    if (r.name == pass) return r;
  }
  passes.push_back(PassRecord{pass, 0, 0, {}});
  return passes.back();
}

nlohmann::json fusion_report_json(const FusionReport& report) {
  using nlohmann::json;
  json graph_fusion = json::object();
  int64_t matches = 0, effects = 0, kernels_saved = 0, bytes_saved = 0;
  for (const PassRecord& r : report.passes) {
    json rejected = json::array();
    for (const RejectedMatch& m : r.rejected) {
      rejected.push_back({{"nodes", m.nodes}, {"reason", m.reason}});
    }
    graph_fusion[r.name] = {
        {"match_times", r.match_times}, {"effect_times", r.effect_times}, {"rejected", rejected}};
    matches += r.match_times;
    effects += r.effect_times;
  }
  json fused = json::array();
  for (const FusionBenefit& b : report.fused) {
    json entry = {{"node", b.node},
                  {"pass", b.pass},
                  {"fused_from", b.fused_from},
                  {"bytes_saved", b.bytes_saved},
                  {"kernels_saved", b.kernels_saved}};
    if (b.seconds_after > 0) {
      entry["flops"] = b.flops;
      entry["bytes_moved_before"] = b.bytes_before;
      entry["bytes_moved_after"] = b.bytes_after;
      entry["estimated_speedup"] = b.seconds_before / b.seconds_after;
    }
    fused.push_back(std::move(entry));
    kernels_saved += b.kernels_saved;
    bytes_saved += b.bytes_saved;
  }
  json fallback = json::array();
  for (const FallbackRecord& f : report.fallbacks) {
    fallback.push_back(
        {{"pass", f.pass}, {"region", f.region}, {"nodes", f.nodes}, {"reason", f.reason}});
  }
  return {{"graph_fusion", graph_fusion},
          {"fused_nodes", fused},
          {"fallback", fallback},
          {"summary",
           {{"matches", matches},
            {"effects", effects},
            {"kernels_saved", kernels_saved},
            {"bytes_saved", bytes_saved}}}};
}

void write_fusion_report(const FusionReport& report, const std::string& path) {
  const std::string text =
      fusion_report_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  write_file_atomically(path, "the fusion report", [&](std::ostream& out) { out << text << "\n"; });
}

}  // namespace nnfuse
