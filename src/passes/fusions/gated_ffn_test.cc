// GatedFFNFusionPass: GeGLU (erf and tanh GELU, with and without biases), SwiGLU and the
// bilinear GLU, in either order of the product, become one FusedGatedMatMul; declined with a
// reason where the halves differ or an intermediate is read elsewhere; fused == unfused
// numerically. A pre-norm block (LayerNorm or RMSNorm, gated FFN, down projection, residual)
// is two kernels: the norm as the gated product's prologue, the residual in the down one.
#include <gtest/gtest.h>

#include <cmath>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace gated_ffn_test {

using namespace fusion_test;

const char* const kPass = "GatedFFNFusionPass";

Value* cst(B& b, float v) { return b.c(Tensor::scalar<float>(v)); }

enum class Gate { kGeluErf, kGeluTanh, kSilu, kNone };

// act(h) as an exporter writes it.
Value* activation(B& b, Value* h, Gate gate) {
  const Dims d = h->shape().static_dims();
  switch (gate) {
    case Gate::kGeluErf: {
      Value* e = b.n("Erf", {b.n("Div", {h, cst(b, std::sqrt(2.0f))}, d)}, d);
      return b.n("Mul", {b.n("Mul", {h, b.n("Add", {e, cst(b, 1)}, d)}, d), cst(b, 0.5f)}, d);
    }
    case Gate::kGeluTanh: {
      Value* cube = b.n("Mul", {cst(b, 0.044715f), b.n("Mul", {h, b.n("Mul", {h, h}, d)}, d)}, d);
      Value* t = b.n(
          "Tanh",
          {b.n("Mul", {cst(b, std::sqrt(2.0f / 3.14159265f)), b.n("Add", {h, cube}, d)}, d)}, d);
      return b.n("Mul", {b.n("Mul", {cst(b, 0.5f), h}, d), b.n("Add", {cst(b, 1), t}, d)}, d);
    }
    case Gate::kSilu:
      return b.n("Mul", {h, b.n("Sigmoid", {h}, d)}, d);
    case Gate::kNone:
      return h;
  }
  return h;
}

struct Ffn {
  Gate gate = Gate::kGeluErf;
  bool bias = true;
  bool swap = false;       // Mul(up, gate)
  int64_t up_width = 24;   // the up projection's N (the gate's is 24)
  bool gate_read = false;  // the gate's activation is also a graph output
};

// x [2, 5, 16] -> act(x Wg (+ bg)) * (x Wu (+ bu)) -> y [2, 5, 24].
std::unique_ptr<Graph> ffn(const Ffn& f) {
  B b;
  Value* x = b.in("x", {2, 5, 16});
  auto dense = [&](int64_t n, uint32_t seed) {
    Value* h = b.n("MatMul", {x, b.c(random_tensor({16, n}, seed))}, {2, 5, n});
    return f.bias ? b.n("Add", {h, b.c(random_tensor({n}, seed + 1))}, {2, 5, n}) : h;
  };
  Value* g = activation(b, dense(24, 1), f.gate);
  Value* u = dense(f.up_width, 3);
  b.out(f.swap ? b.n("Mul", {u, g}, {2, 5, 24}) : b.n("Mul", {g, u}, {2, 5, 24}));
  if (f.gate_read) b.out(g);
  return std::move(b.g);
}

TEST(GatedFFNFusion, GegluSwigluAndGluBecomeOneGatedMatMul) {
  for (Gate gate : {Gate::kGeluErf, Gate::kGeluTanh, Gate::kSilu, Gate::kNone}) {
    for (bool bias : {true, false}) {
      for (bool swap : {false, true}) {
        const Ffn f{gate, bias, swap};
        SCOPED_TRACE(std::string("gate ") + std::to_string(static_cast<int>(gate)) +
                     (bias ? " bias" : "") + (swap ? " swapped" : ""));
        auto r = fuse(ffn(f));
        EXPECT_EQ(record(r.report, kPass)->effect_times, 1) << graph_to_text(*r.graph);
        EXPECT_EQ(r.graph->num_nodes(), 1u) << graph_to_text(*r.graph);
        EXPECT_EQ(count_op(*r.graph, "FusedGatedMatMul"), 1u);
        expect_same_numbers(std::move(r.graph), ffn(f));
      }
    }
  }
}

TEST(GatedFFNFusion, TheActivationIsTheGates) {
  const std::pair<Gate, std::string> cases[] = {
      {Gate::kGeluErf, "Gelu"}, {Gate::kGeluTanh, "GeluTanh"}, {Gate::kSilu, "SiLU"}};
  for (const auto& [gate, name] : cases) {
    for (bool bias : {true, false}) {
      auto r = fuse(ffn({gate, bias}));
      const Node* n = r.graph->nodes().back();
      ASSERT_EQ(n->op_type(), "FusedGatedMatMul");
      EXPECT_EQ(n->attr_string("activation", ""), name);
      EXPECT_EQ(n->input(1)->shape().static_dims(), (Dims{16, 48}));
      EXPECT_EQ(n->num_inputs(), bias ? 3u : 2u);
    }
  }
}

TEST(GatedFFNFusion, DeclinedWithAReason) {
  struct Case {
    Ffn f;
    std::string reason;
  };
  const Case cases[] = {
      {{Gate::kSilu, true, false, 1}, "differ in shape"},              // up [.., 1] broadcast
      {{Gate::kGeluErf, true, false, 24, true}, "is a graph output"},  // the gate read elsewhere
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    expect_declined(fuse(ffn(c.f)), kPass, c.reason, ffn(c.f));
  }
}

enum class Norm { kLayer, kRms };

// y = x + down(silu(n(x) Wg + bg) * (n(x) Wu + bu)) for x [2, 5, 16], n a LayerNormalization or
// an RMSNorm as exporters write it; with `norm_read`, n(x) is also a graph output.
std::unique_ptr<Graph> pre_norm_block(Norm norm, bool norm_read = false) {
  B b;
  const Dims d = {2, 5, 16};
  Value* x = b.in("x", d);
  Value* gamma = b.c(random_tensor({16}, 40, 0.5f, 1.5f));
  Value* h = nullptr;
  if (norm == Norm::kLayer) {
    h = b.n("LayerNormalization", {x, gamma, b.c(random_tensor({16}, 41))}, d,
            {{"axis", attr_int(-1)}, {"epsilon", attr_float(1e-5f)}});
  } else {
    Value* ms = b.n("ReduceMean", {b.n("Mul", {x, x}, d)}, {2, 5, 1},
                    {{"axes", attr_ints({-1})}, {"keepdims", attr_int(1)}});
    Value* rms = b.n("Sqrt", {b.n("Add", {ms, cst(b, 1e-6f)}, {2, 5, 1})}, {2, 5, 1});
    h = b.n("Mul", {b.n("Div", {x, rms}, d), gamma}, d);
  }
  auto dense = [&](Value* a, int64_t k, int64_t n, uint32_t seed) {
    Value* p = b.n("MatMul", {a, b.c(random_tensor({k, n}, seed))}, {2, 5, n});
    return b.n("Add", {p, b.c(random_tensor({n}, seed + 1))}, {2, 5, n});
  };
  Value* g = activation(b, dense(h, 16, 24, 42), Gate::kSilu);
  Value* gu = b.n("Mul", {g, dense(h, 16, 24, 44)}, {2, 5, 24});
  b.out(b.n("Add", {x, dense(gu, 24, 16, 46)}, d));
  if (norm_read) b.out(h);
  return std::move(b.g);
}

TEST(GatedFFNFusion, PreNormBlockIsTwoKernels) {
  for (Norm norm : {Norm::kLayer, Norm::kRms}) {
    SCOPED_TRACE(norm == Norm::kLayer ? "LayerNorm" : "RMSNorm");
    auto r = fuse(pre_norm_block(norm));
    ASSERT_EQ(r.graph->num_nodes(), 2u) << graph_to_text(*r.graph);
    const Node* gated = r.graph->nodes()[0];
    ASSERT_EQ(gated->op_type(), "FusedGatedMatMul");
    EXPECT_EQ(gated->num_inputs(), norm == Norm::kLayer ? 5u : 4u);
    EXPECT_EQ(gated->attr_string("norm", "layer"), norm == Norm::kLayer ? "layer" : "rms");
    EXPECT_EQ(gated->input(0)->name(), "x");
    EXPECT_EQ(r.graph->nodes()[1]->op_type(), "FusedMatMulResidual");
    EXPECT_EQ(record(r.report, "LayerNormMatMulFusionPass")->effect_times, 1);
    expect_same_numbers(std::move(r.graph), pre_norm_block(norm));
  }
}

TEST(GatedFFNFusion, ANormReadElsewhereStaysOutOfTheProduct) {
  for (Norm norm : {Norm::kLayer, Norm::kRms}) {
    auto r = fuse(pre_norm_block(norm, true));
    EXPECT_EQ(count_op(*r.graph, "FusedGatedMatMul"), 1u) << graph_to_text(*r.graph);
    for (const Node* n : r.graph->nodes()) {
      if (n->op_type() == "FusedGatedMatMul") {
        EXPECT_LE(n->num_inputs(), 3u);
      }
    }
    expect_declined(std::move(r), "LayerNormMatMulFusionPass", "does not pay",
                    pre_norm_block(norm, true));
  }
}

// One projection x W [16, 48] (+ b) cut in halves a, c by a Split or two Slices; y = act(a) * c
// with act SiLU or GELU, or F.glu's c * sigmoid(a) with a the second half.
struct Chunk {
  bool split = true, glu = false, bias = true;
};
std::unique_ptr<Graph> chunked(const Chunk& c) {
  B b;
  Value* x = b.in("x", {2, 5, 16});
  Value* h = b.n("MatMul", {x, b.c(random_tensor({16, 48}, 60))}, {2, 5, 48});
  if (c.bias) h = b.n("Add", {h, b.c(random_tensor({48}, 61))}, {2, 5, 48});
  Value *lo = nullptr, *hi = nullptr;
  if (c.split) {
    Node* sp =
        b.g->add_node("Split", "split", {h, b.c(Tensor::from_vector<int64_t>({2}, {24, 24}))},
                      {b.g->add_value("lo", DType::kFloat32, Shape::of({2, 5, 24})),
                       b.g->add_value("hi", DType::kFloat32, Shape::of({2, 5, 24}))});
    sp->set_attr("axis", attr_int(-1));
    lo = sp->output(0);
    hi = sp->output(1);
  } else {
    auto slice = [&](int64_t from, int64_t to) {
      auto i = [&](int64_t v) { return b.c(Tensor::from_vector<int64_t>({1}, {v})); };
      return b.n("Slice", {h, i(from), i(to), i(-1)}, {2, 5, 24});
    };
    lo = slice(0, 24);
    hi = slice(24, 48);
  }
  Value* gate = c.glu ? hi : lo;
  Value* up = c.glu ? lo : hi;
  const Dims d = {2, 5, 24};
  Value* g = c.glu ? b.n("Sigmoid", {gate}, d) : activation(b, gate, Gate::kSilu);
  b.out(b.n("Mul", {up, g}, d));
  return std::move(b.g);
}

TEST(GatedFFNFusion, OneProjectionCutInHalvesIsOneGatedMatMul) {
  for (bool split : {true, false}) {
    for (bool glu : {false, true}) {
      for (bool bias : {true, false}) {
        const Chunk c{split, glu, bias};
        SCOPED_TRACE(std::string(split ? "split" : "slices") + (glu ? " glu" : " swiglu") +
                     (bias ? " bias" : ""));
        auto r = fuse(chunked(c));
        ASSERT_EQ(r.graph->num_nodes(), 1u) << graph_to_text(*r.graph);
        const Node* n = r.graph->nodes()[0];
        EXPECT_EQ(n->op_type(), "FusedGatedMatMul");
        EXPECT_EQ(n->attr_string("activation", ""), glu ? "Sigmoid" : "SiLU");
        EXPECT_EQ(record(r.report, "GatedFFNChunkFusionPass")->effect_times, 1);
        expect_same_numbers(std::move(r.graph), chunked(c));
      }
    }
  }
}

TEST(GatedFFNFusion, AGateNotOfHalvesIsDeclined) {
  // x * sigmoid(y) of two inputs (a squeeze-and-excitation's form): not one projection's halves.
  auto plain = [] {
    B b;
    Value* x = b.in("x", {2, 8});
    Value* y = b.in("y", {2, 8});
    b.out(b.n("Mul", {x, b.n("Sigmoid", {y}, {2, 8})}, {2, 8}));
    return std::move(b.g);
  };
  expect_declined(fuse(plain()), "GatedFFNChunkFusionPass", "halves", plain());
}

}  // namespace gated_ffn_test
}  // namespace nnfuse
