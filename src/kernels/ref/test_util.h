// Test helpers for kernel tests: run one node of a given op on given tensors.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse::testing {

inline Attribute attr_i(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}
inline Attribute attr_f(float v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
inline Attribute attr_s(std::string v) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}
inline Attribute attr_ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
inline Attribute attr_floats(std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}
inline Attribute attr_t(Tensor t) {
  Attribute a;
  a.kind = Attribute::Kind::kTensor;
  a.t = std::move(t);
  return a;
}

// Builds a one-node graph (inputs typed from the tensors; an undefined Tensor is an omitted
// input), checks the support function, runs the reference kernel and returns the outputs.
inline std::vector<Tensor> run_ref(const std::string& op, const std::vector<Tensor>& inputs,
                                   const std::map<std::string, Attribute>& attrs = {},
                                   size_t num_outputs = 1, int64_t opset = 17) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      ins.push_back(nullptr);
      continue;
    }
    Value* v =
        g.add_value("in" + std::to_string(i), inputs[i].dtype(), Shape::of(inputs[i].shape()));
    g.add_input(v);
    ins.push_back(v);
  }
  std::vector<Value*> outs;
  for (size_t i = 0; i < num_outputs; ++i) outs.push_back(g.add_value("out" + std::to_string(i)));
  Node* n = g.add_node(op, "node", ins, outs, ref_op_domain(op));
  for (auto& [k, a] : attrs) n->set_attr(k, a);
  std::string why = ref_unsupported_reason(*n, opset);
  if (!why.empty()) throw Error(ErrorKind::kUnsupported, op + ": " + why);
  KernelContext ctx{*n, opset, {}, std::vector<Tensor>(num_outputs)};
  for (const Tensor& t : inputs) ctx.inputs.push_back(t.defined() ? &t : nullptr);
  find_ref_kernel(op)->run(ctx);
  return ctx.outputs;
}

inline Tensor run_ref1(const std::string& op, const std::vector<Tensor>& inputs,
                       const std::map<std::string, Attribute>& attrs = {}, int64_t opset = 17) {
  return run_ref(op, inputs, attrs, 1, opset)[0];
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

// Expects equal shape and elementwise closeness for float32 tensors (a NaN or an infinity
// wanted must be got exactly).
inline void expect_close(const Tensor& got, const Tensor& want, float atol = 1e-5f,
                         float rtol = 1e-5f) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.double_at(i), w = want.double_at(i);
    if (std::isnan(w) || std::isinf(w)) {
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w)
          << "at element " << i << ": got " << g << ", want " << w;
      continue;
    }
    EXPECT_LE(std::abs(g - w), atol + rtol * std::abs(w)) << "at element " << i;
  }
}

}  // namespace nnfuse::testing
