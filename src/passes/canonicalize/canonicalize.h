// Canonicalization passes: they make graphs from different exporters look alike before
// fusion, and never change what the graph computes.
#pragma once

#include <memory>

#include "passes/pass.h"

namespace nnfuse {

// Nodes whose inputs are all constants are evaluated once (with the reference kernels) and
// replaced by their values: f(c1, ..., cn) == constant.
std::unique_ptr<Pass> make_constant_folding_pass();
// Identity(x) == x, inference Dropout(x) == x and a 1x1, stride-1, unpadded pool(x) == x:
// uses of the output read x instead.
std::unique_ptr<Pass> make_identity_elimination_pass();
// Shape(x) and Size(x) of statically shaped x are constants; with constant folding this
// folds the Shape -> Gather -> Concat -> Reshape subgraphs exporters emit.
std::unique_ptr<Pass> make_shape_folding_pass();
// Gather(Transpose(x), scalar index) == Transpose(Gather(x, index)) on the smaller slice, the
// Transpose left out where the slice keeps its order.
std::unique_ptr<Pass> make_transpose_gather_pass();
// A float32 Einsum of one or two static-shaped operands is the ReduceSum, Transpose, Reshape and
// MatMul nodes it stands for (einsum(A, B) == matmul(A laid out [batch, M, K], B laid out
// [batch, K, N]) laid out as the output), so it runs on the fast MatMul kernels.
std::unique_ptr<Pass> make_einsum_lowering_pass();

}  // namespace nnfuse
