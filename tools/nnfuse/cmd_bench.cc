// nnfuse bench MODEL.onnx [--runs N] [--warmup W] [--threads T] [--no-fusion] [--json]
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "onnx/importer.h"
#include "runtime/session.h"
#include "tools/nnfuse/commands.h"

namespace nnfuse::cli {

namespace {

struct BenchArgs {
  std::string model;
  std::vector<std::string> inputs;
  int runs = 20, warmup = 3, threads = 0;
  FusionFlags fusion;
  bool json = false, reference = false, strict = false;
  uint32_t seed = 0;
};

// The share of the run time spent in steps on the reference kernel although their op has a
// fast kernel, from `runs` runs timed per step (as `nnfuse profile` times them), apart from
// the timed runs so that those carry no per-step timing.
double reference_share(Session& session, const std::map<std::string, Tensor>& feeds, int runs) {
  const auto& steps = session.plan().steps();
  double ref_ms = 0, all_ms = 0;
  std::vector<StepTiming> t;
  for (int r = 0; r < runs; ++r) {
    session.run(feeds, &t);
    for (const StepTiming& st : t) {
      all_ms += st.ms;
      if (steps[st.step].reference_fallback) ref_ms += st.ms;
    }
  }
  return all_ms > 0 ? ref_ms / all_ms : 0.0;
}

int bench(const BenchArgs& a) {
  auto t0 = std::chrono::steady_clock::now();
  PlanOptions opts;
  opts.threads = a.threads;
  opts.reference_only = a.reference;
  opts.strict = a.strict;
  size_t nodes = 0;
  auto graph = load_and_fuse(a.model, a.fusion, nullptr, &nodes);
  size_t fused_nodes = graph->num_nodes();
  Session session(std::move(graph), opts);
  double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto feeds = complete_inputs(session.graph(), load_inputs(a.inputs), a.seed);
  if (!a.json) {
    std::cerr << "bench " << a.model << ": " << a.warmup << " warm-up + " << a.runs
              << " timed runs on " << num_threads() << " threads\n";
  }
  for (int i = 0; i < a.warmup; ++i) session.run(feeds);
  std::vector<double> ms;
  for (int i = 0; i < a.runs; ++i) {
    auto s = std::chrono::steady_clock::now();
    session.run(feeds);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(ms.begin(), ms.end());
  const ExecutionPlan& plan = session.plan();
  const size_t fallbacks = plan.reference_fallbacks().size();
  const double share = fallbacks ? reference_share(session, feeds, std::min(a.runs, 5)) : 0.0;
  nlohmann::json j;
  j["model"] = a.model;
  j["threads"] = num_threads();
  j["runs"] = a.runs;
  j["fusion"] = !a.fusion.no_fusion;
  j["reference_only"] = a.reference;
  j["load_ms"] = load_ms;
  j["median_ms"] = ms[ms.size() / 2];
  j["min_ms"] = ms.front();
  j["max_ms"] = ms.back();
  j["kernels"] = plan.num_kernels();
  j["reorders"] = plan.num_reorders();
  j["nodes"] = nodes;
  j["nodes_after_passes"] = fused_nodes;
  j["peak_activation_bytes"] = plan.peak_activation_bytes();
  j["total_activation_bytes"] = plan.total_activation_bytes();
  j["kernel_histogram"] = plan.kernel_histogram();
  j["reference_kernels"] = fallbacks;
  j["reference_kernel_share"] = share;
  if (a.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "median " << ms[ms.size() / 2] << " ms, min " << ms.front() << " ms, max "
            << ms.back() << " ms\n"
            << "nodes " << nodes << ", kernels per inference " << plan.num_kernels() << " ("
            << plan.num_reorders() << " layout reorders)\n"
            << "peak activation bytes " << plan.peak_activation_bytes() << " (all activations "
            << plan.total_activation_bytes() << ")\nkernels used:";
  for (auto& [k, n] : plan.kernel_histogram()) std::cout << " " << k << "=" << n;
  std::cout << "\nreference kernels for ops with a fast kernel: " << fallbacks;
  if (fallbacks) std::cout << " (" << 100.0 * share << "% of the time)";
  std::cout << "\n";
  return 0;
}

}  // namespace

Action add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* c = app.add_subcommand("bench", "Time a model on generated or given inputs");
  c->add_option("model", a->model, "ONNX model file")->required();
  c->add_option("--input,-i", a->inputs, "Input tensor as NAME=FILE; others are generated")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  c->add_option("--runs", a->runs, "Timed runs (median, min and max are reported)")
      ->check(CLI::Range(1, 1000000));
  c->add_option("--warmup", a->warmup, "Untimed runs first")->check(CLI::Range(0, 1000000));
  c->add_option("--threads", a->threads, "Threads (0: all cores)")->check(CLI::Range(0, 1024));
  c->add_option("--seed", a->seed, "Seed for generated inputs");
  add_fusion_flags(c, a->fusion);
  c->add_flag("--reference", a->reference, "Use only the reference kernels");
  add_strict_flag(c, a->strict);
  c->add_flag("--json", a->json, "Print one JSON object");
  add_shape_flag(c, a->fusion);
  return [a] { return bench(*a); };
}

}  // namespace nnfuse::cli
