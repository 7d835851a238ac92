// Shared by the normalization fusions (layer_norm.cc, skip_layer_norm.cc): reading the
// per-feature parameters (gamma, beta, bias) of a normalization over the last axis.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pattern/pattern.h"

namespace nnfuse::norm {

inline bool is_float_type(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }
inline std::string quoted(const std::string& s) { return std::string("'") + s + "'"; }

// The length E of the normalized last axis: x's last dim, else the length of a per-feature
// parameter; -1 when neither tells.
int64_t feature_count(const Value* x, const std::vector<const Value*>& params);
// "" when `v` is a per-feature parameter (gamma, beta, bias) of x's last axis: a float
// constant with E elements (or one, repeated) whose dims before the last are 1, of rank at
// most x's (so multiplying or adding it does not grow x's shape); else why.
std::string feature_reason(const Value* v, int64_t e, const Value* x, const char* what);
// "" when a LayerNormalization can run inside a fused kernel: over the last axis of its rank-
// `rank` input (-1: unknown, then only axis -1 is), stash_type 1, its Mean and InvStdDev
// outputs unused; else why.
std::string layer_norm_reason(const Node& ln, int64_t rank);
// The LayerNorm's epsilon (ONNX's default when absent).
float epsilon_of(const Node& ln);
// LayerNormalization(x, gamma[, beta]), ONNX's or ai.nnfuse's (named "ln", "gamma", "beta").
pattern::Pat layer_norm_of(const pattern::Pat& x);

}  // namespace nnfuse::norm
