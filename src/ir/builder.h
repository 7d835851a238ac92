// Small builders and queries every graph-rewriting module uses: attribute factories, a shape as
// an int64 tensor, a value's static shape, a value's producer of a given op.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nnfuse {

Attribute attr_string(std::string s);
Attribute attr_float(float f);
Attribute attr_int(int64_t i);
Attribute attr_ints(std::vector<int64_t> v);
Attribute attr_floats(std::vector<float> v);
Attribute attr_tensor(Tensor t);

// `d` as a 1-D int64 tensor (a Reshape's shape input).
Tensor shape_tensor(const Dims& d);
// v's shape when fully known.
std::optional<Dims> static_shape(const Value* v);
// Input i of n, or nullptr when it is omitted or n has fewer inputs.
inline Value* optional_input(const Node* n, size_t i) {
  return i < n->num_inputs() ? n->input(i) : nullptr;
}
// Output i of n, or nullptr when it is omitted or n has fewer outputs.
inline Value* optional_output(const Node* n, size_t i) {
  return i < n->num_outputs() ? n->output(i) : nullptr;
}
// The producer of v when it is an `op` node, else nullptr.
Node* producer_of(const Value* v, Op op);

}  // namespace nnfuse
