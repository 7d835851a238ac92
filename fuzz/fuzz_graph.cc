// Random graphs built from the fuzzer's bytes (random_graph.h: the shapes the fusion rules
// match and their near misses, quantized patterns too when the first byte is odd) through the
// pattern matcher and every fusion pass, then the execution plan. Each pass's rewrite must leave a
// graph the verifier accepts and the planner can run; a typed nnfuse::Error is the only accepted
// refusal.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "ir/error.h"
#include "passes/pipeline.h"
#include "random_graph.h"
#include "runtime/plan.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nnfuse::fuzz::init_environment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  auto choose = [&](uint32_t n) { return fdp.ConsumeIntegralInRange<uint32_t>(0, n - 1); };
  nnfuse::fuzz::RandomGraphOptions opts;
  opts.quantized = size > 0 && (data[0] & 1) != 0;
  std::unique_ptr<nnfuse::Graph> g = nnfuse::fuzz::random_graph(choose, opts);
  if (!g) return 0;
  try {
    nnfuse::run_pipeline(*g);
    nnfuse::PlanOptions po;
    po.threads = 1;
    po.warn_fallbacks = false;
    nnfuse::ExecutionPlan plan(*g, po);
  } catch (const nnfuse::Error&) {
  }
  return 0;
}
