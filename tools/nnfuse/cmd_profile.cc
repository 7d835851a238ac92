// nnfuse profile MODEL.onnx -o trace.json: per-kernel times as a Chrome trace and a summary.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/profile.h"
#include "ir/error.h"
#include "onnx/importer.h"
#include "runtime/session.h"
#include "tools/nnfuse/commands.h"

namespace nnfuse::cli {

namespace {

struct ProfileArgs {
  std::string model, trace;
  std::vector<std::string> inputs;
  int runs = 10, warmup = 2, threads = 0, top = 15;
  FusionFlags fusion;
  bool json = false, strict = false;
};

int profile(const ProfileArgs& a) {
  PlanOptions opts;
  opts.threads = a.threads;
  opts.strict = a.strict;
  std::map<std::string, Tensor> given;
  PlanSession session(opts.reference_only ? load_and_fuse(a.model, a.fusion)
                                          : load_for_inputs(a.model, a.fusion, a.inputs, given),
                      opts);
  if (given.empty()) given = load_inputs(a.inputs);
  auto feeds = complete_inputs(session.graph(), given, 0);
  const PlanProfile prof = profile_plan(session, feeds, a.runs, a.warmup);
  struct Agg {
    int count = 0, ref = 0;  // ref: of them on the reference kernel, the op having a fast one
    double ms = 0;
  };
  std::map<std::string, Agg> by_op;
  double ref_ms = 0;
  const double total_ms = prof.total_ms;
  for (const StepProfile& sp : prof.steps) {
    if (sp.view) continue;
    Agg& g = by_op[sp.op];
    g.count += a.runs;
    g.ref += sp.reference_fallback ? a.runs : 0;
    g.ms += sp.total_ms;
    ref_ms += sp.reference_fallback ? sp.total_ms : 0.0;
  }
  if (!a.trace.empty()) write_chrome_trace(prof, a.trace);
  std::vector<std::pair<std::string, Agg>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(), [](auto& x, auto& y) { return x.second.ms > y.second.ms; });
  double run_avg = total_ms / a.runs;
  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model;
    j["run_ms"] = run_avg;
    j["reference_kernels"] = session.plan().reference_fallbacks().size();
    j["reference_kernel_share"] = total_ms > 0 ? ref_ms / total_ms : 0.0;
    for (auto& [op, g] : rows) {
      j["ops"].push_back({{"op", op},
                          {"kernels", g.count / a.runs},
                          {"reference_kernels", g.ref / a.runs},
                          {"ms", g.ms / a.runs}});
    }
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "profile of " << a.model << ": " << a.runs << " runs, " << std::fixed
              << std::setprecision(3) << run_avg << " ms per run\n";
    // "ref": kernels on the reference kernel although the op has a fast one.
    std::cout << std::left << std::setw(24) << "op" << std::right << std::setw(8) << "kernels"
              << std::setw(6) << "ref" << std::setw(12) << "ms/run" << std::setw(8) << "%"
              << "\n";
    for (auto& [op, g] : rows) {
      std::cout << std::left << std::setw(24) << op << std::right << std::setw(8)
                << g.count / a.runs << std::setw(6) << g.ref / a.runs << std::setw(12)
                << g.ms / a.runs << std::setw(8) << std::setprecision(1) << 100.0 * g.ms / total_ms
                << std::setprecision(3) << "\n";
    }
    if (const size_t n = session.plan().reference_fallbacks().size(); n > 0) {
      std::cout << n << " kernel" << (n == 1 ? "" : "s") << " [ref] on the reference kernel though "
                << (n == 1 ? "its op has" : "their ops have")
                << " a fast one: " << std::setprecision(1) << 100.0 * ref_ms / total_ms
                << std::setprecision(3) << "% of the time\n";
    }
    std::vector<size_t> order(prof.steps.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return prof.steps[x].total_ms > prof.steps[y].total_ms; });
    std::cout << "slowest kernels:\n";
    for (size_t i = 0; i < order.size() && static_cast<int>(i) < a.top; ++i) {
      const StepProfile& sp = prof.steps[order[i]];
      if (sp.view) continue;
      std::cout << "  " << std::setw(10) << sp.total_ms / a.runs << " ms  " << sp.op << " '"
                << sp.name << "' (" << sp.kernel << (sp.choice.empty() ? "" : ", " + sp.choice)
                << ")" << (sp.reference_fallback ? " [ref]" : "") << "\n";
    }
    if (!a.trace.empty()) std::cout << "wrote Chrome trace " << a.trace << "\n";
  }
  return 0;
}

}  // namespace

Action add_profile(CLI::App& app) {
  auto a = std::make_shared<ProfileArgs>();
  CLI::App* c = app.add_subcommand("profile", "Time every kernel; write a Chrome trace");
  c->add_option("model", a->model, "ONNX model file")->required();
  c->add_option("-o,--output", a->trace, "Write a Chrome trace (Perfetto, chrome://tracing)");
  c->add_option("--input,-i", a->inputs, "Input tensor as NAME=FILE; others are generated")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  c->add_option("--runs", a->runs, "Profiled runs")->check(CLI::Range(1, 100000));
  c->add_option("--warmup", a->warmup, "Untimed runs first")->check(CLI::Range(0, 100000));
  c->add_option("--threads", a->threads, "Threads (0: all cores)")->check(CLI::Range(0, 1024));
  c->add_option("--top", a->top, "How many of the slowest kernels to list");
  add_fusion_flags(c, a->fusion);
  add_shape_flag(c, a->fusion);
  c->add_flag("--json", a->json, "Print the per-op summary as JSON");
  add_strict_flag(c, a->strict);
  return [a] { return profile(*a); };
}

}  // namespace nnfuse::cli
