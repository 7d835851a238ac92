// nnfuse bench MODEL.onnx [--runs N] [--warmup W] [--threads T] [--no-fusion] [--json]
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/progress.h"
#include "kernels/kernel.h"
#include "onnx/importer.h"
#include "runtime/session.h"
#include "runtime/threads.h"
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
  std::vector<std::string> shape_sets;  // --shape-cycle: one set of NAME=dims per entry
  size_t plan_cache = 8;
};

// "input_ids=1,32 attention_mask=1,32" (or ';'-separated) -> name -> dims.
PlanCache::Shapes parse_shape_set(const std::string& set) {
  FusionFlags f;
  std::string item;
  for (char c : set + " ") {
    if (c == ' ' || c == ';') {
      if (!item.empty()) f.shapes.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  if (f.shapes.empty()) fail(ErrorKind::kInvalidArgument, "--shape-cycle '", set, "' is empty");
  PlanCache::Shapes shapes;
  for (auto& [name, dims] : import_options(f).input_shapes) shapes[name] = dims;
  return shapes;
}

std::string shape_set_str(const PlanCache::Shapes& s) {
  std::string r;
  for (const std::string& spec : shape_specs(s)) r += (r.empty() ? "" : " ") + spec;
  return r;
}

// Runs through the shape sets in turn, ROUNDS = runs times, on one plan cache: the first run
// at each set builds its plan; the others reuse it (or rebuild it when the cache is smaller
// than the number of sets).
int bench_cycle(const BenchArgs& a) {
  if (!a.fusion.shapes.empty()) {
    fail(ErrorKind::kInvalidArgument, "--shape-cycle and --shape cannot be given together");
  }
  PlanOptions opts;
  opts.threads = a.threads;
  opts.reference_only = a.reference;
  opts.strict = a.strict;
  // Every shape set's plan shares the measured kernel choices.
  opts.kernel_choices = std::make_shared<KernelChoices>();
  auto cache = make_plan_cache(a.model, a.fusion, opts, a.plan_cache);
  std::vector<PlanCache::Shapes> sets;
  for (const std::string& s : a.shape_sets) sets.push_back(parse_shape_set(s));
  const auto given = load_inputs(a.inputs);
  std::vector<std::map<std::string, Tensor>> feeds;
  std::vector<double> first_ms;
  std::vector<size_t> kernels, reference_kernels;
  Progress planning("bench: shape set", static_cast<int64_t>(sets.size()));
  for (PlanCache::Shapes& s : sets) {
    planning.update(static_cast<int64_t>(feeds.size()) + 1);
    // Inputs the set does not name keep the given file's dims, or the model's fixed ones.
    for (const InputDecl& d : cache->inputs()) {
      if (s.count(d.name)) continue;
      if (auto it = given.find(d.name); it != given.end()) {
        s[d.name] = it->second.shape();
      } else if (d.shape.fully_known()) {
        s[d.name] = d.shape.static_dims();
      } else {
        fail(ErrorKind::kInvalidArgument, "--shape-cycle '", shape_set_str(s), "': input '", d.name,
             "' has shape ", d.shape.str(), "; give its dims too");
      }
    }
    // The first run at each set builds its plan; the feeds are generated for its graph.
    auto t0 = std::chrono::steady_clock::now();
    PlanSession& session = cache->session_for_shapes(s);
    feeds.push_back(complete_inputs(session.graph(), given, a.seed));
    session.run(feeds.back());
    first_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    kernels.push_back(session.plan().num_kernels());
    reference_kernels.push_back(session.plan().reference_fallbacks().size());
  }
  planning.finish();
  {
    Progress progress("bench: warm-up", a.warmup);
    for (int w = 0; w < a.warmup; ++w) {
      progress.update(w + 1);
      for (const auto& f : feeds) cache->run(f);
    }
  }
  std::vector<std::vector<double>> ms(sets.size());
  Progress progress("bench: run", a.runs);
  for (int r = 0; r < a.runs; ++r) {
    progress.update(r + 1);
    for (size_t i = 0; i < sets.size(); ++i) {
      auto s = std::chrono::steady_clock::now();
      cache->run(feeds[i]);
      ms[i].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
    }
  }
  progress.finish();
  nlohmann::json j;
  j["model"] = a.model;
  j["threads"] = plan_threads(a.threads);
  j["runs"] = a.runs;
  j["plan_cache_capacity"] = cache->capacity();
  j["plans_built"] = cache->builds();
  j["plans_held"] = cache->size();
  j["shape_sets"] = nlohmann::json::array();
  for (size_t i = 0; i < sets.size(); ++i) {
    std::sort(ms[i].begin(), ms[i].end());
    nlohmann::json e;
    e["shapes"] = shape_set_str(sets[i]);
    e["first_run_ms"] = first_ms[i];
    e["median_ms"] = ms[i][ms[i].size() / 2];
    e["min_ms"] = ms[i].front();
    e["kernels"] = kernels[i];
    e["reference_kernels"] = reference_kernels[i];
    j["shape_sets"].push_back(e);
  }
  if (a.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  for (const auto& e : j["shape_sets"]) {
    std::cout << e["shapes"].get<std::string>() << ": median " << e["median_ms"].get<double>()
              << " ms, first run " << e["first_run_ms"].get<double>() << " ms (planning), "
              << e["kernels"].get<size_t>() << " kernels, " << e["reference_kernels"].get<size_t>()
              << " on reference kernels\n";
  }
  std::cout << "plans built " << cache->builds() << ", held " << cache->size() << " of "
            << cache->capacity() << "\n";
  return 0;
}

// The share of the run time spent in steps on the reference kernel although their op has a
// fast kernel, from `runs` runs timed per step (as `nnfuse profile` times them), apart from
// the timed runs so that those carry no per-step timing.
double reference_share(PlanSession& session, const std::map<std::string, Tensor>& feeds, int runs) {
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
  if (!a.shape_sets.empty()) return bench_cycle(a);
  auto t0 = std::chrono::steady_clock::now();
  PlanOptions opts;
  opts.threads = a.threads;
  opts.reference_only = a.reference;
  opts.strict = a.strict;
  size_t nodes = 0;
  // A model with symbolic dims is specialized to the shapes of the inputs given.
  std::map<std::string, Tensor> given;
  auto graph = a.reference ? load_and_fuse(a.model, a.fusion, nullptr, &nodes)
                           : load_for_inputs(a.model, a.fusion, a.inputs, given, &nodes);
  if (given.empty()) given = load_inputs(a.inputs);
  size_t fused_nodes = graph->num_nodes();
  PlanSession session(std::move(graph), opts);
  double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto feeds = complete_inputs(session.graph(), given, a.seed);
  if (!a.json) {
    std::cerr << "bench " << a.model << ": " << a.warmup << " warm-up + " << a.runs
              << " timed runs on " << session.plan().num_threads() << " threads\n";
  }
  {
    // On a terminal: "bench: warm-up 2/3  0.4 s", then "bench: run 140/200  3.4 s".
    Progress progress("bench: warm-up", a.warmup);
    for (int i = 0; i < a.warmup; ++i) {
      progress.update(i + 1);
      session.run(feeds);
    }
  }
  const size_t plans_before = subgraph_plans_made();
  std::vector<double> ms;
  Progress progress("bench: run", a.runs);
  for (int i = 0; i < a.runs; ++i) {
    progress.update(i + 1);  // before the clock starts: drawing is not timed
    auto s = std::chrono::steady_clock::now();
    session.run(feeds);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  progress.finish();
  const size_t plans_while_running = subgraph_plans_made() - plans_before;
  std::sort(ms.begin(), ms.end());
  const ExecutionPlan& plan = session.plan();
  const size_t fallbacks = plan.reference_fallbacks().size();
  const double share = fallbacks ? reference_share(session, feeds, std::min(a.runs, 5)) : 0.0;
  nlohmann::json j;
  j["model"] = a.model;
  j["threads"] = session.plan().num_threads();
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
  j["scratch_bytes"] = plan.scratch_bytes();
  j["kernel_histogram"] = plan.kernel_histogram();
  j["reference_kernels"] = fallbacks;
  j["reference_kernel_share"] = share;
  // If, Loop and Scan bodies planned during the timed runs: 0, each is planned with the model.
  j["subgraphs_planned_while_running"] = plans_while_running;
  if (a.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "median " << ms[ms.size() / 2] << " ms, min " << ms.front() << " ms, max "
            << ms.back() << " ms\n"
            << "nodes " << nodes << ", kernels per inference " << plan.num_kernels() << " ("
            << plan.num_reorders() << " layout reorders)\n"
            << "peak activation bytes " << plan.peak_activation_bytes() << " (all activations "
            << plan.total_activation_bytes() << "), kernels' shared scratch "
            << plan.scratch_bytes() << " bytes\nkernels used:";
  for (auto& [k, n] : plan.kernel_histogram()) std::cout << " " << k << "=" << n;
  std::cout << "\nreference kernels for compute ops or ops with a fast kernel: " << fallbacks;
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
  c->add_option("--shape-cycle", a->shape_sets,
                "A set of input dims, 'NAME=d0,d1 NAME2=...' (repeatable): the timed runs go "
                "through the sets in turn on one plan cache, one plan per set")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  c->add_option("--plan-cache", a->plan_cache,
                "Plans (one per input-shape set) kept by --shape-cycle; least recently used "
                "evicted")
      ->check(CLI::Range(1, 1024));
  return [a] { return bench(*a); };
}

}  // namespace nnfuse::cli
