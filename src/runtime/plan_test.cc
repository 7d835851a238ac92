#include "runtime/plan.h"

#include <gtest/gtest.h>

#include <set>

#include "onnx/importer.h"
#include "runtime/plan_test_util.h"
#include "runtime/session.h"

namespace nnfuse {
namespace plan_test {

using testing::expect_no_live_overlap;

TEST(Plan, BundledModelPlanIsSoundAndReusesMemory) {
  auto g = load_onnx(std::string(NNFUSE_SOURCE_DIR) + "/models/tiny_resnet.onnx");
  PlanSession s(std::move(g));
  const ExecutionPlan& plan = s.plan();
  expect_no_live_overlap(plan);
  EXPECT_GT(plan.peak_activation_bytes(), 0u);
  EXPECT_LT(plan.peak_activation_bytes(), plan.total_activation_bytes());
}

TEST(Plan, EmptyGraphPlansAndRuns) {
  PlanSession s(std::make_unique<Graph>());
  EXPECT_TRUE(s.run({}).empty());
}

// x -> Relu -> Reshape -> Neg -> y: the Reshape is a view, not a kernel.
TEST(Plan, ViewsAreFreeAndArenaIsReused) {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({2, 6}));
  g->add_input(x);
  Value* a = g->add_value("a", DType::kFloat32, Shape::of({2, 6}));
  Value* shape = g->add_value("shape");
  shape->set_constant(Tensor::from_vector<int64_t>({2}, {3, 4}));
  Value* b = g->add_value("b", DType::kFloat32, Shape::of({3, 4}));
  Value* y = g->add_value("y", DType::kFloat32, Shape::of({3, 4}));
  g->add_node("Relu", "relu", {x}, {a});
  g->add_node("Reshape", "reshape", {a, shape}, {b});
  g->add_node("Neg", "neg", {b}, {y});
  g->add_output(y);
  PlanSession run(std::move(g));
  const ExecutionPlan& plan = run.plan();
  EXPECT_EQ(plan.num_kernels(), 2u);
  EXPECT_EQ(plan.kernel_histogram().at("view"), 1);
  expect_no_live_overlap(plan);
  Tensor in = Tensor::from_vector<float>({2, 6}, {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12});
  auto out = run.run({{"x", in}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Dims{3, 4}));
  EXPECT_EQ(out[0].data<float>()[0], -1.0f);
  EXPECT_EQ(out[0].data<float>()[1], 0.0f);
  // A second run gives the same result (the arena is reused), and the first run's output is
  // not overwritten by it.
  auto again = run.run({{"x", in}});
  EXPECT_EQ(again[0].data<float>()[2], -3.0f);
  EXPECT_EQ(out[0].data<float>()[2], -3.0f);
}

// Views of values whose shape is known only when the model runs: Reshape by a shape fed at run
// time (of an arena value and of a value allocated at run time), Flatten, Unsqueeze and
// Squeeze of an input with a symbolic dim.
std::unique_ptr<Graph> run_time_views() {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  Value* x = g->add_value("x", DType::kFloat32, Shape::of({2, 6}));
  Value* s = g->add_value("s", DType::kInt64, Shape::of({2}));
  Shape n_shape{true, {Dim{-1, "n"}, Dim{3, ""}}};
  Value* n = g->add_value("n", DType::kFloat32, n_shape);
  g->add_input(x);
  g->add_input(s);
  g->add_input(n);
  auto val = [&](const std::string& name) {
    return g->add_value(name, DType::kFloat32, Shape::unknown());
  };
  Value* a = g->add_value("a", DType::kFloat32, Shape::of({2, 6}));
  Value* z = g->add_value("z", DType::kFloat32, Shape::of({2, 6}));
  Value *b = val("b"), *zr = val("zr"), *y1 = val("y1"), *y2 = val("y2");
  Value *f = val("f"), *u = val("u"), *q = val("q"), *y3 = val("y3");
  Value* axes = g->add_value("axes");
  axes->set_constant(Tensor::from_vector<int64_t>({1}, {0}));
  g->add_node("Relu", "relu", {x}, {a});
  g->add_node("Reshape", "view_a", {a, s}, {b});
  // z may take the arena slot of a only once b, which shares a's storage, is read for the last
  // time.
  g->add_node("Neg", "neg", {x}, {z});
  g->add_node("Reshape", "view_z", {z, s}, {zr});
  g->add_node("Sub", "sub", {b, zr}, {y1});
  // A graph output that views a kernel's output: neither may live in the arena.
  Value* a2 = g->add_value("a2", DType::kFloat32, Shape::of({2, 6}));
  g->add_node("Abs", "abs", {x}, {a2});
  g->add_node("Reshape", "view_out", {a2, s}, {y2});
  Attribute axis;
  axis.kind = Attribute::Kind::kInt;
  axis.i = 0;
  g->add_node("Flatten", "flatten", {n}, {f})->set_attr("axis", axis);
  g->add_node("Unsqueeze", "unsqueeze", {f, axes}, {u});
  g->add_node("Squeeze", "squeeze", {u, axes}, {q});
  g->add_node("Neg", "neg_q", {q}, {y3});
  g->add_output(y1);
  g->add_output(y2);
  g->add_output(y3);
  return g;
}

TEST(Plan, ViewsOfRunTimeShapesShareStorage) {
  PlanSession run(run_time_views());
  const ExecutionPlan& plan = run.plan();
  EXPECT_EQ(plan.kernel_histogram().at("view"), 6);
  expect_no_live_overlap(plan);
  PlanOptions ref_opts;
  ref_opts.reference_only = true;
  PlanSession ref(run_time_views(), ref_opts);
  Tensor x(DType::kFloat32, {2, 6}), n(DType::kFloat32, {4, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 5) - 2.5f;
  for (int64_t i = 0; i < n.numel(); ++i) n.data<float>()[i] = 0.1f * static_cast<float>(i);
  for (const Dims& spec : {Dims{3, 4}, Dims{-1, 2}, Dims{12, 1}}) {
    std::map<std::string, Tensor> feeds = {
        {"x", x}, {"s", Tensor::from_vector<int64_t>({2}, spec)}, {"n", n}};
    auto want = ref.run(feeds);
    for (int r = 0; r < 2; ++r) {
      auto got = run.run(feeds);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(got[k].shape(), want[k].shape()) << "output " << k;
        for (int64_t i = 0; i < want[k].numel(); ++i) {
          EXPECT_EQ(got[k].data<float>()[i], want[k].data<float>()[i]) << k << " at " << i;
        }
      }
    }
  }
  // An output of one run is not overwritten by the next.
  std::map<std::string, Tensor> feeds = {
      {"x", x}, {"s", Tensor::from_vector<int64_t>({2}, {3, 4})}, {"n", n}};
  const Tensor first = run.run(feeds)[1];
  const Tensor kept = first.clone();
  Tensor x2(DType::kFloat32, {2, 6});
  for (int64_t i = 0; i < x2.numel(); ++i) x2.data<float>()[i] = 100.0f + static_cast<float>(i);
  feeds["x"] = x2;
  run.run(feeds);
  for (int64_t i = 0; i < kept.numel(); ++i) {
    EXPECT_EQ(first.data<float>()[i], kept.data<float>()[i]) << "at " << i;
  }
  // A shape that does not fit fails the run, naming the node.
  try {
    run.run({{"x", x}, {"s", Tensor::from_vector<int64_t>({2}, {5, 5})}, {"n", n}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("view_a"), std::string::npos) << e.what();
  }
}

// x -> Conv (NHWC out) -> Transpose [0, 2, 3, 1] -> Relu -> Transpose [0, 3, 1, 2] -> Conv, for
// 2-D `spatial` dims (and the 1-D and 3-D forms: [0, 2, 1], [0, 2, 3, 4, 1] and back).
std::unique_ptr<Graph> storage_order_transposes(const Dims& spatial = {5, 6}) {
  auto g = std::make_unique<Graph>();
  g->opsets[""] = 17;
  auto dims = [&](int64_t n, int64_t c) {
    Dims d = {n, c};
    d.insert(d.end(), spatial.begin(), spatial.end());
    return d;
  };
  auto last = [&](int64_t c) {
    Dims d = {1};
    d.insert(d.end(), spatial.begin(), spatial.end());
    d.push_back(c);
    return d;
  };
  Value* x = g->add_value("x", DType::kFloat32, Shape::of(dims(1, 3)));
  g->add_input(x);
  auto constant = [&](const std::string& name, const Dims& d, float v) {
    Value* c = g->add_value(name);
    Tensor t(DType::kFloat32, d);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v * static_cast<float>(i % 7 - 3);
    c->set_constant(std::move(t));
    return c;
  };
  Dims k1 = dims(4, 3), k2 = dims(2, 4);
  std::fill(k1.begin() + 2, k1.end(), 1);
  std::fill(k2.begin() + 2, k2.end(), 1);
  Value* w1 = constant("w1", k1, 0.25f);
  Value* w2 = constant("w2", k2, 0.5f);
  Value* c = g->add_value("c", DType::kFloat32, Shape::of(dims(1, 4)));
  Value* t = g->add_value("t", DType::kFloat32, Shape::of(last(4)));
  Value* r = g->add_value("r", DType::kFloat32, Shape::of(last(4)));
  Value* b = g->add_value("b", DType::kFloat32, Shape::of(dims(1, 4)));
  Value* y = g->add_value("y", DType::kFloat32, Shape::of(dims(1, 2)));
  g->add_node("Conv", "conv1", {x, w1}, {c});
  Attribute to_last, to_first;
  to_last.kind = to_first.kind = Attribute::Kind::kInts;
  const int64_t rank = static_cast<int64_t>(spatial.size()) + 2;
  to_last.ints = {0};
  to_first.ints = {0, rank - 1};
  for (int64_t i = 2; i < rank; ++i) to_last.ints.push_back(i);
  to_last.ints.push_back(1);
  for (int64_t i = 1; i + 1 < rank; ++i) to_first.ints.push_back(i);
  g->add_node("Transpose", "to_last", {c}, {t})->set_attr("perm", to_last);
  g->add_node("Relu", "relu", {t}, {r});
  g->add_node("Transpose", "to_first", {r}, {b})->set_attr("perm", to_first);
  g->add_node("Conv", "conv2", {b, w2}, {y});
  g->add_output(y);
  return g;
}

// Both Transposes move between the two storage orders of the conv's channels-last output:
// views, with no reorder but the graph output's; for 1-D, 2-D and 3-D convs.
TEST(Plan, TransposesBetweenStorageOrdersAreViews) {
  for (const Dims& spatial : {Dims{7}, Dims{5, 6}, Dims{2, 3, 4}}) {
    SCOPED_TRACE(dims_str(spatial));
    Dims x = {1, 3};
    x.insert(x.end(), spatial.begin(), spatial.end());
    Tensor in(DType::kFloat32, x);
    for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = static_cast<float>(i % 11) - 5;
    PlanOptions ref_opts;
    ref_opts.reference_only = true;
    const Tensor want =
        PlanSession(storage_order_transposes(spatial), ref_opts).run({{"x", in}})[0];
    PlanSession run(storage_order_transposes(spatial));
    const ExecutionPlan& plan = run.plan();
    EXPECT_EQ(plan.kernel_histogram().at("view"), 2);
    EXPECT_EQ(plan.num_reorders(), 1u);
    expect_no_live_overlap(plan);
    const Tensor got = run.run({{"x", in}})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4) << "at " << i;
    }
  }
}

// x -> Relu -> Transpose perm -> Neg -> y: a Transpose that moves only dims of extent 1
// ([L, 1, E] by [1, 0, 2] or [0, 2, 1], [L, 1, 1] by [1, 2, 0], [1, 1, E] reversed) is a view;
// one that moves two dims of other extents past each other is a kernel.
TEST(Plan, TransposesOfUnitDimsAreViews) {
  struct Case {
    Dims x;
    std::vector<int64_t> perm;  // empty: reversed
    bool view;
  };
  const std::vector<Case> cases = {{{5, 1, 4}, {1, 0, 2}, true},
                                   {{5, 1, 1}, {1, 2, 0}, true},
                                   {{1, 1, 4}, {}, true},
                                   {{5, 1, 4}, {2, 1, 0}, false},
                                   {{5, 2, 4}, {1, 0, 2}, false},
                                   {{5, 1, 4}, {0, 2, 1}, true},
                                   {{2, 3, 1, 4}, {1, 0, 3, 2}, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(dims_str(c.x) + " perm " + dims_str(c.perm));
    Dims out;
    for (size_t i = 0; i < c.x.size(); ++i) {
      out.push_back(c.x[c.perm.empty() ? c.x.size() - 1 - i : static_cast<size_t>(c.perm[i])]);
    }
    auto build = [&] {
      auto g = std::make_unique<Graph>();
      g->opsets[""] = 17;
      Value* x = g->add_value("x", DType::kFloat32, Shape::of(c.x));
      g->add_input(x);
      Value* a = g->add_value("a", DType::kFloat32, Shape::of(c.x));
      Value* t = g->add_value("t", DType::kFloat32, Shape::of(out));
      Value* y = g->add_value("y", DType::kFloat32, Shape::of(out));
      g->add_node("Relu", "relu", {x}, {a});
      Node* tr = g->add_node("Transpose", "transpose", {a}, {t});
      if (!c.perm.empty()) {
        Attribute perm;
        perm.kind = Attribute::Kind::kInts;
        perm.ints = c.perm;
        tr->set_attr("perm", perm);
      }
      g->add_node("Neg", "neg", {t}, {y});
      g->add_output(y);
      return g;
    };
    Tensor in(DType::kFloat32, c.x);
    for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = static_cast<float>(i % 7) - 3;
    PlanOptions ref_opts;
    ref_opts.reference_only = true;
    const Tensor want = PlanSession(build(), ref_opts).run({{"x", in}})[0];
    PlanSession run(build());
    const auto hist = run.plan().kernel_histogram();
    EXPECT_EQ(hist.count("view") != 0, c.view);
    EXPECT_EQ(run.plan().num_kernels(), c.view ? 2u : 3u);
    expect_no_live_overlap(run.plan());
    const Tensor got = run.run({{"x", in}})[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) {
      EXPECT_EQ(got.data<float>()[i], want.data<float>()[i]) << "at " << i;
    }
  }
}

// conv1 reads the plain graph input through an NHWC copy of its own: in the scratch region
// the kernels share, the largest any kernel asks for, after the activations in the session's
// arena; runs again and again give the same numbers.
TEST(Plan, KernelsShareOneScratchRegion) {
  Tensor in(DType::kFloat32, {1, 3, 5, 6});
  for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = static_cast<float>(i % 13) - 6;
  PlanSession run(storage_order_transposes());
  const ExecutionPlan& plan = run.plan();
  size_t largest = 0;
  for (const PlanStep& st : plan.steps()) {
    if (st.kernel) largest = std::max(largest, st.kernel->scratch_bytes());
  }
  EXPECT_GE(largest, 3u * 5u * 6u * sizeof(float));
  EXPECT_EQ(plan.scratch_bytes(), largest);
  PlanOptions ref_opts;
  ref_opts.reference_only = true;
  const Tensor want = PlanSession(storage_order_transposes(), ref_opts).run({{"x", in}})[0];
  for (int r = 0; r < 3; ++r) {
    const Tensor got = run.run({{"x", in}})[0];
    for (int64_t i = 0; i < want.numel(); ++i) {
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4) << "run " << r << " at " << i;
    }
  }
}

TEST(Plan, FastPathMatchesReferenceOnBundledModel) {
  std::string path = std::string(NNFUSE_SOURCE_DIR) + "/models/tiny_resnet.onnx";
  PlanSession fast(load_onnx(path));
  PlanOptions ref_opts;
  ref_opts.reference_only = true;
  PlanSession ref(load_onnx(path), ref_opts);
  Tensor x(DType::kFloat32, {1, 3, 32, 32});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  auto a = fast.run({{"input", x}});
  auto b = ref.run({{"input", x}});
  ASSERT_EQ(a[0].shape(), b[0].shape());
  double scale = 0, err = 0;
  for (int64_t i = 0; i < b[0].numel(); ++i) {
    scale = std::max(scale, std::abs(b[0].double_at(i)));
    err = std::max(err, std::abs(a[0].double_at(i) - b[0].double_at(i)));
  }
  EXPECT_LE(err, 1e-4 * scale);
}

}  // namespace plan_test
}  // namespace nnfuse
