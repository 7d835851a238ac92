// Test helpers for kernel tests: run one node of a given op on given tensors.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"
#include "kernels/ref/ref_kernels.h"
#include "testing/numeric.h"

namespace nnfuse::testing {

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

}  // namespace nnfuse::testing
