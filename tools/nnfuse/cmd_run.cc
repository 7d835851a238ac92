// nnfuse run MODEL.onnx --input NAME=FILE ... [--output-dir DIR] [--runs N]
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "ir/error.h"
#include "onnx/importer.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "tools/nnfuse/commands.h"

namespace nnfuse::cli {

namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  FusionFlags fusion;
  bool reference = false, strict = false;
  int runs = 1, threads = 0;
};

int run(const RunArgs& a) {
  namespace fs = std::filesystem;
  auto t0 = std::chrono::steady_clock::now();
  PlanOptions opts;
  opts.threads = a.threads;
  opts.reference_only = a.reference;
  opts.strict = a.strict;
  // A model with symbolic dims is specialized to the inputs' shapes (static shapes, fast
  // kernels); the reference kernels run it as it is.
  std::map<std::string, Tensor> feeds;
  PlanSession session(a.reference ? load_and_fuse(a.model, a.fusion)
                                  : load_for_inputs(a.model, a.fusion, a.inputs, feeds),
                      opts);
  if (feeds.empty()) feeds = load_inputs(a.inputs);
  auto t1 = std::chrono::steady_clock::now();
  if (!a.output_dir.empty()) {
    std::error_code ec;
    fs::create_directories(a.output_dir, ec);
    if (ec || !fs::is_directory(a.output_dir)) {
      fail(ErrorKind::kInvalidArgument, "--output-dir '", a.output_dir, "': cannot create it");
    }
  }
  std::vector<Tensor> outs;
  std::vector<double> ms;
  for (int r = 0; r < a.runs; ++r) {
    auto s = std::chrono::steady_clock::now();
    outs = session.run(feeds);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  const auto& outputs = session.graph().outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string& name = outputs[i]->name();
    std::cout << "output " << name << ": " << summarize(outs[i]) << "\n";
    if (!a.output_dir.empty()) {
      std::string file = name;
      std::replace(file.begin(), file.end(), '/', '_');
      save_npy((fs::path(a.output_dir) / (file + ".npy")).string(), outs[i]);
    }
  }
  std::sort(ms.begin(), ms.end());
  double load_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  std::cout << "load " << load_ms << " ms; run (" << a.runs << "x, "
            << (a.reference ? "reference kernels" : "fast kernels")
            << (a.fusion.no_fusion ? ", no fusion" : "") << "): median " << ms[ms.size() / 2]
            << " ms, min " << ms.front() << " ms\n";
  if (!a.output_dir.empty())
    std::cout << "wrote " << outs.size() << " outputs to " << a.output_dir << "\n";
  return 0;
}

}  // namespace

Action add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* c = app.add_subcommand("run", "Run a model on input tensors and write its outputs");
  c->add_option("model", a->model, "ONNX model file")->required();
  c->add_option("--input,-i", a->inputs,
                "Input tensor as NAME=FILE (.npy or ONNX TensorProto .pb); repeat per input")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  c->add_option("--output-dir,-o", a->output_dir,
                "Write every graph output to DIR/<output name>.npy");
  add_fusion_flags(c, a->fusion);
  add_shape_flag(c, a->fusion);
  c->add_flag("--reference", a->reference, "Use only the reference kernels (the oracle)");
  add_strict_flag(c, a->strict);
  c->add_option("--threads", a->threads, "Threads (0: all cores)")->check(CLI::Range(0, 1024));
  c->add_option("--runs", a->runs, "Run this many times and report the median time")
      ->check(CLI::Range(1, 1000000));
  return [a] { return run(*a); };
}

}  // namespace nnfuse::cli
