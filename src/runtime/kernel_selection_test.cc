// Kernel selection alone: table order, the plain-layout retry, the measured selection of a
// conv's kernels (its margins, its remembered choices) and the environment switches that choose
// without measuring.
#include "runtime/kernel_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "kernels/cpu/layout.h"

namespace nnfuse {
namespace kernel_selection_test {

// An environment variable set (or, with nullptr, unset) for a scope, restored after.
class Env {
 public:
  Env(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~Env() {
    if (saved_.empty()) {
      unsetenv(name_.c_str());
    } else {
      setenv(name_.c_str(), saved_.c_str(), 1);
    }
  }

 private:
  std::string name_, saved_;
};

Tensor noise(const Dims& shape, uint32_t seed) {
  Tensor t(DType::kFloat32, shape);
  uint32_t s = seed * 2654435761u + 7u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f;
  }
  return t;
}

Attribute ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

// A FusedConv (3x3, pads 1, ReLU) of x [1, c, hw, hw] into m channels in `group` groups, its
// weights and bias constants.
struct ConvNode {
  Graph g;
  Node* node = nullptr;
  std::vector<const Tensor*> constants;

  ConvNode(int64_t c, int64_t m, int64_t hw, int64_t group = 1, uint32_t seed = 1) {
    g.opsets[""] = 17;
    Value* x = g.add_value("x", DType::kFloat32, Shape::of({1, c, hw, hw}));
    g.add_input(x);
    Value* w = g.add_value("w", DType::kFloat32, Shape::of({m, c / group, 3, 3}));
    w->set_constant(noise({m, c / group, 3, 3}, seed));
    Value* b = g.add_value("b", DType::kFloat32, Shape::of({m}));
    b->set_constant(noise({m}, seed + 1));
    Value* y = g.add_value("y", DType::kFloat32, Shape::of({1, m, hw, hw}));
    node = g.add_node("FusedConv", "conv", {x, w, b}, {y}, kFusedDomain);
    node->set_attr("pads", ints({1, 1, 1, 1}));
    Attribute act;
    act.kind = Attribute::Kind::kString;
    act.s = "Relu";
    node->set_attr("activation", act);
    Attribute grp;
    grp.kind = Attribute::Kind::kInt;
    grp.i = group;
    node->set_attr("group", grp);
    g.add_output(y);
  }

  NodeInfo info(Layout x_layout, int threads = 2) const {
    return NodeInfo{*node, 1, {x_layout, Layout::kPlain, Layout::kPlain}, threads};
  }
};

KernelSelection select(const KernelSelector& s, const NodeInfo& info) {
  NodeInfo plain = info;
  plain.input_layouts.assign(info.input_layouts.size(), Layout::kPlain);
  return s.select(info, plain);
}

// The kernel's output for x (given plain, fed in `layout`), plain.
Tensor run(Kernel& k, const ConvNode& n, const Tensor& x, Layout layout) {
  const Tensor fed = to_layout(x, layout);
  KernelIO io;
  io.inputs = {&fed, &n.node->input(1)->constant(), &n.node->input(2)->constant()};
  io.outputs.resize(1);
  k.run(io);
  return to_layout(io.outputs[0], Layout::kPlain);
}

// The largest difference from `want` relative to want's largest magnitude.
double relative_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    diff = std::max(diff, std::fabs(double{got.data<float>()[i]} - want.data<float>()[i]));
    scale = std::max(scale, std::fabs(double{want.data<float>()[i]}));
  }
  return diff / std::max(scale, 1e-30);
}

TEST(KernelSelection, PickKeepsTheFastestUnderItsMargin) {
  // The baseline is last; the others must beat their share of its time.
  EXPECT_EQ(pick_measured({90, 100}, {0.9, 1}), 1u);  // not under 0.9 of the baseline's
  EXPECT_EQ(pick_measured({89, 100}, {0.9, 1}), 0u);
  EXPECT_EQ(pick_measured({94, 80, 100}, {0.95, 0.9, 1}), 1u);  // both qualify: the faster
  EXPECT_EQ(pick_measured({92, 95, 100}, {0.95, 0.9, 1}), 0u);  // the second misses its margin
  EXPECT_EQ(pick_measured({120, 130, 100}, {0.95, 0.9, 1}), 2u);
  EXPECT_EQ(pick_measured({100}, {1}), 0u);
}

TEST(KernelSelection, TableOrderAndThePlainRetry) {
  // A Softmax arriving channels-last: its fast kernel reads plain tensors only, so it is chosen
  // with every input plain.
  Graph g;
  g.opsets[""] = 17;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({1, 4, 3, 3}));
  g.add_input(x);
  Value* y = g.add_value("y", DType::kFloat32, Shape::of({1, 4, 3, 3}));
  Node* n = g.add_node("Softmax", "softmax", {x}, {y});
  KernelChoices choices;
  const KernelSelector selector(choices);
  KernelSelection s = select(selector, NodeInfo{*n, 17, {Layout::kNHWC}, 2});
  EXPECT_STREQ(s.factory->name, "cpu.softmax");
  EXPECT_TRUE(s.plain_inputs);
  EXPECT_TRUE(s.note.empty());
  ASSERT_NE(s.kernel, nullptr);
  s = select(selector, NodeInfo{*n, 17, {Layout::kPlain}, 2});
  EXPECT_FALSE(s.plain_inputs);
  // The oracle: the reference kernel alone; KernelChooser gives only fast kernels.
  const KernelSelector oracle(choices, /*reference_only=*/true);
  EXPECT_STREQ(select(oracle, NodeInfo{*n, 17, {Layout::kNHWC}, 2}).factory->name, "ref");
  EXPECT_NE(selector.create(NodeInfo{*n, 17, {Layout::kPlain}, 2}), nullptr);
  EXPECT_EQ(selector.create(NodeInfo{*n, 17, {Layout::kNHWC}, 2}), nullptr);
  EXPECT_EQ(choices.size(), 0u);
}

#if !defined(__SANITIZE_THREAD__)  // where nothing is measured
TEST(KernelSelection, MeasuresAConvsCandidatesOncePerGeometry) {
  const Env winograd("NNFUSE_WINOGRAD", nullptr), depthwise("NNFUSE_DEPTHWISE", nullptr);
  const std::set<std::string> candidates = {"cpu.winograd", "onednn.winograd", "onednn.fused_conv"};
  KernelChoices choices;
  const KernelSelector selector(choices);
  // 64 -> 64 on 28x28: Winograd may win on some machine (cost/winograd_rule.h).
  const ConvNode a(64, 64, 28);
  KernelSelection s = select(selector, a.info(Layout::kNHWC));
  ASSERT_NE(s.factory, nullptr);
  EXPECT_TRUE(candidates.count(s.factory->name)) << s.factory->name;
  EXPECT_EQ(s.note.rfind("measured", 0), 0u) << s.note;
  EXPECT_EQ(std::string(s.factory->name) == "onednn.fused_conv", s.note == "measured") << s.note;
  EXPECT_EQ(choices.size(), 1u);
  // The kept kernel computes the conv (the reference kernel's output, to Winograd's rounding).
  const KernelSelector oracle(choices, /*reference_only=*/true);
  KernelSelection ref = select(oracle, a.info(Layout::kPlain));
  const Tensor x = noise({1, 64, 28, 28}, 9);
  EXPECT_LE(
      relative_error(run(*s.kernel, a, x, Layout::kNHWC), run(*ref.kernel, a, x, Layout::kPlain)),
      3e-5);
  // The same geometry with other weights: the remembered choice, nothing measured again.
  const ConvNode b(64, 64, 28, 1, 5);
  KernelSelection again = select(selector, b.info(Layout::kNHWC));
  EXPECT_EQ(again.factory, s.factory);
  EXPECT_EQ(again.note, s.note);
  EXPECT_EQ(choices.size(), 1u);
  // Another thread count is another geometry; so is another layout's candidate set (a plain
  // input: the project's Winograd, which reads channels-last, is no candidate).
  select(selector, a.info(Layout::kNHWC, 1));
  EXPECT_EQ(choices.size(), 2u);
  // A depthwise conv: the project's kernel against oneDNN's.
  const ConvNode d(96, 96, 14, 96);
  KernelSelection dw = select(selector, d.info(Layout::kNHWC));
  EXPECT_TRUE(std::string(dw.factory->name) == "cpu.depthwise" ||
              std::string(dw.factory->name) == "onednn.fused_conv")
      << dw.factory->name;
  EXPECT_EQ(dw.note.rfind("measured", 0), 0u) << dw.note;
  EXPECT_EQ(choices.size(), 3u);
  // A plan of its own choices measures again.
  KernelChoices other;
  select(KernelSelector(other), a.info(Layout::kNHWC));
  EXPECT_EQ(other.size(), 1u);
}
#endif

TEST(KernelSelection, SwitchesChooseWithoutMeasuring) {
  const Env winograd("NNFUSE_WINOGRAD", nullptr), depthwise("NNFUSE_DEPTHWISE", nullptr);
  KernelChoices choices;
  const KernelSelector selector(choices);
  const ConvNode a(64, 64, 28);
  {
    const Env own("NNFUSE_WINOGRAD", "own");
    KernelSelection s = select(selector, a.info(Layout::kNHWC));
    EXPECT_STREQ(s.factory->name, "cpu.winograd");
    EXPECT_TRUE(s.note.empty());
    // A plain input: the project's kernel reads channels-last only; oneDNN's by the rule.
    s = select(selector, a.info(Layout::kPlain));
    EXPECT_NE(std::string(s.factory->name), "cpu.winograd");
  }
  {
    const Env direct("NNFUSE_WINOGRAD", "0");
    EXPECT_STREQ(select(selector, a.info(Layout::kNHWC)).factory->name, "onednn.fused_conv");
  }
  {
    // By the rule: oneDNN's Winograd (where it has it: AVX-512) for a conv where it pays.
    const Env rule("NNFUSE_WINOGRAD", "rule");
    KernelSelection s = select(selector, a.info(Layout::kNHWC));
    EXPECT_TRUE(std::string(s.factory->name) == "onednn.winograd" ||
                std::string(s.factory->name) == "onednn.fused_conv")
        << s.factory->name;
    EXPECT_TRUE(s.note.empty());
  }
  const ConvNode d(96, 96, 14, 96);
  {
    const Env own("NNFUSE_DEPTHWISE", "own");
    EXPECT_STREQ(select(selector, d.info(Layout::kNHWC)).factory->name, "cpu.depthwise");
  }
  {
    const Env off("NNFUSE_DEPTHWISE", "0");
    EXPECT_STREQ(select(selector, d.info(Layout::kNHWC)).factory->name, "onednn.fused_conv");
  }
  EXPECT_EQ(choices.size(), 0u);
}

}  // namespace kernel_selection_test
}  // namespace nnfuse
