// nnfuse report MODEL.onnx -o report.html [--measure]: one self-contained HTML page with what
// fused and why (report/html.h); and nnfuse calibrate, the machine figures its estimates use.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "api/insight.h"
#include "cost/machine.h"
#include "ir/atomic_file.h"
#include "ir/error.h"
#include "report/html.h"
#include "runtime/calibrate.h"
#include "runtime/session.h"
#include "tools/nnfuse/commands.h"

namespace nnfuse::cli {

namespace {

struct ReportArgs {
  std::string model, output, json, ort_json;
  FusionFlags fusion;
  bool measure = false;
  int runs = 10, threads = 0;
};

std::string fallback_line(const ReferenceFallback& f) {
  std::string line = f.op_type + " '" + f.node + "' " + f.shapes;
  for (const auto& [kernel, why] : f.declined) line += "; " + kernel + ": " + why;
  return line;
}

// The line of bench/compare_ort.py's --json results for `model` (by its file's stem): the
// results file (bench/bench_json.py: its rows under "rows"), or a bare array of rows.
std::string ort_line(const std::string& path, const std::string& model) {
  std::ifstream in(path);
  if (!in) fail(ErrorKind::kInvalidArgument, "--ort-json: cannot read '", path, "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    fail(ErrorKind::kInvalidArgument, "--ort-json '", path, "': not JSON (", e.what(), ")");
  }
  const std::string stem = std::filesystem::path(model).stem().string();
  const nlohmann::json rows = j.is_object() && j.contains("rows") ? j["rows"] : j;
  for (const nlohmann::json& r : rows.is_array() ? rows : nlohmann::json::array()) {
    if (!r.is_object() || r.value("model", "") != stem) continue;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "nnfuse %.3f ms, ONNX Runtime %.3f ms: ratio %.3f (%.3f-%.3f over the rounds), "
                  "side by side by bench/compare_ort.py",
                  r.value("nnfuse_ms", 0.0), r.value("ort_ms", 0.0), r.value("ratio", 0.0),
                  r.value("ratio_min", 0.0), r.value("ratio_max", 0.0));
    return buf;
  }
  fail(ErrorKind::kInvalidArgument, "--ort-json '", path, "' has no result for model '", stem, "'");
}

int report(const ReportArgs& a) {
  const std::string vs_ort = a.ort_json.empty() ? "" : ort_line(a.ort_json, a.model);
  FusionReport r;
  FusionFlags plain = a.fusion;
  plain.no_fusion = true;
  FusionFlags fused_flags = a.fusion;
  fused_flags.no_fusion = false;
  const std::shared_ptr<const Graph> after = load_and_fuse(a.model, fused_flags, &r);
  std::unique_ptr<Graph> before = load_and_fuse(a.model, plain);
  ReportPage page;
  page.model = a.model;
  page.ort_line = vs_ort;
  if (a.measure) {
    MeasureOptions m;
    m.runs = a.runs;
    m.threads = a.threads;
    std::cerr << "measuring: " << a.runs << " runs of the unfused and the fused model\n";
    const Measurement got = measure_fusion(
        [&](bool fused) { return load_and_fuse(a.model, fused ? fused_flags : plain); }, r, m);
    for (const StepProfile& s : got.fused.steps) {
      if (s.view) continue;
      page.kernel_times.push_back(
          {s.name, s.op, s.kernel, s.total_ms / got.fused.runs, s.reference_fallback});
    }
    page.measured_runs = a.runs;
  }
  {
    PlanOptions opts;
    opts.threads = a.threads;
    opts.warn_fallbacks = false;
    PlanSession session(after, opts);  // the fused graph shown, planned as it runs
    for (const ReferenceFallback& f : session.plan().reference_fallbacks()) {
      page.reference_kernels.push_back(fallback_line(f));
    }
  }
  page.before = before.get();
  page.after = after.get();
  page.report = &r;
  std::vector<std::string> problems;
  const std::string html = render_report_html(page, &problems);
  for (const std::string& p : problems) std::cerr << "nnfuse: warning: " << p << "\n";
  for (const FusionWarning& w : r.warnings) {
    std::cerr << "nnfuse: warning: " << w.kind << " in '" << w.node << "': " << w.message << "\n";
  }
  write_file_atomically(a.output, "the report", [&](std::ostream& out) { out << html; });
  if (!a.json.empty()) write_fusion_report(r, a.json);
  std::cout << "wrote " << a.output << ": " << r.before.kernels << " kernels -> " << r.after.kernels
            << ", " << r.fused.size() << " fused nodes, " << r.warnings.size() << " warning"
            << (r.warnings.size() == 1 ? "" : "s");
  if (r.measured_ms_after > 0) {
    std::cout << std::fixed << std::setprecision(3) << ", measured " << r.measured_ms_before
              << " ms unfused, " << r.measured_ms_after << " ms fused";
  }
  std::cout << "\n";
  if (!a.json.empty()) std::cout << "wrote " << a.json << "\n";
  return 0;
}

struct CalibrateArgs {
  int threads = 0;
  bool json = false;
};

int calibrate(const CalibrateArgs& a) {
  if (!a.json) std::cerr << "calibrating: sgemm, memory copy and thread launches (a second)\n";
  const cost::Calibration c = calibrate_machine(a.threads);
  const std::string path = cost::calibration_path();
  save_calibration(c, path);
  if (a.json) {
    std::cout << nlohmann::json{{"cpu", c.cpu},
                                {"threads", c.threads},
                                {"peak_gflops", c.machine.flops_per_s / 1e9},
                                {"bandwidth_gbps", c.machine.bytes_per_s / 1e9},
                                {"launch_us", c.machine.launch_s * 1e6},
                                {"path", path}}
                     .dump()
              << "\n";
    return 0;
  }
  std::cout << std::fixed << std::setprecision(1) << c.cpu << ", " << c.threads << " thread"
            << (c.threads == 1 ? "" : "s") << ": peak " << c.machine.flops_per_s / 1e9
            << " GFLOP/s (float32 GEMM), memory " << c.machine.bytes_per_s / 1e9
            << " GB/s, kernel launch " << std::setprecision(2) << c.machine.launch_s * 1e6
            << " us\nwrote " << path << "\n";
  return 0;
}

}  // namespace

Action add_report(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* c = app.add_subcommand(
      "report", "Write an HTML page of what fused and why: graphs before and after, benefits");
  c->add_option("model", a->model, "ONNX model file")->required();
  c->add_option("-o,--output", a->output, "The HTML file to write")->required();
  c->add_flag("--measure", a->measure,
              "Profile the fused and the unfused model: measured time per fused node next to "
              "the estimate, per-kernel times, and each fused node's outputs checked against "
              "the unfused ones");
  c->add_option("--runs", a->runs, "Profiled runs of each model with --measure")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  c->add_option("--threads", a->threads, "Threads (0: all cores)")->check(CLI::Range(0, 1024));
  c->add_option("--json", a->json, "Also write fusion_result.json (with the measured figures)");
  c->add_option("--ort-json", a->ort_json,
                "Show ONNX Runtime's time from bench/compare_ort.py --json results for this model");
  add_fusion_flags(c, a->fusion);
  add_shape_flag(c, a->fusion);
  return [a] { return report(*a); };
}

Action add_calibrate(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* c = app.add_subcommand(
      "calibrate",
      "Measure this machine's peak GFLOP/s, memory bandwidth and launch cost for "
      "the benefit estimates (cached)");
  c->add_option("--threads", a->threads, "Threads (0: all cores)")->check(CLI::Range(0, 1024));
  c->add_flag("--json", a->json, "Print the figures as JSON");
  return [a] { return calibrate(*a); };
}

}  // namespace nnfuse::cli
