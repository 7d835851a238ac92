// Static shapes on the IR: one sweep in topological order that folds what is constant (Shape
// and Size of statically shaped values, nodes whose inputs are all constants) and infers every
// other node's output types from its inputs with the op's ONNX inference function, fed the
// values of constant inputs. Each node sees its inputs in their final form, so the sweep
// reaches the fixed point of "fold, then infer again" in one linear pass: the Shape -> Gather
// -> Concat -> Reshape arithmetic exporters write folds away, and every value of a model with
// static inputs gets its static shape.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nnfuse::shape {

// Folding is skipped for results bigger than this: they are cheaper to compute than to store.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 22;

// Shape(x) or Size(x) of a statically shaped x becomes a constant; returns whether it did.
bool fold_shape_of(Graph& g, Node* n);
// A deterministic default-domain node whose inputs are all constants is evaluated with the
// reference kernels and its outputs become constants; returns whether it did. Inputs no other
// node reads are removed from the graph at once.
bool fold_constant(Graph& g, Node* n);
// Infers the node's output dtypes and shapes from its inputs (and the values of its constant
// inputs) with the op's ONNX inference function; an output keeps what it had unless the result
// knows more. Returns whether an output changed. Ops without a schema are left alone.
bool infer_node(const Graph& g, Node* n);

struct SweepStats {
  size_t folded = 0;    // nodes replaced by constants
  size_t inferred = 0;  // nodes whose outputs learned something
};
// The sweep: fold or infer each node in order, then drop what folding left dead.
SweepStats infer_and_fold(Graph& g);

// A node whose inputs all have static shapes but an output of which does not: where a shape
// was lost, and how many values downstream have no static shape because of it.
struct LostShape {
  const Node* node = nullptr;
  std::string value;  // the output without a static shape
  std::string shape;  // as far as it is known ("[1, ?, 64]", "?")
  size_t downstream = 0;
  // Where the node's op makes a dim that only its data decides (NonZero, TopK with a computed k,
  // Compress, NonMaxSuppression, Unique), the bound its static inputs give: "at most 4096 rows
  // (the elements of its input)"; "" otherwise.
  std::string bound;
};

// The bound of a data-dependent dim that node `n` makes (LostShape::bound), "" when `n` makes
// none or its inputs give no bound.
std::string data_dependent_bound(const Node& n);
// Values produced by nodes without a static shape, and the nodes where that started.
struct ShapeCoverage {
  size_t values = 0;  // node outputs
  size_t unknown = 0;
  std::vector<LostShape> lost;
};
ShapeCoverage shape_coverage(const Graph& g);

}  // namespace nnfuse::shape
