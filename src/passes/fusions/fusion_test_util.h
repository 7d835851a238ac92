// Shared by the fusion pass tests (the graph builder and numeric checks are testing/'s):
// running the pipeline, and the numeric check (fused graph on the fast kernels == unfused graph on
// the reference kernels).
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
#include "testing/graph_builder.h"
#include "testing/numeric.h"

namespace nnfuse::fusion_test {

using testing::random_tensor;
// Builds small graphs: b.in("x", dims), b.c(tensor), b.n("Conv", {...}, dims) ...
using B = testing::GraphBuilder;
inline Attribute ints(std::vector<int64_t> v) { return attr_ints(std::move(v)); }

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
// A switch file (CANN GE's JSON form) that turns `pass` off.
inline FusionSwitches switched_off(const std::string& pass) {
  return FusionSwitches::parse(R"({"Switch":{"GraphFusion":{")" + pass + R"(":"off"}}})",
                               "switches.json", list_passes(), pass_op_lists());
}

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
    feeds[v->name()] = random_tensor(v->shape().static_dims(), seed++);
  auto [x, y] = run_fused_and_reference(std::move(fused), std::move(plain), feeds);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(x[i].shape(), y[i].shape());
    EXPECT_LE(testing::max_relative_error(x[i], y[i]), tolerance) << "output " << i;
  }
}

inline const PassRecord* record(const FusionReport& r, const std::string& pass) {
  for (const PassRecord& p : r.passes) {
    if (p.name == pass) return &p;
  }
  return nullptr;
}

// `pass` matched, fused nothing, and declined its first match with a reason containing
// `reason`; then the graph (left unfused by it) computes what `plain` does.
inline void expect_declined(Fused f, const std::string& pass, const std::string& reason,
                            std::unique_ptr<Graph> plain) {
  const PassRecord* r = record(f.report, pass);
  ASSERT_NE(r, nullptr) << pass << " did not run";
  EXPECT_EQ(r->effect_times, 0);
  ASSERT_FALSE(r->rejected.empty()) << graph_to_text(*f.graph);
  EXPECT_NE(r->rejected[0].reason.find(reason), std::string::npos) << r->rejected[0].reason;
  expect_same_numbers(std::move(f.graph), std::move(plain));
}

inline size_t count_op(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node* x : g.nodes()) n += x->op_type() == op;
  return n;
}

}  // namespace nnfuse::fusion_test
