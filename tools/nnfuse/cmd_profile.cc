// nnfuse profile MODEL.onnx -o trace.json: per-kernel times as a Chrome trace and a summary.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

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

std::string step_op(const PlanStep& s) {
  if (s.kind == PlanStep::Kind::kReorder) return "Reorder";
  return s.node->op_type();
}

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
  for (int i = 0; i < a.warmup; ++i) session.run(feeds);
  const auto& steps = session.plan().steps();
  struct Agg {
    int count = 0, ref = 0;  // ref: of them on the reference kernel, the op having a fast one
    double ms = 0;
  };
  std::map<std::string, Agg> by_op;
  std::vector<double> per_step(steps.size(), 0);
  nlohmann::json events = nlohmann::json::array();
  double offset_ms = 0, total_ms = 0, ref_ms = 0;
  for (int r = 0; r < a.runs; ++r) {
    std::vector<StepTiming> t;
    auto s = std::chrono::steady_clock::now();
    session.run(feeds, &t);
    double run_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
    for (const StepTiming& st : t) {
      const PlanStep& ps = steps[st.step];
      std::string op = step_op(ps);
      std::string name = ps.kind == PlanStep::Kind::kReorder
                             ? "reorder " + session.plan().values()[ps.inputs[0]].name
                             : ps.node->name();
      events.push_back({{"name", name},
                        {"cat", op},
                        {"ph", "X"},
                        {"pid", 1},
                        {"tid", 1},
                        {"ts", (offset_ms + st.start_ms) * 1000.0},
                        {"dur", st.ms * 1000.0},
                        {"args",
                         {{"op", op},
                          {"kernel", ps.kernel_name},
                          {"reference_fallback", ps.reference_fallback},
                          {"run", r}}}});
      if (ps.kind != PlanStep::Kind::kView) {
        by_op[op].count++;
        by_op[op].ref += ps.reference_fallback;
        by_op[op].ms += st.ms;
        ref_ms += ps.reference_fallback ? st.ms : 0.0;
      }
      per_step[st.step] += st.ms;
    }
    offset_ms += run_ms + 0.05;
    total_ms += run_ms;
  }
  if (!a.trace.empty()) {
    std::ofstream f(a.trace);
    if (!f) fail(ErrorKind::kInvalidArgument, "-o '", a.trace, "': cannot write the file");
    f << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
  }
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
    std::vector<size_t> order(steps.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return per_step[x] > per_step[y]; });
    std::cout << "slowest kernels:\n";
    for (size_t i = 0; i < order.size() && static_cast<int>(i) < a.top; ++i) {
      const PlanStep& ps = steps[order[i]];
      if (ps.kind == PlanStep::Kind::kView) continue;
      std::cout << "  " << std::setw(10) << per_step[order[i]] / a.runs << " ms  " << step_op(ps)
                << " '" << (ps.node ? ps.node->name() : "output") << "' (" << ps.kernel_name << ")"
                << (ps.reference_fallback ? " [ref]" : "") << "\n";
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
