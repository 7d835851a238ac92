#include "api/inputs.h"

#include <algorithm>

#include "ir/error.h"
#include "ir/half.h"

namespace nnfuse {

namespace {

// The exclusive upper bound for generated values of integer input `v`: the size of the table
// it indexes when it feeds a Gather (directly or through Cast/Unsqueeze/Reshape), 2 for masks.
int64_t index_bound(const Value* v, int depth = 0) {
  if (v->name().find("mask") != std::string::npos) return 2;
  int64_t bound = 0;
  for (const Use& u : v->uses()) {
    const Node* n = u.node;
    if (n->is(Op::kGather) && u.input_index == 1) {
      const Value* data = n->input(0);
      int64_t axis = n->attr_int("axis", 0);
      if (data && data->shape().has_rank) {
        int64_t r = static_cast<int64_t>(data->shape().dims.size());
        if (axis < 0) axis += r;
        if (axis >= 0 && axis < r && data->shape().dims[axis].known()) {
          int64_t b = data->shape().dims[axis].value;
          bound = bound ? std::min(bound, b) : b;
        }
      }
    } else if (depth < 4 &&
               (n->is(Op::kCast) || n->is(Op::kUnsqueeze) || n->is(Op::kReshape) ||
                n->is(Op::kFlatten)) &&
               u.input_index == 0 && n->output(0)) {
      int64_t b = index_bound(n->output(0), depth + 1);
      if (b) bound = bound ? std::min(bound, b) : b;
    }
  }
  return bound;
}

}  // namespace

std::map<std::string, Tensor> complete_inputs(const Graph& g, std::map<std::string, Tensor> given,
                                              uint32_t seed) {
  uint32_t state = seed * 2654435761u + 1;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  for (const Value* v : g.runtime_inputs()) {
    if (given.count(v->name())) continue;
    if (!v->shape().fully_known()) {
      fail(ErrorKind::kInvalidArgument, "input '", v->name(), "' has shape ", v->shape().str(),
           "; give its data (the CLI's --input NAME=FILE)");
    }
    Tensor t(v->dtype(), v->shape().static_dims());
    int64_t n = t.numel();
    auto uniform = [&] { return static_cast<float>(next()) / (1u << 23) - 1.0f; };
    if (v->dtype() == DType::kFloat32) {
      float* p = t.data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = uniform();
    } else if (v->dtype() == DType::kFloat64) {
      for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = uniform();
    } else if (v->dtype() == DType::kFloat16) {
      for (int64_t i = 0; i < n; ++i) t.data<Float16>()[i] = to_half<Float16>(uniform());
    } else if (v->dtype() == DType::kBFloat16) {
      for (int64_t i = 0; i < n; ++i) t.data<BFloat16>()[i] = to_half<BFloat16>(uniform());
    } else if (v->dtype() == DType::kInt64 || v->dtype() == DType::kInt32) {
      int64_t bound = index_bound(v);
      if (bound <= 0) bound = 2;
      for (int64_t i = 0; i < n; ++i) {
        int64_t x =
            static_cast<int64_t>(next() % static_cast<uint32_t>(std::min<int64_t>(bound, 1 << 24)));
        if (v->name().find("mask") != std::string::npos) x = 1;
        if (v->dtype() == DType::kInt64) {
          t.data<int64_t>()[i] = x;
        } else {
          t.data<int32_t>()[i] = static_cast<int32_t>(x);
        }
      }
    } else if (v->dtype() == DType::kBool) {
      for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = next() & 1;
    } else if (v->dtype() == DType::kUInt8) {
      // Quantized activations: their whole range.
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(next());
    } else if (v->dtype() == DType::kInt8) {
      for (int64_t i = 0; i < n; ++i) {
        t.data<int8_t>()[i] = static_cast<int8_t>(static_cast<int>(next() & 255) - 128);
      }
    } else {
      fail(ErrorKind::kInvalidArgument, "cannot generate input '", v->name(), "' of type ",
           dtype_name(v->dtype()), "; give its data (the CLI's --input NAME=FILE)");
    }
    given[v->name()] = std::move(t);
  }
  return given;
}

}  // namespace nnfuse
