// Concat in place: the plan gives each input of a Concat that its producer can write there its
// part of the Concat's output, and runs no Concat kernel when every input is placed.
#include "runtime/concat_in_place.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "ir/builder.h"
#include "kernels/cpu/test_util.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/plan_test_util.h"
#include "runtime/session.h"

namespace nnfuse {
namespace concat_in_place_test {

using testing::expect_no_live_overlap;

Tensor ramp(const Dims& shape, float scale = 0.25f) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<float>()[i] = static_cast<float>((i * 7) % 23 - 11) * scale;
  }
  return t;
}

// The plan's outputs against the reference kernels' (reference_only: no layouts, no views, no
// concat in place), within 1e-4 of the largest magnitude, over two runs (the arena reused).
void expect_matches_reference(PlanSession& fast, const std::shared_ptr<const Graph>& g,
                              const std::map<std::string, Tensor>& feeds) {
  PlanOptions ref_opts;
  ref_opts.reference_only = true;
  const std::vector<Tensor> want = PlanSession(g, ref_opts).run(feeds);
  for (int r = 0; r < 2; ++r) {
    const std::vector<Tensor> got = fast.run(feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(got[k].shape(), want[k].shape());
      double scale = 1e-30, err = 0;
      for (int64_t i = 0; i < want[k].numel(); ++i) {
        scale = std::max(scale, std::abs(want[k].double_at(i)));
        err = std::max(err, std::abs(got[k].double_at(i) - want[k].double_at(i)));
      }
      EXPECT_LE(err, 1e-4 * scale) << "run " << r << ", output " << k;
    }
  }
}

const PlanStep* step_of(const ExecutionPlan& plan, const std::string& node) {
  for (const PlanStep& s : plan.steps()) {
    if (s.node && s.node->name() == node) return &s;
  }
  return nullptr;
}

int value_id(const ExecutionPlan& plan, const std::string& name) {
  for (size_t i = 0; i < plan.values().size(); ++i) {
    if (plan.values()[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// x [1, 2, 3] -> Relu -> a, Neg -> b; Concat(a, b, <extra>) along axis 1 (each part one range
// of the output: the dims before it are 1) -> c -> Sigmoid -> y; plus what `shape` adds.
struct RangesGraph {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();
  Value *x, *a, *b, *c, *y;
  Node* concat;
  RangesGraph() {
    g->opsets[""] = 17;
    x = g->add_value("x", DType::kFloat32, Shape::of({1, 2, 3}));
    g->add_input(x);
    a = g->add_value("a", DType::kFloat32, Shape::of({1, 2, 3}));
    b = g->add_value("b", DType::kFloat32, Shape::of({1, 2, 3}));
    c = g->add_value("c", DType::kFloat32, Shape::of({1, 4, 3}));
    y = g->add_value("y", DType::kFloat32, Shape::of({1, 4, 3}));
    g->add_node("Relu", "relu", {x}, {a});
    g->add_node("Neg", "neg", {x}, {b});
    concat = g->add_node("Concat", "concat", {a, b}, {c});
    concat->set_attr("axis", attr_int(1));
    g->add_node("Sigmoid", "sigmoid", {c}, {y});
  }
};

// The step alone (place_concat_inputs), over steps made by hand: each input's producer a kernel
// that says whether it writes rows at a pitch.
class RowsKernel : public Kernel {
 public:
  explicit RowsKernel(bool rows) : rows_(rows) {}
  void run(KernelIO&) override {}
  bool write_output_rows(size_t k, int64_t pitch) override {
    asked.push_back({k, pitch});
    return rows_;
  }
  std::vector<std::pair<size_t, int64_t>> asked;

 private:
  bool rows_;
};

struct ConcatStep {
  std::vector<PlanValue> values;
  std::vector<PlanStep> steps;
  PlanProducers producers;

  // values[i] for graph value v, its shape and layout.
  int add(const Value* v, const Dims& shape, Layout layout) {
    PlanValue pv;
    pv.value = v;
    pv.name = v->name();
    pv.dtype = DType::kFloat32;
    pv.static_shape = true;
    pv.shape = shape;
    pv.layout = layout;
    values.push_back(pv);
    return static_cast<int>(values.size()) - 1;
  }
  // A kernel step writing `out` (output 0); a RowsKernel that writes rows or not.
  RowsKernel* produce(const Node* n, int out, bool rows) {
    PlanStep st;
    st.node = n;
    st.kernel = std::make_unique<RowsKernel>(rows);
    st.outputs = {out};
    producers[out] = {steps.size(), 0};
    steps.push_back(std::move(st));
    return static_cast<RowsKernel*>(steps.back().kernel.get());
  }
  size_t concat(const Node* n, std::vector<int> inputs, int out) {
    PlanStep st;
    st.node = n;
    st.kernel = std::make_unique<RowsKernel>(false);
    st.kernel_name = "cpu.concat";
    st.inputs = std::move(inputs);
    st.outputs = {out};
    steps.push_back(std::move(st));
    return steps.size() - 1;
  }
};

TEST(ConcatInPlace, TheStepPlacesRangesAndRows) {
  RangesGraph r;
  r.g->add_output(r.y);
  {
    // Plain [1, 2, 3] parts along axis 1: ranges of the output, whatever their kernels.
    ConcatStep c;
    const int a = c.add(r.a, {1, 2, 3}, Layout::kPlain), b = c.add(r.b, {1, 2, 3}, Layout::kPlain);
    const int out = c.add(r.c, {1, 4, 3}, Layout::kPlain);
    RowsKernel* ka = c.produce(r.a->producer(), a, false);
    c.produce(r.b->producer(), b, false);
    const size_t s = c.concat(r.concat, {a, b}, out);
    place_concat_inputs(c.values, c.steps, c.producers, s);
    EXPECT_TRUE(ka->asked.empty());  // ranges need no rows
    EXPECT_EQ(c.values[a].alias_of, out);
    EXPECT_EQ(c.values[a].slice_offset, 0u);
    EXPECT_EQ(c.values[b].slice_offset, 6 * sizeof(float));
    EXPECT_TRUE(c.steps[s].assembled);
    EXPECT_EQ(c.steps[s].kind, PlanStep::Kind::kView);
    EXPECT_EQ(c.steps[s].kernel, nullptr);
  }
  {
    // Channels-last parts along the channels: rows of every pixel, at the output's pitch (its
    // channels), where the producer writes them; the other part is left to the Concat's kernel.
    ConcatStep c;
    const int a = c.add(r.a, {1, 2, 3}, Layout::kNHWC), b = c.add(r.b, {1, 2, 3}, Layout::kNHWC);
    const int out = c.add(r.c, {1, 4, 3}, Layout::kNHWC);
    RowsKernel* ka = c.produce(r.a->producer(), a, true);
    RowsKernel* kb = c.produce(r.b->producer(), b, false);
    const size_t s = c.concat(r.concat, {a, b}, out);
    place_concat_inputs(c.values, c.steps, c.producers, s);
    ASSERT_EQ(ka->asked.size(), 1u);
    EXPECT_EQ(ka->asked[0], (std::pair<size_t, int64_t>{0, 4}));
    EXPECT_EQ(kb->asked.size(), 1u);
    EXPECT_TRUE(c.values[a].slice);
    EXPECT_EQ(c.values[a].slice_pitch, 4);
    EXPECT_EQ(c.values[b].alias_of, -1);
    EXPECT_FALSE(c.steps[s].assembled);
    EXPECT_NE(c.steps[s].kernel, nullptr);
  }
}

TEST(ConcatInPlace, PartsThatAreRangesNeedNoConcatKernel) {
  RangesGraph r;
  r.g->add_output(r.y);
  PlanSession run{std::shared_ptr<const Graph>(r.g)};
  const ExecutionPlan& plan = run.plan();
  EXPECT_EQ(plan.kernel_histogram().count("cpu.concat"), 0u);
  EXPECT_EQ(plan.kernel_histogram().at("concat in place"), 1);
  EXPECT_EQ(plan.num_kernels(), 3u);  // Relu, Neg, Sigmoid
  const PlanStep* s = step_of(plan, "concat");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->assembled);
  const PlanValue& b = plan.values()[value_id(plan, "b")];
  EXPECT_TRUE(b.slice);
  EXPECT_EQ(b.slice_offset, 6 * sizeof(float));
  EXPECT_EQ(b.slice_pitch, 0);
  expect_no_live_overlap(plan);
  expect_matches_reference(run, r.g, {{"x", ramp({1, 2, 3})}});
}

TEST(ConcatInPlace, OnlyPartsItsProducerWritesForTheConcatAlone) {
  // A graph input (no producer), a part another node reads too: the Concat's kernel copies
  // those, and only those.
  {
    RangesGraph r;
    r.concat->set_input(1, r.x);
    r.g->add_output(r.y);
    PlanSession run{std::shared_ptr<const Graph>(r.g)};
    const ExecutionPlan& plan = run.plan();
    EXPECT_EQ(plan.kernel_histogram().at("cpu.concat"), 1);
    EXPECT_TRUE(plan.values()[value_id(plan, "a")].slice);
    EXPECT_FALSE(plan.values()[value_id(plan, "x")].slice);
    expect_no_live_overlap(plan);
    expect_matches_reference(run, r.g, {{"x", ramp({1, 2, 3})}});
  }
  {
    RangesGraph r;
    Value* t = r.g->add_value("t", DType::kFloat32, Shape::of({1, 2, 3}));
    r.g->add_node("Tanh", "tanh", {r.a}, {t});
    r.g->add_output(r.y);
    r.g->add_output(t);
    PlanSession run{std::shared_ptr<const Graph>(r.g)};
    const ExecutionPlan& plan = run.plan();
    EXPECT_FALSE(plan.values()[value_id(plan, "a")].slice);
    EXPECT_TRUE(plan.values()[value_id(plan, "b")].slice);
    expect_matches_reference(run, r.g, {{"x", ramp({1, 2, 3})}});
  }
}

TEST(ConcatInPlace, NotIntoAGraphOutput) {
  // The Concat's output is a graph output, or a view of it is: storage outside the arena,
  // allocated when its kernel runs, after the parts' kernels. Nothing is placed.
  for (bool view : {false, true}) {
    SCOPED_TRACE(view ? "a view of it" : "the concat itself");
    RangesGraph r;
    if (view) {
      Value* shape = r.g->add_value("shape");
      shape->set_constant(Tensor::from_vector<int64_t>({2}, {4, 3}));
      Value* v = r.g->add_value("v", DType::kFloat32, Shape::of({4, 3}));
      r.g->add_node("Reshape", "reshape", {r.c, shape}, {v});
      r.g->add_output(v);
    } else {
      r.g->add_output(r.c);
    }
    r.g->add_output(r.y);
    PlanSession run{std::shared_ptr<const Graph>(r.g)};
    const ExecutionPlan& plan = run.plan();
    EXPECT_EQ(plan.kernel_histogram().at("cpu.concat"), 1);
    for (const PlanValue& v : plan.values()) EXPECT_FALSE(v.slice) << v.name;
    expect_matches_reference(run, r.g, {{"x", ramp({1, 2, 3})}});
  }
}

// Channels-last parts (rows of each pixel): a FusedConvPool (pooled through its own buffer) and
// a part of a FusedConvSplit, whose kernels write their pixels at the Concat's pitch; the other
// part of the split goes on to a conv of its own. Both conv paths of the pool.
std::shared_ptr<Graph> channels_last_graph() {
  auto g = std::make_shared<Graph>();
  g->opsets[""] = 17;
  g->opsets[ref_op_domain("FusedConvPool")] = 1;
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({1, 16, 10, 10}));
  g->add_input(x);
  auto weight = [&](const std::string& name, const Dims& shape, uint32_t seed) {
    Value* w = g->add_value(name);
    Tensor t = ramp(shape, 0.02f);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= static_cast<float>(seed % 5 + 1);
    w->set_constant(t);
    return w;
  };
  auto act = [&](const std::string& name, const Dims& shape) {
    return g->add_value(name, DType::kFloat32, Shape::of(shape));
  };
  Value* pooled = act("pooled", {1, 24, 5, 5});
  Node* pool = g->add_node("FusedConvPool", "conv_pool",
                           {x, weight("w0", {24, 16, 3, 3}, 1), weight("b0", {24}, 2)}, {pooled},
                           ref_op_domain("FusedConvPool"));
  pool->set_attr("pads", attr_ints({1, 1, 1, 1}));
  pool->set_attr("activation", attr_string("Relu"));
  pool->set_attr("pool_kernel_shape", attr_ints({2, 2}));
  pool->set_attr("pool_strides", attr_ints({2, 2}));
  // The split reads the 5 x 5 map of a strided conv: x -> (2x2 stride 2) -> s.
  Value* s = act("s", {1, 16, 5, 5});
  Node* stride = g->add_node("Conv", "stride", {x, weight("w1", {16, 16, 2, 2}, 3)}, {s});
  stride->set_attr("strides", attr_ints({2, 2}));
  Value* p0 = act("p0", {1, 8, 5, 5});
  Value* p1 = act("p1", {1, 32, 5, 5});
  Node* split = g->add_node("FusedConvSplit", "split", {s, weight("w2", {40, 16, 1, 1}, 4)},
                            {p0, p1}, ref_op_domain("FusedConvSplit"));
  split->set_attr("split", attr_ints({8, 32}));
  split->set_attr("activation", attr_string("Relu"));
  Value* q = act("q", {1, 16, 5, 5});
  Node* conv = g->add_node("Conv", "conv", {p1, weight("w3", {16, 32, 3, 3}, 0)}, {q});
  conv->set_attr("pads", attr_ints({1, 1, 1, 1}));
  Value* c = act("c", {1, 48, 5, 5});
  g->add_node("Concat", "concat", {p0, pooled, q}, {c})->set_attr("axis", attr_int(1));
  Value* y = act("y", {1, 48, 5, 5});
  g->add_node("Relu", "relu", {c}, {y});
  g->add_output(y);
  return g;
}

TEST(ConcatInPlace, ChannelsLastPartsWrittenAtTheConcatsPitch) {
  for (const char* mode : {"0", "force", "own"}) {
    SCOPED_TRACE(std::string("NNFUSE_WINOGRAD=") + mode);
    const testing::ScopedEnv winograd("NNFUSE_WINOGRAD", mode);
    std::shared_ptr<Graph> g = channels_last_graph();
    PlanSession run{std::shared_ptr<const Graph>(g)};
    const ExecutionPlan& plan = run.plan();
    const PlanValue& p0 = plan.values()[value_id(plan, "p0")];
    const PlanValue& pooled = plan.values()[value_id(plan, "pooled")];
    EXPECT_EQ(p0.layout, Layout::kNHWC);
    EXPECT_TRUE(p0.slice);
    EXPECT_EQ(p0.slice_offset, 0u);
    EXPECT_EQ(p0.slice_pitch, 48);
    EXPECT_TRUE(pooled.slice);
    EXPECT_EQ(pooled.slice_offset, 8 * sizeof(float));
    // q comes from a 3x3 conv: on the direct algorithm (dense outputs only) the Concat's
    // kernel copies it alone; forced onto oneDNN's Winograd (where oneDNN has it) or on the
    // project's own (on every CPU) it is placed too, and no Concat kernel runs.
    const bool q = plan.values()[value_id(plan, "q")].slice;
    if (std::string(mode) == "0") {
      EXPECT_FALSE(q);
    }
    if (std::string(mode) == "own") {
      EXPECT_TRUE(q);
    }
    const auto h = plan.kernel_histogram();
    EXPECT_EQ(h.count("cpu.concat"), q ? 0u : 1u);
    EXPECT_EQ(h.count("concat in place"), q ? 1u : 0u);
    expect_no_live_overlap(plan);
    expect_matches_reference(run, g, {{"x", ramp({1, 16, 10, 10})}});
  }
}

}  // namespace concat_in_place_test
}  // namespace nnfuse
