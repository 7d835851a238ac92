// Test helpers for the oneDNN kernels: attribute maps and a kernel built by hand, for the
// checks expect_matches_ref cannot make (output layouts, run-time shape mismatches).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/test_util.h"

namespace nnfuse::testing {

using Attrs = std::map<std::string, Attribute>;

// One node of `op` over `inputs` in a graph of its own, with the factory named `kernel` created
// for it (when it accepts; `accepted` says whether it did); an empty name: the first factory of
// the op's table that accepts it (the plan's choice where nothing is measured).
struct BuiltKernel {
  Graph graph;
  Node* node = nullptr;
  std::unique_ptr<NodeInfo> info;
  const KernelFactory* factory = nullptr;
  std::unique_ptr<Kernel> kernel;
  bool accepted = false;

  BuiltKernel(const std::string& name, const std::string& op, const std::vector<FastInput>& inputs,
              const Attrs& attrs = {}, size_t num_outputs = 1) {
    std::vector<Value*> ins;
    std::vector<Layout> layouts;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i].value;
      if (!t.defined()) {  // an omitted optional input
        ins.push_back(nullptr);
        layouts.push_back(Layout::kPlain);
        continue;
      }
      Value* v = graph.add_value("in" + std::to_string(i), t.dtype(), Shape::of(t.shape()));
      if (inputs[i].constant) {
        v->set_constant(t);
      } else {
        graph.add_input(v);
      }
      ins.push_back(v);
      layouts.push_back(inputs[i].layout);
    }
    std::vector<Value*> outs;
    for (size_t k = 0; k < num_outputs; ++k)
      outs.push_back(graph.add_value("out" + std::to_string(k)));
    node = graph.add_node(op, "node", ins, outs, ref_op_domain(op));
    for (auto& [k, a] : attrs) node->set_attr(k, a);
    info = std::make_unique<NodeInfo>(NodeInfo{*node, 17, layouts, 2});
    for (const KernelFactory& f : kernels_for(op)) {
      if (name.empty() ? !factory && f.accepts(*info) : name == f.name) factory = &f;
    }
    if (factory && factory->accepts(*info)) {
      accepted = true;
      kernel = factory->create(*info);
    }
  }

  Layout output_layout() const {
    return factory->output_layout ? factory->output_layout(*info, 0) : Layout::kPlain;
  }

  // Runs the kernel on `inputs` (already in the layouts they arrive in; undefined: omitted).
  Tensor run(const std::vector<Tensor>& inputs) {
    KernelIO io;
    for (const Tensor& t : inputs) io.inputs.push_back(t.defined() ? &t : nullptr);
    io.outputs.resize(1);
    kernel->run(io);
    return io.outputs[0];
  }
};

}  // namespace nnfuse::testing
