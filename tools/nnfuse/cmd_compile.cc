// nnfuse compile MODEL.onnx -o OUT.onnx [--report fusion_result.json] [--fusion_switch_file F]
//   [--dump_graph yaml|json|dot --debug_path DIR]; and nnfuse list-passes, nnfuse list-ops.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/insight.h"
#include "api/op_coverage.h"
#include "codegen/jit.h"
#include "ir/error.h"
#include "ir/progress.h"
#include "onnx/exporter.h"
#include "passes/pipeline.h"
#include "report/report.h"
#include "tools/nnfuse/commands.h"

namespace nnfuse::cli {

namespace {

struct CompileArgs {
  std::string model, output, report, format = "nnfuse";
  FusionFlags fusion;
  bool json = false, measure = false;
  int runs = 10;
};

}  // namespace

int compile_model(const std::string& model, const std::string& output, const std::string& report,
                  const FusionFlags& fusion, bool json, const std::string& format,
                  int measure_runs) {
  const ExportFormat fmt = export_format_from_name(format);
  FusionReport r;
  size_t before = 0;
  FuseTimes times;
  const int64_t builds_before = codegen::jit_compiler_invocations();
  auto g = load_and_fuse(model, fusion, &r, &before, &times);
  const int64_t builds = codegen::jit_compiler_invocations() - builds_before;
  if (measure_runs > 0) {
    FusionFlags plain = fusion;
    plain.no_fusion = true;
    MeasureOptions m;
    m.runs = measure_runs;
    measure_fusion([&](bool fused) { return load_and_fuse(model, fused ? fusion : plain); }, r, m);
  }
  for (const FusionWarning& w : r.warnings) {
    std::cerr << "nnfuse: warning: " << w.kind << " in '" << w.node << "': " << w.message << "\n";
  }
  std::string out = output;
  if (out.size() < 5 || out.substr(out.size() - 5) != ".onnx") out += ".onnx";
  const auto s0 = std::chrono::steady_clock::now();
  {
    // On a terminal, while a large model is written: "saving OUT.onnx  1.4 s".
    Progress progress("saving " + out, 0);
    progress.keep_ticking();
    save_onnx(*g, out, fmt);
  }
  const double save_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
  if (!report.empty()) write_fusion_report(r, report);
  nlohmann::json summary = fusion_report_json(r);
  if (json) {
    nlohmann::json j{
        {"model", model},
        {"output", out},
        {"format", format},
        {"nodes_before", before},
        {"nodes_after", g->num_nodes()},
        {"seconds", {{"load", times.load_s}, {"fuse", times.fuse_s}, {"save", save_s}}},
        {"kernel_builds", builds},
        {"fusion", summary}};
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "compiled " << model << " -> " << out << ": " << before << " nodes -> "
            << g->num_nodes()
            << (fmt == ExportFormat::kOrt ? " (written with ONNX Runtime's ops)" : "") << "\n";
  for (const PassRecord& p : r.passes) {
    std::cout << "  " << p.name << ": " << p.match_times << " matched, " << p.effect_times
              << " fused";
    if (!p.rejected.empty()) {
      std::cout << ", " << p.rejected.size() << " rejected (first: " << p.rejected[0].reason << ")";
    }
    std::cout << "\n";
  }
  if (!r.fallbacks.empty()) {
    std::cout << "  fallback: " << r.fallbacks.size()
              << " region(s) run unfused, their generated kernel did not build (first: "
              << r.fallbacks[0].region << ": " << r.fallbacks[0].reason << ")\n";
  }
  if (!report.empty()) std::cout << "wrote " << report << "\n";
  std::printf(
      "time: load %.2f s, fuse %.2f s (%lld generated kernel build%s, the rest from the "
      "cache), save %.2f s\n",
      times.load_s, times.fuse_s, static_cast<long long>(builds), builds == 1 ? "" : "s", save_s);
  return 0;
}

Action add_compile(CLI::App& app) {
  auto a = std::make_shared<CompileArgs>();
  CLI::App* c = app.add_subcommand("compile", "Fuse a model and write the fused ONNX model");
  c->add_option("model", a->model, "ONNX model file")->required();
  c->add_option("-o,--output", a->output, "The fused model (.onnx added when missing)")->required();
  c->add_option("--report", a->report, "Write fusion_result.json (CANN GE's shape) here");
  c->add_flag("--json", a->json, "Print the summary as JSON");
  c->add_option("--format", a->format,
                "nnfuse: fused nodes as nnfuse's ops (nnfuse runs the model); ort: as ONNX "
                "Runtime's contrib ops (com.microsoft) and standard ONNX ops, so ONNX Runtime runs "
                "it")
      ->check(CLI::IsMember({"nnfuse", "ort"}))
      ->capture_default_str();
  add_fusion_flags(c, a->fusion);
  add_shape_flag(c, a->fusion);
  c->add_option("--target", a->fusion.target,
                "What generated kernels are for: cpu (built and checked while compiling) or cuda "
                "(CUDA __global__ source, written to --dump-kernels, default OUTPUT_cuda/)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  c->add_flag("--measure", a->measure,
              "Profile the fused and the unfused model: each fused node's measured time and "
              "its outputs' error against the unfused nodes go into the report");
  c->add_option("--runs", a->runs, "Profiled runs of each model with --measure")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  return [a] {
    FusionFlags f = a->fusion;
    if (f.target == "cuda" && f.dump_kernels.empty()) {
      std::string stem = a->output;
      if (stem.size() >= 5 && stem.substr(stem.size() - 5) == ".onnx") stem.resize(stem.size() - 5);
      f.dump_kernels = stem + "_cuda";
    }
    return compile_model(a->model, a->output, a->report, f, a->json, a->format,
                         a->measure ? a->runs : 0);
  };
}

Action add_list_passes(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand("list-passes", "List every pass, in order, with its default");
  c->add_flag("--json", *json, "Print JSON");
  return [json] {
    nlohmann::json j = nlohmann::json::array();
    auto ops = pass_op_lists();
    for (const PassInfo& p : list_passes()) {
      if (*json) {
        j.push_back({{"name", p.name},
                     {"default", p.default_on ? "on" : "off"},
                     {"switchable", p.fusion},
                     {"description", p.description},
                     {"ops", ops.count(p.name) ? ops[p.name] : std::vector<std::string>{}}});
      } else {
        std::cout << p.name << "  [" << (p.fusion ? (p.default_on ? "on" : "off") : "always")
                  << "]  " << p.description << "\n";
      }
    }
    if (*json) std::cout << j.dump(1) << "\n";
    return 0;
  };
}

Action add_list_ops(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand(
      "list-ops", "List every op nnfuse runs, with its fast kernels and generated-kernel coverage");
  c->add_flag("--json", *json, "Print JSON");
  return [json] {
    nlohmann::json j = nlohmann::json::array();
    for (const OpCoverage& o : op_coverage()) {
      std::string domain = o.onnx && o.own ? "onnx, ai.nnfuse" : o.onnx ? "onnx" : "ai.nnfuse";
      if (*json) {
        j.push_back({{"op", o.op},
                     {"domains", domain},
                     {"fast_kernels", o.fast_kernels},
                     {"generated", o.generated},
                     {"view", o.view},
                     {"reference", o.reference},
                     {"compute", o.compute},
                     {"strict", o.strict},
                     {"class", o.op_class}});
        continue;
      }
      std::string fast;
      for (const std::string& k : o.fast_kernels) fast += (fast.empty() ? "" : ", ") + k;
      if (o.generated) fast += std::string(fast.empty() ? "" : ", ") + "generated";
      if (o.view) fast += std::string(fast.empty() ? "" : ", ") + "view";
      std::cout << o.op << " (" << domain
                << "): " << (fast.empty() ? "reference kernel only" : fast) << "\n";
    }
    if (*json) std::cout << j.dump(1) << "\n";
    return 0;
  };
}

}  // namespace nnfuse::cli
