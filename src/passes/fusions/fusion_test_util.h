// Shared by the fusion pass tests: a small graph builder, running the pipeline, and the
// numeric check (fused graph on the fast kernels == unfused graph on the reference kernels).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "passes/fusions/fusion_util.h"
#include "passes/pipeline.h"
#include "runtime/session.h"

namespace nnfuse::fusion_test {

inline Tensor rand_tensor(const Dims& shape, uint32_t seed, float lo = -1, float hi = 1) {
  Tensor t(DType::kFloat32, shape);
  uint32_t s = seed * 747796405u + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<float>()[i] = lo + (hi - lo) * static_cast<float>(s >> 8) / (1u << 24);
  }
  return t;
}

// Builds small graphs: b.in("x", dims), b.c("w", tensor), b.n("Conv", {...}, dims) ...
struct B {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  int k = 0;
  B() { g->opsets[""] = 17; }
  Value* in(const std::string& name, const Dims& d) {
    Value* v = g->add_value(name, DType::kFloat32, Shape::of(d));
    g->add_input(v);
    return v;
  }
  Value* c(Tensor t) {
    Value* v = g->add_value(g->unique_value_name("const"));
    ++k;
    v->set_constant(std::move(t));
    return v;
  }
  Value* n(const std::string& op, std::vector<Value*> ins, const Dims& out,
           std::map<std::string, Attribute> attrs = {}, const std::string& name = "") {
    std::string nm = name.empty() ? op + std::to_string(k++) : name;
    Value* o = g->add_value(nm + "_out", DType::kFloat32, Shape::of(out));
    Node* node = g->add_node(op, nm, ins, {o});
    for (auto& [a, v] : attrs) node->set_attr(a, v);
    return o;
  }
  void out(Value* v) { g->add_output(v); }
};

inline Attribute ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

struct Fused {
  std::unique_ptr<Graph> graph;
  FusionReport report;
};

inline Fused fuse(std::unique_ptr<Graph> g, const FusionSwitches* sw = nullptr) {
  PipelineOptions o;
  o.switches = sw;
  FusionReport r = run_pipeline(*g, o);
  verify_graph(*g);
  return {std::move(g), std::move(r)};
}

// The built-in passes alone, for tests that count what a pass left behind (automatic fusion
// would take those nodes into generated kernels).
inline Fused fuse_without_auto_fusion(std::unique_ptr<Graph> g) {
  static const FusionSwitches sw = [] {
    FusionSwitches s;
    s.set("AutoFusionPass", false);
    return s;
  }();
  return fuse(std::move(g), &sw);
}

// The outputs of the fused graph on the fast kernels and of `plain` on the reference kernels.
inline std::pair<std::vector<Tensor>, std::vector<Tensor>> run_fused_and_reference(
    std::unique_ptr<Graph> fused, std::unique_ptr<Graph> plain,
    const std::map<std::string, Tensor>& feeds) {
  PlanSession a(std::move(fused));
  PlanOptions ref;
  ref.reference_only = true;
  PlanSession b(std::move(plain), ref);
  return {a.run(feeds), b.run(feeds)};
}

// Runs the fused graph on the fast kernels and a fresh unfused copy on the reference kernels.
inline void expect_same_numbers(std::unique_ptr<Graph> fused, std::unique_ptr<Graph> plain,
                                double tolerance = 1e-4) {
  std::map<std::string, Tensor> feeds;
  uint32_t seed = 1;
  for (const Value* v : plain->runtime_inputs())
    feeds[v->name()] = rand_tensor(v->shape().static_dims(), seed++);
  auto [x, y] = run_fused_and_reference(std::move(fused), std::move(plain), feeds);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(x[i].shape(), y[i].shape());
    double scale = 0, err = 0;
    for (int64_t j = 0; j < y[i].numel(); ++j) {
      scale = std::max(scale, std::abs(y[i].double_at(j)));
      err = std::max(err, std::abs(x[i].double_at(j) - y[i].double_at(j)));
    }
    EXPECT_LE(err, tolerance * std::max(scale, 1e-6)) << "output " << i;
  }
}

inline const PassRecord* record(const FusionReport& r, const std::string& pass) {
  for (const PassRecord& p : r.passes) {
    if (p.name == pass) return &p;
  }
  return nullptr;
}

inline size_t count_op(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node* x : g.nodes()) n += x->op_type() == op;
  return n;
}

}  // namespace nnfuse::fusion_test
