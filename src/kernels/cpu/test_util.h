// Test helpers for fast kernels: run one node through the fast kernel table and through the
// reference kernel, so each fast kernel is checked against its oracle.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "kernels/cpu/layout.h"
#include "kernels/kernel.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/ref/test_util.h"

namespace nnfuse::testing {

// n floats uniform in [-scale, scale), the same for the same seed (a linear congruential
// sequence): inputs for the kernels tested on raw buffers.
inline std::vector<float> noise(int64_t n, uint32_t seed, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 7u;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = (static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
  }
  return v;
}

// Environment variable `name` set to `value` for the kernels built in its scope (a switch the
// kernels read when they are built, such as NNFUSE_WINOGRAD or NNFUSE_ATTENTION_ISA), unset
// after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
};

struct FastInput {
  Tensor value;
  bool constant = false;           // a weight: visible to the factory at plan time
  Layout layout = Layout::kPlain;  // the layout the input arrives in
};

struct FastRun {
  std::string kernel;           // name of the factory that accepted the node
  std::vector<Tensor> outputs;  // converted back to plain layout
};

// A one-node graph over the given inputs: static shapes (inferred output shapes are not
// needed: kernels compute them), constants where FastInput says so, and the input layouts.
struct OneNode {
  Graph g;
  Node* node = nullptr;
  std::vector<Layout> layouts;

  OneNode(const std::string& op, const std::vector<FastInput>& inputs,
          const std::map<std::string, Attribute>& attrs, size_t num_outputs = 1) {
    std::vector<Value*> ins;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i].value;
      if (!t.defined()) {
        ins.push_back(nullptr);
        layouts.push_back(Layout::kPlain);
        continue;
      }
      Value* v = g.add_value("in" + std::to_string(i), t.dtype(), Shape::of(t.shape()));
      if (inputs[i].constant) {
        v->set_constant(t);
      } else {
        g.add_input(v);
      }
      ins.push_back(v);
      layouts.push_back(inputs[i].layout);
    }
    std::vector<Value*> outs;
    for (size_t i = 0; i < num_outputs; ++i) outs.push_back(g.add_value("out" + std::to_string(i)));
    node = g.add_node(op, "node", ins, outs, ref_op_domain(op));
    for (auto& [k, a] : attrs) node->set_attr(k, a);
  }
  NodeInfo info(int64_t opset = 17) const { return NodeInfo{*node, opset, layouts, 2}; }
};

// Builds a one-node graph (OneNode), picks the first factory in kernels_for(op) that accepts it —
// or, when `only` is non-empty, the factory of that name (failing if it does not accept) — and runs
// it.
inline FastRun run_kernel(const std::string& op, const std::vector<FastInput>& inputs,
                          const std::map<std::string, Attribute>& attrs = {},
                          size_t num_outputs = 1, const std::string& only = "",
                          int64_t opset = 17) {
  OneNode one(op, inputs, attrs, num_outputs);
  NodeInfo info = one.info(opset);
  const KernelFactory* chosen = nullptr;
  for (const KernelFactory& f : kernels_for(op)) {
    if (!only.empty() && only != f.name) continue;
    if (f.accepts(info)) {
      chosen = &f;
      break;
    }
  }
  if (!chosen)
    throw Error(ErrorKind::kUnsupported,
                "no kernel accepts " + op + (only.empty() ? "" : " as " + only));
  auto kernel = chosen->create(info);
  std::vector<Tensor> converted;
  converted.reserve(inputs.size());
  KernelIO io;
  for (const FastInput& in : inputs) {
    if (!in.value.defined()) {
      io.inputs.push_back(nullptr);
      continue;
    }
    converted.push_back(to_layout(in.value, in.layout));
    io.inputs.push_back(&converted.back());
  }
  io.outputs.resize(num_outputs);
  kernel->run(io);
  FastRun r{chosen->name, {}};
  for (Tensor& t : io.outputs) r.outputs.push_back(t.defined() ? to_layout(t, Layout::kPlain) : t);
  return r;
}

// The names of the fast factories of `op` that accept the node, in table order: the kernels the
// plan chooses among (the first, or the fastest of the measured ones).
inline std::vector<std::string> accepting_kernels(
    const std::string& op, const std::vector<FastInput>& inputs,
    const std::map<std::string, Attribute>& attrs = {}, size_t num_outputs = 1,
    int64_t opset = 17) {
  OneNode one(op, inputs, attrs, num_outputs);
  const NodeInfo info = one.info(opset);
  std::vector<std::string> names;
  for (const KernelFactory& f : kernels_for(op)) {
    if (std::string(f.name) != "ref" && f.accepts(info)) names.push_back(f.name);
  }
  return names;
}

// The node's outputs from the fast kernel named `kernel` and from the reference kernel.
struct FastAndRef {
  std::vector<Tensor> fast, ref;
};
inline FastAndRef run_fast_and_ref(const std::string& kernel, const std::string& op,
                                   const std::vector<FastInput>& inputs,
                                   const std::map<std::string, Attribute>& attrs,
                                   size_t num_outputs, int64_t opset) {
  FastRun fast = run_kernel(op, inputs, attrs, num_outputs, kernel, opset);
  std::vector<Tensor> plain;
  for (const FastInput& in : inputs) plain.push_back(in.value);
  return {std::move(fast.outputs), run_ref(op, plain, attrs, num_outputs, opset)};
}

// Runs the node through the fast kernel named `kernel` and the reference kernel and expects
// equal shapes and values within atol + rtol * |ref|.
inline void expect_matches_ref(const std::string& kernel, const std::string& op,
                               const std::vector<FastInput>& inputs,
                               const std::map<std::string, Attribute>& attrs = {},
                               size_t num_outputs = 1, float atol = 1e-5f, float rtol = 1e-4f,
                               int64_t opset = 17) {
  const FastAndRef r = run_fast_and_ref(kernel, op, inputs, attrs, num_outputs, opset);
  ASSERT_EQ(r.fast.size(), r.ref.size());
  for (size_t k = 0; k < r.ref.size(); ++k) {
    SCOPED_TRACE("output " + std::to_string(k) + " of " + op + " via " + kernel);
    expect_close(r.fast[k], r.ref[k], atol, rtol);
  }
}

// Like expect_matches_ref, but bounds each output's largest error relative to its largest
// reference value (max_relative_error) instead of element by element: for algorithms whose
// rounding error scales with the outputs' magnitude rather than each element's, such as
// Winograd convolution (an output near zero carries the error of its large neighbours).
inline void expect_matches_ref_scaled(const std::string& kernel, const std::string& op,
                                      const std::vector<FastInput>& inputs,
                                      const std::map<std::string, Attribute>& attrs, double bound,
                                      size_t num_outputs = 1, int64_t opset = 17) {
  const FastAndRef r = run_fast_and_ref(kernel, op, inputs, attrs, num_outputs, opset);
  ASSERT_EQ(r.fast.size(), r.ref.size());
  for (size_t k = 0; k < r.ref.size(); ++k) {
    SCOPED_TRACE("output " + std::to_string(k) + " of " + op + " via " + kernel);
    ASSERT_EQ(r.fast[k].shape(), r.ref[k].shape());
    EXPECT_LE(max_relative_error(r.fast[k], r.ref[k]), bound);
  }
}

}  // namespace nnfuse::testing
