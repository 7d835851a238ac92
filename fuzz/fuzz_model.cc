// An ONNX model from the fuzzer's bytes through everything before running it: parsing, import
// (opset upgrades, subgraphs, initializers), shape inference, canonicalization, every fusion
// pass and the execution plan. A typed nnfuse::Error is the expected way to refuse a bad model;
// any other exception, a crash, a leak or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/compile.h"
#include "fuzz_common.h"
#include "ir/error.h"
#include "runtime/plan.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nnfuse::fuzz::init_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    nnfuse::CompileResult r = nnfuse::compile_model_bytes(bytes, "fuzz.onnx", "");
    nnfuse::PlanOptions po;
    po.threads = 1;
    po.warn_fallbacks = false;
    nnfuse::ExecutionPlan plan(*r.graph, po);
  } catch (const nnfuse::Error&) {
  }
  return 0;
}
