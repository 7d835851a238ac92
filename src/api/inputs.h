// Inputs for running a model without given data: benchmarks, profiles, verification.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace nnfuse {

// `given`, completed with seeded generated tensors for the graph's other runtime inputs:
// floats in [-1, 1); integer indices below the size of the table they index (through a Gather,
// possibly behind Cast/Unsqueeze/Reshape/Flatten); inputs named like masks all 1; booleans
// random. An input of unknown shape or another type is an error naming it.
std::map<std::string, Tensor> complete_inputs(const Graph& g, std::map<std::string, Tensor> given,
                                              uint32_t seed);

}  // namespace nnfuse
