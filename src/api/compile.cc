#include "api/compile.h"

#include <chrono>
#include <filesystem>

#include "config/switches.h"
#include "ir/dump.h"
#include "ir/error.h"
#include "ir/progress.h"
#include "onnx/importer.h"
#include "passes/auto_fuse/auto_fuse.h"
#include "passes/pipeline.h"
#include "shape/shape_inference.h"

namespace nnfuse {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

FusionSwitches load_switches(const std::string& path) {
  FusionSwitches switches;
  if (path.empty()) return switches;
  switches = FusionSwitches::load(path, list_passes(), pass_op_lists());
  for (const UserRule& rule : switches.user_rules()) {
    if (std::string why = user_rule_problem(rule); !why.empty()) {
      fail(ErrorKind::kInvalidArgument, path, ": rule '", rule.name, "': ", why);
    }
  }
  return switches;
}

// True when some node's output has no element type after import.
bool has_untyped_values(const Graph& g) {
  for (const Node* n : g.nodes()) {
    for (const Value* v : n->outputs()) {
      if (v && v->dtype() == DType::kUndefined) return true;
    }
  }
  return false;
}

template <typename Load>
CompileResult compile_with(Load&& load, const CompileOptions& o) {
  const auto t0 = Clock::now();
  if (!o.dump_dir.empty() && o.dump_format.empty()) {
    fail(ErrorKind::kInvalidArgument, "a dump folder needs a dump format (yaml, json or dot)");
  }
  // The switch file first: a bad one is refused before the model is read.
  const FusionSwitches switches = o.fusion ? load_switches(o.switch_file) : FusionSwitches();
  ImportOptions io;
  io.input_shapes = o.input_shapes;
  CompileResult r;
  {
    // On a terminal, while a large model is read: "loading model  2.1 s".
    Progress progress("loading model", 0);
    progress.keep_ticking();
    r.graph = load(io);
    // Exported dynamic shapes are computed by Shape -> Gather -> ... -> Reshape subgraphs, which
    // fold to constants once the inputs are static, every value's shape inferred on the way.
    if (!o.input_shapes.empty()) {
      shape::infer_and_fold(*r.graph);
    } else if (has_untyped_values(*r.graph)) {
      // ONNX's inference knows no op of nnfuse's domain (an imported MatMulNBits): its outputs
      // and what follows them are typed by the ops' own rules, in order.
      for (Node* n : r.graph->nodes()) shape::infer_node(*r.graph, n);
    }
  }
  r.imported_nodes = r.graph->num_nodes();
  const auto t1 = Clock::now();
  r.load_s = seconds(t0, t1);
  const std::string dir = o.dump_dir.empty() ? "." : o.dump_dir;
  if (!o.fusion) {
    if (!o.dump_format.empty()) {
      std::filesystem::create_directories(dir);
      dump_graph(*r.graph, o.dump_format, dir + "/00_imported." + o.dump_format);
    }
    return r;
  }
  PipelineOptions po;
  po.switches = &switches;
  po.dump_format = o.dump_format;
  po.dump_dir = o.dump_format.empty() ? "" : dir;
  po.target = o.target;
  r.report = run_pipeline(*r.graph, po);
  r.fuse_s = seconds(t1, Clock::now());
  return r;
}

}  // namespace

CompileResult compile_model_file(const std::string& path, const CompileOptions& options) {
  return compile_with([&](const ImportOptions& io) { return load_onnx(path, io); }, options);
}

CompileResult compile_model_bytes(const std::string& bytes, const std::string& label,
                                  const std::string& base_dir, const CompileOptions& options) {
  return compile_with(
      [&](const ImportOptions& io) { return load_onnx_from_string(bytes, base_dir, label, io); },
      options);
}

}  // namespace nnfuse
