// nnfuse's C++ API: compile an ONNX model (fuse it), save or inspect the result, and run it.
//
//   nnfuse::CompileOptions opts;
//   opts.switch_file = "fusion_switch.cfg";             // optional
//   nnfuse::Model model = nnfuse::compile("model.onnx", opts);
//   std::cout << model.report_json() << "\n";          // what fused, what did not and why
//   model.save("model.fused.onnx");
//   model.save("model.ort.onnx", nnfuse::SaveFormat::kOnnxRuntime);  // ONNX Runtime runs it
//   nnfuse::Session session(model, {.threads = 2});
//   auto outputs = session.run({{"input", nnfuse::Tensor::borrow(nnfuse::DType::kFloat32,
//                                                                {1, 3, 224, 224}, data)}});
//
// Every failure is an nnfuse::Error (nnfuse/error.h) with the message and kind the CLI prints.
// A Model is immutable and cheap to copy (copies share it); a Session may be run from many
// threads at once, each run with activations of its own.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nnfuse/dtype.h"
#include "nnfuse/error.h"
#include "nnfuse/fusion_pattern.h"
#include "nnfuse/tensor.h"

namespace nnfuse {

struct CompileOptions {
  bool fusion = true;       // false: the graph as imported, no pass run
  std::string switch_file;  // fusion switch file: CANN GE JSON, PassName:off lines or rules JSON
  // Input dims to compile for instead of the model's (symbolic or fixed), same rank: the shape
  // arithmetic then folds and every value gets a static shape.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  std::string dump_format;     // "", yaml, json or dot: the graph after every pass
  std::string dump_dir;        // where dump_format writes ("": the current folder)
  std::string target = "cpu";  // what generated kernels are for: "cpu" (built now) or "cuda"
};

// One output of Model::verify: the fused model's against the unfused one's.
struct OutputCheck {
  std::string name;
  double max_abs_error = 0;
  double max_magnitude = 0;   // the unfused output's largest |value|
  double relative_error = 0;  // max_abs_error / max_magnitude
  bool pass = false;          // relative_error <= rtol, shapes and dtypes equal
  std::string problem;        // a shape or dtype mismatch, else ""
};

struct VerifyResult {
  bool pass = false;
  double rtol = 0;
  std::vector<OutputCheck> outputs;
};

// One kernel of a Session::profile, in run order.
struct KernelTime {
  std::string name;    // the node's name (fused nodes: the last node they replaced); for a
                       // layout change, "reorder <value>"
  std::string op;      // its op type (FusedConv, ...); "Reorder"
  std::string kernel;  // what ran it: onednn.conv, cpu.binary, generated, ref, ...
  bool reference_fallback = false;  // the reference kernel, though the op has a fast one
  double ms = 0;                    // mean per run
};

struct Profile {
  int runs = 0;
  double run_ms = 0;                // mean wall time of one run
  std::vector<KernelTime> kernels;  // every kernel launched, in run order
};

class Session;

// How a fused model is written:
//   kNnfuse:      fused nodes as nnfuse's ops (domain ai.nnfuse); nnfuse runs it.
//   kOnnxRuntime: fused nodes as ONNX Runtime's CPU contrib ops (domain com.microsoft) and
//                 standard ONNX ops, so any ONNX Runtime runs it (with its own graph
//                 optimizations disabled, what runs is what nnfuse fused). Needs static shapes
//                 (CompileOptions::input_shapes for a model with symbolic dims); a user fusion
//                 pattern cannot be written so (kUnsupported naming it).
enum class SaveFormat { kNnfuse, kOnnxRuntime };

// A compiled (fused) model.
class Model {
 public:
  // Writes the fused model as ONNX.
  void save(const std::string& path, SaveFormat format = SaveFormat::kNnfuse) const;
  // The fused model's ONNX bytes, as save() writes them.
  std::string serialize(SaveFormat format = SaveFormat::kNnfuse) const;
  // The fusion report as JSON text: fusion_result.json in CANN GE's shape (every pass's
  // matches and effects, every fused node with what it was fused from and its benefit, the
  // matches a pass declined with the reason).
  std::string report_json() const;
  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  size_t num_nodes() const;           // nodes of the fused graph
  size_t num_imported_nodes() const;  // nodes as imported
  // Runs the fused model and the model as imported (same input shapes) on the same seeded
  // generated inputs and compares every output (what `nnfuse verify` does). Inputs of unknown
  // shape need CompileOptions::input_shapes.
  VerifyResult verify(double rtol = 1e-4, uint32_t seed = 0) const;

  struct Impl;  // opaque
  explicit Model(std::shared_ptr<const Impl> impl);

 private:
  std::shared_ptr<const Impl> impl_;
  friend class Session;
};

// Compiles the model at `path` (external data beside it).
Model compile(const std::string& path, const CompileOptions& options = {});
// Compiles a serialized model held in memory (no external data).
Model compile_bytes(const std::string& bytes, const CompileOptions& options = {});

struct SessionOptions {
  int threads = 0;             // the kernels' threads (0: every core)
  bool strict = false;         // refuse a compute op on the reference kernel (kUnsupported)
  bool warn_fallbacks = true;  // name such ops on stderr
  // A model whose inputs have symbolic dims (batch, sequence) is compiled again for each input-
  // shape signature it is run with, so every value has a static shape and runs on fast kernels;
  // this many plans are kept, the least recently used evicted.
  size_t plan_cache = 8;
};

// A compiled model planned for running: kernels chosen, weights prepacked, memory laid out.
class Session {
 public:
  explicit Session(const Model& model, const SessionOptions& options = {});
  // Runs the model on named inputs (every input the model declares; borrowed tensors are read
  // in place) and returns its outputs by name. Safe to call from many threads at once.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;
  // Times every kernel over `runs` runs (after `warmup` untimed ones) on `inputs`, completed with
  // seeded generated tensors for the inputs not given; with a `trace_path`, writes the runs
  // as a Chrome trace there (Perfetto, chrome://tracing).
  Profile profile(const std::map<std::string, Tensor>& inputs = {}, int runs = 10,
                  const std::string& trace_path = "", int warmup = 2) const;
  const Model& model() const { return model_; }

 private:
  struct Impl;
  Model model_;
  std::shared_ptr<Impl> impl_;
};

}  // namespace nnfuse
