// The shapes an exporter declares for a Loop body's loop-carried inputs are often those of the
// first iteration only: PyTorch's scripted export traces a KV cache that grows by a position a
// step as [4, 16, 32] in the body, and its outputs as symbolic. The reference kernels never read
// the declarations, but a subgraph planned once (kernels/cpu/cpu_control_flow.cc) chooses its
// kernels by them. Before shape inference, every dim of a carried input (a Loop's, or a Scan's
// state) that the body's matching output does not declare as the same fixed size becomes
// unknown, and inference then carries that through the body.
#pragma once

#include <cstddef>

namespace onnx {
class GraphProto;
}

namespace nnfuse {

// Relaxes the carried inputs of every Loop and Scan body in `g`, at any depth; returns the
// number of dims made unknown.
size_t relax_loop_carried_shapes(onnx::GraphProto& g);

}  // namespace nnfuse
