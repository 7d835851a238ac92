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
  bool json = false, reference = false;
  uint32_t seed = 0;
};

int bench(const BenchArgs& a) {
  auto t0 = std::chrono::steady_clock::now();
  PlanOptions opts;
  opts.threads = a.threads;
  opts.reference_only = a.reference;
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
  nlohmann::json j;
  j["model"] = a.model;
  j["threads"] = num_threads();
  j["runs"] = a.runs;
  j["fusion"] = !a.fusion.no_fusion;
  j["reference_kernels"] = a.reference;
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
  c->add_flag("--json", a->json, "Print one JSON object");
  add_shape_flag(c, a->fusion);
  return [a] { return bench(*a); };
}

}  // namespace nnfuse::cli
