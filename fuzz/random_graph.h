// Random small graphs for the fuzzers: the shapes the fusion rules match (Conv-BN-activation
// blocks, MatMul-bias-activation, GELU and LayerNorm exporter forms, attention with masks,
// elementwise and reduction chains; with `quantized`, the same rounded to 8-bit grids in every
// form ONNX tools write) and their near misses, on random shapes with 1s, primes and
// broadcasting. Every choice is drawn from a Chooser, so the same choices build the same
// graph: libFuzzer drives it from its bytes (fuzz_graph), the differential fuzzer from a seed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ir/graph.h"

namespace nnfuse::fuzz {

// Returns a number in [0, n) for n >= 1.
using Chooser = std::function<uint32_t(uint32_t n)>;

struct RandomGraphOptions {
  int max_steps = 8;       // building steps (an op or a whole pattern each)
  bool any_order = true;   // steps may take any earlier value, not only the last one
  bool quantized = false;  // half the steps are quantized patterns (QDQ, QOperator, dynamic)
};

// Builds a graph with float32 inputs of static shape and every value's shape inferred. Returns
// nullptr when the choices led to a graph shape inference refuses (an op applied to shapes it
// does not accept): the caller draws again.
std::unique_ptr<Graph> random_graph(const Chooser& choose, const RandomGraphOptions& opts = {});

// A one-line description of a graph's nodes ("Conv(x)->BatchNormalization->Relu; ..."), for
// reports.
std::string describe_graph(const Graph& g);

}  // namespace nnfuse::fuzz
