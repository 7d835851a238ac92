// Pieces the ops' shape rules share (private to src/ops/).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ops/def.h"

namespace nnfuse::ops {

// Input i's dtype and shape (unknown when the input is absent).
OutputType like_input(const Node& n, size_t i);
// The shape of input i, or unknown when absent.
const Shape& input_shape(const Node& n, size_t i);
// numpy's matmul of a and b (1-D operands promoted and their dim dropped again; batch dims
// broadcast); unknown where the operands say too little. "" or why they do not multiply.
std::string matmul_shape(const Shape& a, const Shape& b, Shape* out);
// numpy broadcasting of a and b; "" or why they do not broadcast.
std::string broadcast_shape(const Shape& a, const Shape& b, Shape* out);
// `s` with its last dim replaced by `d` (unknown when d < 0).
Shape with_last_dim(const Shape& s, int64_t d);
// v's dims when every one is known, else nullopt (also for an absent value).
std::optional<Dims> known_dims(const Value* v);
// The static extent of dim `i` (negative: from the end) of `s`, or -1.
int64_t dim_of(const Shape& s, int64_t i);

}  // namespace nnfuse::ops
