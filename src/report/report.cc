#include "report/report.h"

#include <fstream>

#include "ir/atomic_file.h"
#include "ir/error.h"

namespace nnfuse {

namespace {

// The share removed going from `before` to `after` (0 when there was nothing before).
double reduction(double before, double after) { return before > 0 ? 1.0 - after / before : 0.0; }

}  // namespace

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
    const int before = b.kernels_saved + 1;
    json entry = {{"node", b.node},
                  {"pass", b.pass},
                  {"fused_from", b.fused_from},
                  {"bytes_saved", b.bytes_saved},
                  {"kernels_saved", b.kernels_saved},
                  {"kernels_before", before},
                  {"kernels_after", 1},
                  {"kernel_reduction", reduction(before, 1)}};
    if (b.seconds_after > 0) {
      entry["flops"] = b.flops;
      entry["bytes_moved_before"] = b.bytes_before;
      entry["bytes_moved_after"] = b.bytes_after;
      entry["mem_reduction"] =
          reduction(static_cast<double>(b.bytes_before), static_cast<double>(b.bytes_after));
      entry["estimated_us_before"] = b.seconds_before * 1e6;
      entry["estimated_us_after"] = b.seconds_after * 1e6;
      entry["estimated_speedup"] = b.seconds_before / b.seconds_after;
    }
    if (b.measured_ms_after > 0 && b.measured_ms_before >= 0) {
      entry["measured_us_before"] = b.measured_ms_before * 1e3;
      entry["measured_us_after"] = b.measured_ms_after * 1e3;
      entry["measured_speedup"] = b.measured_ms_before / b.measured_ms_after;
    }
    if (b.max_rel_error >= 0) entry["max_relative_error"] = b.max_rel_error;
    fused.push_back(std::move(entry));
    kernels_saved += b.kernels_saved;
    bytes_saved += b.bytes_saved;
  }
  json fallback = json::array();
  for (const FallbackRecord& f : report.fallbacks) {
    fallback.push_back(
        {{"pass", f.pass}, {"region", f.region}, {"nodes", f.nodes}, {"reason", f.reason}});
  }
  json warnings = json::array();
  for (const FusionWarning& w : report.warnings) {
    warnings.push_back({{"kind", w.kind}, {"node", w.node}, {"message", w.message}});
  }
  json summary = {{"matches", matches},
                  {"effects", effects},
                  {"kernels_saved", kernels_saved},
                  {"bytes_saved", bytes_saved}};
  const GraphFigures& b = report.before;
  const GraphFigures& a = report.after;
  if (b.kernels > 0) {
    summary["kernels_before"] = b.kernels;
    summary["kernels_after"] = a.kernels;
    summary["kernel_reduction"] =
        reduction(static_cast<double>(b.kernels), static_cast<double>(a.kernels));
    summary["flops"] = b.flops;
    summary["bytes_moved_before"] = b.bytes_moved;
    summary["bytes_moved_after"] = a.bytes_moved;
    summary["mem_reduction"] =
        reduction(static_cast<double>(b.bytes_moved), static_cast<double>(a.bytes_moved));
    if (a.seconds > 0) summary["estimated_speedup"] = b.seconds / a.seconds;
  }
  if (report.peak_gflops > 0) {
    summary["machine"] = {{"peak_gflops", report.peak_gflops},
                          {"bandwidth_gbps", report.bandwidth_gbps},
                          {"launch_us", report.launch_us},
                          {"source", report.machine_source}};
  }
  if (report.measured_ms_after > 0 && report.measured_ms_before > 0) {
    summary["measured_ms_before"] = report.measured_ms_before;
    summary["measured_ms_after"] = report.measured_ms_after;
    summary["measured_speedup"] = report.measured_ms_before / report.measured_ms_after;
  }
  return {{"graph_fusion", graph_fusion},
          {"fused_nodes", fused},
          {"fallback", fallback},
          {"warnings", warnings},
          {"summary", summary}};
}

void write_fusion_report(const FusionReport& report, const std::string& path) {
  const std::string text =
      fusion_report_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  write_file_atomically(path, "the fusion report", [&](std::ostream& out) { out << text << "\n"; });
}

}  // namespace nnfuse
