// GELU and Swish: every exported form fuses standalone (GeluFusionPass: one Gelu or Swish
// node) and as a dense layer's epilogue (MatMulBiasAddFusionPass: one FusedMatMul; conv and
// Gemm epilogues too), rejected matches carry their reason, and fused == unfused numerically.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "passes/fusions/fusion_test_util.h"
#include "passes/fusions/fusions.h"

namespace nnfuse {
namespace gelu_test {

using namespace fusion_test;

using Tail = std::function<Value*(B&, Value*)>;

Value* cst(B& b, float v) { return b.c(Tensor::scalar<float>(v)); }

struct Form {
  std::string name;
  std::string activation;   // the epilogue's `activation` attribute
  std::string op;           // the standalone node: Gelu or Swish
  std::string approximate;  // Gelu's attribute
  float alpha;              // Swish's attribute
  Tail tail;
};

const float kSqrt2 = std::sqrt(2.0f);
const float kK = std::sqrt(2.0f / 3.14159265f);

// 1 + erf(x / sqrt(2)) (or x * (1 / sqrt(2)) when `mul`), operands swapped when `swap`.
Value* erf_plus_one(B& b, Value* x, bool mul, bool swap) {
  Dims d = x->shape().static_dims();
  Value* s = mul ? b.n("Mul", {cst(b, 1 / kSqrt2), x}, d) : b.n("Div", {x, cst(b, kSqrt2)}, d);
  Value* e = b.n("Erf", {s}, d);
  return swap ? b.n("Add", {cst(b, 1), e}, d) : b.n("Add", {e, cst(b, 1)}, d);
}

// c * x^3 in the spellings exporters use.
Value* cubic(B& b, Value* x, int spelling) {
  Dims d = x->shape().static_dims();
  switch (spelling) {
    case 0:  // 0.044715 * (x * (x * x)), torch's tanh GELU
      return b.n("Mul", {cst(b, 0.044715f), b.n("Mul", {x, b.n("Mul", {x, x}, d)}, d)}, d);
    case 1:  // Pow(x, 3) * 0.044715
      return b.n("Mul", {b.n("Pow", {x, cst(b, 3)}, d), cst(b, 0.044715f)}, d);
    default:  // ((0.044715 * x) * x) * x
      return b.n("Mul", {b.n("Mul", {b.n("Mul", {cst(b, 0.044715f), x}, d), x}, d), x}, d);
  }
}

// 1 + tanh(k * (x + c x^3)); Megatron's k * x * (1 + c * x * x) when spelling is 3.
Value* tanh_plus_one(B& b, Value* x, int spelling) {
  Dims d = x->shape().static_dims();
  Value* arg;
  if (spelling == 3) {
    Value* cxx = b.n("Mul", {b.n("Mul", {cst(b, 0.044715f), x}, d), x}, d);
    arg = b.n("Mul", {b.n("Mul", {cst(b, kK), x}, d), b.n("Add", {cst(b, 1), cxx}, d)}, d);
  } else {
    arg = b.n("Mul", {cst(b, kK), b.n("Add", {x, cubic(b, x, spelling)}, d)}, d);
  }
  return b.n("Add", {cst(b, 1), b.n("Tanh", {arg}, d)}, d);
}

std::vector<Form> forms() {
  auto dims = [](Value* x) { return x->shape().static_dims(); };
  return {
      {"erf, x*0.5 first", "Gelu", "Gelu", "none", 0,
       [=](B& b, Value* x) {
         return b.n("Mul",
                    {b.n("Mul", {x, cst(b, 0.5f)}, dims(x)), erf_plus_one(b, x, false, false)},
                    dims(x));
       }},
      {"erf, 0.5 last (torch)", "Gelu", "Gelu", "none", 0,
       [=](B& b, Value* x) {
         Value* p = b.n("Mul", {x, erf_plus_one(b, x, false, true)}, dims(x));
         return b.n("Mul", {p, cst(b, 0.5f)}, dims(x));
       }},
      {"erf, 0.5 * (x * g), Mul by 1/sqrt2", "Gelu", "Gelu", "none", 0,
       [=](B& b, Value* x) {
         Value* p = b.n("Mul", {erf_plus_one(b, x, true, false), x}, dims(x));
         return b.n("Mul", {cst(b, 0.5f), p}, dims(x));
       }},
      {"erf, x * (g * 0.5)", "Gelu", "Gelu", "none", 0,
       [=](B& b, Value* x) {
         Value* h = b.n("Mul", {cst(b, 0.5f), erf_plus_one(b, x, true, true)}, dims(x));
         return b.n("Mul", {x, h}, dims(x));
       }},
      {"tanh, torch (x*(x*x), 0.5 last)", "GeluTanh", "Gelu", "tanh", 0,
       [=](B& b, Value* x) {
         Value* p = b.n("Mul", {x, tanh_plus_one(b, x, 0)}, dims(x));
         return b.n("Mul", {cst(b, 0.5f), p}, dims(x));
       }},
      {"tanh, Pow(x, 3), 0.5 * x first (gelu_new)", "GeluTanh", "Gelu", "tanh", 0,
       [=](B& b, Value* x) {
         Value* h = b.n("Mul", {cst(b, 0.5f), x}, dims(x));
         return b.n("Mul", {h, tanh_plus_one(b, x, 1)}, dims(x));
       }},
      {"tanh, ((c x) x) x, x*0.5 first", "GeluTanh", "Gelu", "tanh", 0,
       [=](B& b, Value* x) {
         Value* h = b.n("Mul", {x, cst(b, 0.5f)}, dims(x));
         return b.n("Mul", {tanh_plus_one(b, x, 2), h}, dims(x));
       }},
      {"tanh, Megatron k x (1 + c x x)", "GeluTanh", "Gelu", "tanh", 0,
       [=](B& b, Value* x) {
         Value* h = b.n("Mul", {x, cst(b, 0.5f)}, dims(x));
         return b.n("Mul", {h, tanh_plus_one(b, x, 3)}, dims(x));
       }},
      {"x * sigmoid(x)", "SiLU", "Swish", "", 1.0f,
       [=](B& b, Value* x) {
         return b.n("Mul", {x, b.n("Sigmoid", {x}, dims(x))}, dims(x));
       }},
      {"sigmoid(x) * x", "SiLU", "Swish", "", 1.0f,
       [=](B& b, Value* x) {
         return b.n("Mul", {b.n("Sigmoid", {x}, dims(x)), x}, dims(x));
       }},
      {"x * sigmoid(1.702 x)", "Swish", "Swish", "", 1.702f,
       [=](B& b, Value* x) {
         Value* s = b.n("Sigmoid", {b.n("Mul", {cst(b, 1.702f), x}, dims(x))}, dims(x));
         return b.n("Mul", {x, s}, dims(x));
       }},
      {"sigmoid(x * 1.702) * x", "Swish", "Swish", "", 1.702f,
       [=](B& b, Value* x) {
         Value* s = b.n("Sigmoid", {b.n("Mul", {x, cst(b, 1.702f)}, dims(x))}, dims(x));
         return b.n("Mul", {s, x}, dims(x));
       }},
  };
}

std::unique_ptr<Graph> standalone(const Tail& tail) {
  B b;
  Value* x = b.in("x", {2, 3, 9});
  b.out(tail(b, b.n("Relu", {x}, {2, 3, 9}, {}, "relu")));  // an op no epilogue takes
  return std::move(b.g);
}

// MatMul + bias [+ activation]
std::unique_ptr<Graph> dense(const Tail& tail, bool bias = true) {
  B b;
  Value* x = b.in("x", {2, 5, 8});
  Value* m = b.n("MatMul", {x, b.c(random_tensor({8, 6}, 7))}, {2, 5, 6}, {}, "mm");
  if (bias) m = b.n("Add", {b.c(random_tensor({6}, 8)), m}, {2, 5, 6}, {}, "add");
  b.out(tail(b, m));
  return std::move(b.g);
}

TEST(GeluFusion, EveryFormBecomesOneNode) {
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    auto r = fuse(standalone(f.tail));
    ASSERT_EQ(r.graph->num_nodes(), 2u) << graph_to_text(*r.graph);
    const Node* n = r.graph->nodes()[1];
    EXPECT_EQ(n->op_type(), f.op);
    EXPECT_EQ(n->domain(), "ai.nnfuse");
    EXPECT_EQ(n->fused_by(), "GeluFusionPass");
    if (f.op == "Gelu") {
      EXPECT_EQ(n->attr_string("approximate", ""), f.approximate);
    } else {
      EXPECT_FLOAT_EQ(n->attr_float("alpha", 0), f.alpha);
    }
    EXPECT_EQ(n->input(0)->name(), "relu_out");
    EXPECT_EQ(record(r.report, "GeluFusionPass")->effect_times, 1);
    EXPECT_TRUE(record(r.report, "GeluFusionPass")->rejected.empty());
    expect_same_numbers(std::move(r.graph), standalone(f.tail));
  }
}

TEST(GeluFusion, EveryFormIsAMatMulEpilogue) {
  for (const Form& f : forms()) {
    SCOPED_TRACE(f.name);
    auto r = fuse(dense(f.tail));
    ASSERT_EQ(r.graph->num_nodes(), 1u) << graph_to_text(*r.graph);
    const Node* n = r.graph->nodes()[0];
    EXPECT_EQ(n->op_type(), "FusedMatMul");
    EXPECT_EQ(n->attr_string("activation", ""), f.activation);
    if (f.activation == "Swish") {
      EXPECT_FLOAT_EQ(n->attr_float("activation_alpha", 0), f.alpha);
    }
    EXPECT_EQ(record(r.report, "MatMulBiasAddFusionPass")->effect_times, 1);
    EXPECT_EQ(record(r.report, "GeluFusionPass")->match_times, 0);
    expect_same_numbers(std::move(r.graph), dense(f.tail));
  }
}

TEST(GeluFusion, MatMulWithoutBiasKeepsAStandaloneGelu) {
  const Form f = forms()[4];  // tanh
  auto r = fuse(dense(f.tail, false));
  ASSERT_EQ(r.graph->num_nodes(), 2u) << graph_to_text(*r.graph);
  EXPECT_EQ(count_op(*r.graph, "MatMul"), 1u);
  EXPECT_EQ(count_op(*r.graph, "Gelu"), 1u);
  expect_same_numbers(std::move(r.graph), dense(f.tail, false));
}

TEST(GeluFusion, ConvAndGemmEpiloguesTakeTheNewForms) {
  for (size_t i : {4, 10}) {  // GELU tanh, Swish(1.702)
    const Form f = forms()[i];
    SCOPED_TRACE(f.name);
    auto conv = [&] {
      B b;
      Value* x = b.in("x", {1, 3, 5, 5});
      Value* y = b.n("Conv", {x, b.c(random_tensor({4, 3, 3, 3}, 1)), b.c(random_tensor({4}, 2))},
                     {1, 4, 3, 3}, {}, "conv");
      b.out(f.tail(b, y));
      return std::move(b.g);
    };
    auto r = fuse(conv());
    ASSERT_EQ(r.graph->num_nodes(), 1u) << graph_to_text(*r.graph);
    EXPECT_EQ(r.graph->nodes()[0]->op_type(), "FusedConv");
    EXPECT_EQ(r.graph->nodes()[0]->attr_string("activation", ""), f.activation);
    expect_same_numbers(std::move(r.graph), conv());
    auto gemm = [&] {
      B b;
      Value* x = b.in("x", {3, 8});
      Value* y = b.n("Gemm", {x, b.c(random_tensor({8, 5}, 3)), b.c(random_tensor({5}, 4))}, {3, 5},
                     {}, "gemm");
      b.out(f.tail(b, y));
      return std::move(b.g);
    };
    r = fuse(gemm());
    ASSERT_EQ(r.graph->num_nodes(), 1u) << graph_to_text(*r.graph);
    EXPECT_EQ(r.graph->nodes()[0]->op_type(), "FusedGemm");
    EXPECT_EQ(r.graph->nodes()[0]->attr_string("activation", ""), f.activation);
    expect_same_numbers(std::move(r.graph), gemm());
  }
}

TEST(GeluFusion, EscapingIntermediateIsRejectedWithItsName) {
  auto build = [] {
    auto g = standalone(forms()[1].tail);
    for (Node* n : g->nodes()) {
      if (n->op_type() == "Erf") g->add_output(n->output(0));
    }
    return g;
  };
  auto r = fuse(build());
  EXPECT_EQ(count_op(*r.graph, "Gelu"), 0u);
  const PassRecord* rec = record(r.report, "GeluFusionPass");
  ASSERT_EQ(rec->rejected.size(), 1u);
  EXPECT_NE(rec->rejected[0].reason.find("Erf"), std::string::npos) << rec->rejected[0].reason;
  EXPECT_EQ(rec->effect_times, 0);
  expect_same_numbers(std::move(r.graph), build());
}

TEST(GeluFusion, WrongConstantsDoNotMatch) {
  // 0.6 instead of 0.5; sqrt(3) instead of sqrt(2); 0.05 instead of 0.044715.
  Tail wrong_half = [](B& b, Value* x) {
    Dims d = x->shape().static_dims();
    return b.n("Mul", {b.n("Mul", {x, cst(b, 0.6f)}, d), erf_plus_one(b, x, false, false)}, d);
  };
  Tail wrong_sqrt = [](B& b, Value* x) {
    Dims d = x->shape().static_dims();
    Value* e = b.n("Erf", {b.n("Div", {x, cst(b, std::sqrt(3.0f))}, d)}, d);
    Value* p = b.n("Mul", {x, b.n("Add", {e, cst(b, 1)}, d)}, d);
    return b.n("Mul", {p, cst(b, 0.5f)}, d);
  };
  Tail wrong_c = [](B& b, Value* x) {
    Dims d = x->shape().static_dims();
    Value* c3 = b.n("Mul", {cst(b, 0.05f), b.n("Pow", {x, cst(b, 3)}, d)}, d);
    Value* t = b.n("Tanh", {b.n("Mul", {cst(b, kK), b.n("Add", {x, c3}, d)}, d)}, d);
    Value* p = b.n("Mul", {x, b.n("Add", {t, cst(b, 1)}, d)}, d);
    return b.n("Mul", {p, cst(b, 0.5f)}, d);
  };
  for (const Tail& t : {wrong_half, wrong_sqrt, wrong_c}) {
    auto r = fuse(standalone(t));
    EXPECT_EQ(count_op(*r.graph, "Gelu"), 0u) << graph_to_text(*r.graph);
    EXPECT_EQ(record(r.report, "GeluFusionPass")->effect_times, 0);
    expect_same_numbers(std::move(r.graph), standalone(t));
  }
}

TEST(GeluFusion, NonScalarSwishAlphaIsRejected) {
  Tail per_channel = [](B& b, Value* x) {
    Dims d = x->shape().static_dims();
    Value* s = b.n("Sigmoid", {b.n("Mul", {x, b.c(random_tensor({d.back()}, 5))}, d)}, d);
    return b.n("Mul", {x, s}, d);
  };
  auto r = fuse(standalone(per_channel));
  EXPECT_EQ(count_op(*r.graph, "Swish"), 0u);
  const PassRecord* rec = record(r.report, "GeluFusionPass");
  ASSERT_EQ(rec->rejected.size(), 1u);
  EXPECT_NE(rec->rejected[0].reason.find("scalar"), std::string::npos) << rec->rejected[0].reason;
  // As a MatMul epilogue too: the Add still fuses, without the activation.
  auto m = fuse_without_auto_fusion(dense(per_channel));
  EXPECT_EQ(count_op(*m.graph, "FusedMatMul"), 1u);
  EXPECT_EQ(count_op(*m.graph, "Sigmoid"), 1u);
  expect_same_numbers(std::move(m.graph), dense(per_channel));
}

TEST(GeluFusion, BroadcastingConstantIsRejected) {
  // x of shape [9] times a [2, 9] tensor of 0.5s grows the shape: not a Gelu of x.
  B b;
  Value* x = b.in("x", {9});
  Value* r = b.n("Relu", {x}, {9});
  Tensor halves(DType::kFloat32, {2, 9});
  for (int64_t i = 0; i < halves.numel(); ++i) halves.data<float>()[i] = 0.5f;
  Value* h = b.n("Mul", {r, b.c(halves)}, {2, 9});
  b.out(b.n("Mul", {h, erf_plus_one(b, r, false, false)}, {2, 9}));
  auto f = fuse(std::move(b.g));
  EXPECT_EQ(count_op(*f.graph, "Gelu"), 0u);
  const PassRecord* rec = record(f.report, "GeluFusionPass");
  ASSERT_EQ(rec->rejected.size(), 1u);
  EXPECT_NE(rec->rejected[0].reason.find("broadcast"), std::string::npos)
      << rec->rejected[0].reason;
}

TEST(GeluFusion, UnsupportedDtypeIsRejected) {
  auto g = standalone(forms()[0].tail);
  for (Value* v : g->values()) {
    if (!v->is_constant()) v->set_dtype(DType::kFloat16);
  }
  FusionReport report;
  PassContext ctx{report};
  make_gelu_pass()->run(*g, ctx);
  EXPECT_EQ(count_op(*g, "Gelu"), 0u);
  ASSERT_EQ(report.record("GeluFusionPass").rejected.size(), 1u);
  EXPECT_NE(report.record("GeluFusionPass").rejected[0].reason.find("float16"), std::string::npos);
}

}  // namespace gelu_test
}  // namespace nnfuse
