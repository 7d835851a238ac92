// The `nnfuse` subcommands. Each registers its options on the app and returns the action to
// run when it is selected.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>

#include "api/compile.h"
#include "api/inputs.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "onnx/importer.h"
#include "passes/pass.h"
#include "runtime/plan_cache.h"

namespace nnfuse::cli {

// Exit codes: 0 success, 1 error, 2 bad command line, 3 model uses something unsupported.
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnsupported = 3;

using Action = std::function<int()>;

Action add_run(CLI::App& app);
Action add_info(CLI::App& app);
Action add_bench(CLI::App& app);
Action add_compile(CLI::App& app);
Action add_verify(CLI::App& app);
Action add_list_passes(CLI::App& app);
Action add_list_ops(CLI::App& app);
Action add_explain(CLI::App& app);
Action add_report(CLI::App& app);
Action add_calibrate(CLI::App& app);

// Fusion flags shared by compile, run, bench and verify.
struct FusionFlags {
  bool no_fusion = false;
  std::string switch_file;
  std::string dump_graph;  // yaml | json | dot
  std::string debug_path;
  std::vector<std::string> shapes;  // --shape NAME=d0,d1,... (where add_shape_flag offers it)
  std::string dump_kernels;         // --dump-kernels DIR: every generated kernel's source
  std::string target = "cpu";       // --target (compile): what generated kernels are for
};
void add_fusion_flags(CLI::App* c, FusionFlags& f);
// Writes the source of every FusedRegion node of `g` into `dir` (C++ for the cpu target, CUDA
// for cuda), one file per node named after it; returns how many.
size_t dump_kernel_sources(const Graph& g, const std::string& dir, const std::string& target);
// --shape NAME=d0,d1,...: run with other input dims than the model's.
void add_shape_flag(CLI::App* c, FusionFlags& f);
// --strict (run, bench, profile, verify): a compute op on the reference kernel is an error.
inline void add_strict_flag(CLI::App* c, bool& strict) {
  c->add_flag("--strict", strict,
              "Refuse (exit 3) when a compute op (Conv, MatMul, pooling, a normalization, "
              "attention, ...) would run on the reference kernel");
}
// The --shape values as import options (errors name the flag).
ImportOptions import_options(const FusionFlags& f);
// `format`: "nnfuse" or "ort" (ExportFormat).
// `measure_runs` > 0: the fused and unfused models profiled that many runs each, the measured
// figures and precision checks added to the report (api/insight.h).
int compile_model(const std::string& model, const std::string& output, const std::string& report,
                  const FusionFlags& fusion, bool json, const std::string& format = "nnfuse",
                  int measure_runs = 0);
// Loads the model and, unless --no-fusion, runs the pass pipeline on it.
// Seconds spent loading (import and shape specialization) and fusing (the pass pipeline,
// generated kernels built or found in the cache included).
struct FuseTimes {
  double load_s = 0, fuse_s = 0;
};
std::unique_ptr<Graph> load_and_fuse(const std::string& model, const FusionFlags& f,
                                     FusionReport* report = nullptr,
                                     size_t* imported_nodes = nullptr, FuseTimes* times = nullptr);
Action add_profile(CLI::App& app);

// The model's runtime inputs as it declares them (symbolic dims kept).
std::vector<InputDecl> declared_inputs(const std::string& model);
// --shape NAME=d0,d1,... values pinning each input to `shapes`.
std::vector<std::string> shape_specs(const PlanCache::Shapes& shapes);
// Loads and fuses the model (load_and_fuse); when `f` has no --shape and the model's inputs
// have symbolic dims, loads the inputs given as NAME=FILE into `feeds` (checked against the
// declarations) and loads the model again specialized to their shapes, so that it runs on
// fast kernels. `feeds` is left empty otherwise: the caller loads the inputs after building
// its session, so that a model's own errors come first.
std::unique_ptr<Graph> load_for_inputs(const std::string& model, FusionFlags f,
                                       const std::vector<std::string>& input_specs,
                                       std::map<std::string, Tensor>& feeds,
                                       size_t* imported_nodes = nullptr);
// A plan cache over the model: each input-shape signature is imported with those dims (every
// value static), fused with `f` and planned with `opts`; at most `capacity` plans are kept.
std::unique_ptr<PlanCache> make_plan_cache(const std::string& model, const FusionFlags& f,
                                           const PlanOptions& opts, size_t capacity);

// Parses NAME=FILE pairs and loads each tensor (.npy or .pb).
std::map<std::string, Tensor> load_inputs(const std::vector<std::string>& specs);
// Inputs for benchmarking: complete_inputs (api/inputs.h) fills in what no file gives.
using nnfuse::complete_inputs;

// "float32[1, 1000] min -1.2 max 3.4 mean 0.01: 0.1 0.2 ..."
std::string summarize(const Tensor& t);

}  // namespace nnfuse::cli
