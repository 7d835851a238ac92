#include "passes/auto_fuse/grouping.h"

#include <gtest/gtest.h>

#include <set>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace grouping_test {

using fusion_test::B;
using fusion_test::ints;
using Names = std::vector<std::string>;

Names names(const Region& r) {
  Names n;
  for (const Node* x : r.nodes) n.push_back(x->name());
  return n;
}

// The regions' node names, after checking each region against the independent oracle.
std::vector<Names> regions(const Graph& g, const GroupingOptions& o = {}) {
  std::vector<Names> r;
  for (const Region& reg : find_regions(g, o)) {
    EXPECT_EQ(region_violation(g, reg, o), "") << ::testing::PrintToString(names(reg));
    r.push_back(names(reg));
  }
  return r;
}

// "n<i>", appended rather than concatenated (g++ 12's false -Wrestrict).
std::string nth(int i) {
  std::string s = "n";
  s += std::to_string(i);
  return s;
}

Value* last_axes(B& b) { return b.c(Tensor::from_vector<int64_t>({1}, {-1})); }

std::map<std::string, Attribute> keep_last() {
  Attribute keep;
  keep.i = 1;
  return {{"axes", ints({-1})}, {"keepdims", keep}};
}

TEST(Grouping, ElementwiseChainIsOneRegion) {
  B b;
  Value* x = b.in("x", {4, 8});
  Value* y = b.n("Relu", {x}, {4, 8}, {}, "a");
  y = b.n("Exp", {y}, {4, 8}, {}, "b");
  y = b.n("Neg", {y}, {4, 8}, {}, "c");
  y = b.n("Sigmoid", {y}, {4, 8}, {}, "d");
  b.out(y);
  std::vector<Region> r = find_regions(*b.g);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(names(r[0]), (Names{"a", "b", "c", "d"}));
  EXPECT_EQ(r[0].inputs, std::vector<Value*>{x});
  EXPECT_EQ(r[0].outputs, std::vector<Value*>{y});
  EXPECT_EQ(r[0].reductions, 0);
  EXPECT_EQ(region_violation(*b.g, r[0], {}), "");
}

TEST(Grouping, DiamondIsOneRegion) {
  B b;
  Value* x = b.in("x", {4, 8});
  Value* p = b.n("Neg", {x}, {4, 8}, {}, "p");
  Value* l = b.n("Relu", {p}, {4, 8}, {}, "l");
  Value* r1 = b.n("Exp", {p}, {4, 8}, {}, "r1");
  Value* r2 = b.n("Tanh", {r1}, {4, 8}, {}, "r2");  // a longer right branch
  b.out(b.n("Add", {l, r2}, {4, 8}, {}, "add"));
  EXPECT_EQ(regions(*b.g), (std::vector<Names>{{"p", "l", "r1", "r2", "add"}}));
}

TEST(Grouping, MatMulOrConvSplitsAChain) {
  B b;
  Value* x = b.in("x", {4, 8});
  Value* y = b.n("Relu", {x}, {4, 8}, {}, "a");
  y = b.n("Exp", {y}, {4, 8}, {}, "b");
  y = b.n("MatMul", {y, b.c(fusion_test::random_tensor({8, 8}, 1))}, {4, 8}, {}, "mm");
  y = b.n("Tanh", {y}, {4, 8}, {}, "c");
  b.out(b.n("Sigmoid", {y}, {4, 8}, {}, "d"));
  EXPECT_EQ(regions(*b.g), (std::vector<Names>{{"a", "b"}, {"c", "d"}}));

  B k;
  Value* i = k.in("x", {1, 2, 4, 4});
  Value* z = k.n("Relu", {i}, {1, 2, 4, 4}, {}, "a");
  z = k.n("Neg", {z}, {1, 2, 4, 4}, {}, "b");
  z = k.n("Conv", {z, k.c(fusion_test::random_tensor({3, 2, 1, 1}, 2))}, {1, 3, 4, 4}, {}, "conv");
  z = k.n("Relu", {z}, {1, 3, 4, 4}, {}, "c");
  k.out(k.n("Sigmoid", {z}, {1, 3, 4, 4}, {}, "d"));
  EXPECT_EQ(regions(*k.g), (std::vector<Names>{{"a", "b"}, {"c", "d"}}));
}

TEST(Grouping, ValueUsedOutsideEndsTheRegion) {
  B b;
  Value* x = b.in("x", {4, 8});
  Value* y = b.n("Relu", {x}, {4, 8}, {}, "a");
  Value* m = b.n("Exp", {y}, {4, 8}, {}, "b");
  y = b.n("Neg", {m}, {4, 8}, {}, "c");
  y = b.n("Abs", {y}, {4, 8}, {}, "d");
  b.out(y);
  b.out(b.n("MatMul", {m, b.c(fusion_test::random_tensor({8, 8}, 1))}, {4, 8}, {}, "mm"));
  // b's output also goes to the MatMul, so b ends its own region.
  EXPECT_EQ(regions(*b.g), (std::vector<Names>{{"a", "b"}, {"c", "d"}}));

  B o;  // the same with a graph output in the middle
  Value* i = o.in("x", {4, 8});
  Value* z = o.n("Relu", {i}, {4, 8}, {}, "a");
  z = o.n("Exp", {z}, {4, 8}, {}, "b");
  o.out(z);
  z = o.n("Neg", {z}, {4, 8}, {}, "c");
  o.out(o.n("Abs", {z}, {4, 8}, {}, "d"));
  EXPECT_EQ(regions(*o.g), (std::vector<Names>{{"a", "b"}, {"c", "d"}}));
}

TEST(Grouping, NoCycleThroughAnOutsideNode) {
  // a -> MatMul -> add and a -> add: {a, add} would need the MatMul in the middle.
  B b;
  Value* x = b.in("x", {4, 8});
  Value* a = b.n("Relu", {x}, {4, 8}, {}, "a");
  Value* m = b.n("MatMul", {a, b.c(fusion_test::random_tensor({8, 8}, 1))}, {4, 8}, {}, "mm");
  Value* s = b.n("Add", {a, m}, {4, 8}, {}, "add");
  b.out(b.n("Exp", {s}, {4, 8}, {}, "e"));
  EXPECT_EQ(regions(*b.g), (std::vector<Names>{{"add", "e"}}));
}

// x -> n0 -> n1 -> ... -> n{count-1}, each unary.
std::unique_ptr<Graph> unary_chain(int count) {
  B b;
  Value* y = b.in("x", {4, 8});
  for (int i = 0; i < count; ++i) {
    y = b.n(i % 2 ? "Exp" : "Relu", {y}, {4, 8}, {}, nth(i));
  }
  b.out(y);
  return std::move(b.g);
}

TEST(Grouping, MaxOpsCutsAChainFromItsEnd) {
  GroupingOptions o;
  o.max_ops = 4;
  EXPECT_EQ(regions(*unary_chain(10), o),
            (std::vector<Names>{{"n0", "n1"}, {"n2", "n3", "n4", "n5"}, {"n6", "n7", "n8", "n9"}}));
  EXPECT_EQ(regions(*unary_chain(40)).size(), 2u);  // default 32: 32 + 8
  EXPECT_EQ(regions(*unary_chain(40))[0].size(), 8u);
  o.max_ops = 1;
  EXPECT_TRUE(regions(*unary_chain(5), o).empty());
}

TEST(Grouping, MaxInputsCutsAChain) {
  // x -> Add(c0) -> Add(c1) -> ... -> Add(c9), each constant distinct.
  B b;
  Value* y = b.in("x", {4, 8});
  for (int i = 0; i < 10; ++i) {
    y = b.n("Add", {y, b.c(fusion_test::random_tensor({4, 8}, i + 1))}, {4, 8}, {}, nth(i));
  }
  b.out(y);
  GroupingOptions o;
  o.max_inputs = 4;  // the running value and 3 constants: 3 Adds per region
  EXPECT_EQ(regions(*b.g, o),
            (std::vector<Names>{{"n1", "n2", "n3"}, {"n4", "n5", "n6"}, {"n7", "n8", "n9"}}));
  std::vector<Region> r = find_regions(*b.g, o);
  EXPECT_EQ(r[0].inputs.size(), 4u);
  // Default 8: the last 7 Adds (their 7 constants and the running value), then n0..n2.
  EXPECT_EQ(regions(*b.g),
            (std::vector<Names>{{"n0", "n1", "n2"}, {"n3", "n4", "n5", "n6", "n7", "n8", "n9"}}));
}

TEST(Grouping, MaxReductionsCutsAChain) {
  // x -> Exp -> ReduceMax -> Neg -> ReduceSum -> Relu
  B b;
  Value* x = b.in("x", {4, 8});
  Value* y = b.n("Exp", {x}, {4, 8}, {}, "exp");
  y = b.n("ReduceMax", {y}, {4, 1}, keep_last(), "rmax");
  y = b.n("Neg", {y}, {4, 1}, {}, "neg");
  y = b.n("ReduceSum", {y, last_axes(b)}, {4, 1}, {}, "rsum");
  b.out(b.n("Relu", {y}, {4, 1}, {}, "relu"));
  EXPECT_EQ(regions(*b.g), (std::vector<Names>{{"exp", "rmax"}, {"neg", "rsum", "relu"}}));
  GroupingOptions o;
  o.max_reductions = 2;
  EXPECT_EQ(regions(*b.g, o), (std::vector<Names>{{"exp", "rmax", "neg", "rsum", "relu"}}));
  EXPECT_EQ(find_regions(*b.g, o)[0].reductions, 2);
  o.max_reductions = 0;
  EXPECT_TRUE(regions(*b.g, o).empty());
}

TEST(Grouping, SoftmaxPatternSplitsWithoutDuplicating) {
  // p -> ReduceMax -> Sub(p, max) -> Exp -> ReduceSum -> Div(e, sum)
  auto build = [] {
    B b;
    Value* x = b.in("x", {4, 8});
    Value* p = b.n("Neg", {x}, {4, 8}, {}, "p");
    Value* mx = b.n("ReduceMax", {p}, {4, 1}, keep_last(), "rmax");
    Value* s = b.n("Sub", {p, mx}, {4, 8}, {}, "sub");
    Value* e = b.n("Exp", {s}, {4, 8}, {}, "exp");
    Value* sum = b.n("ReduceSum", {e, last_axes(b)}, {4, 1}, {}, "rsum");
    b.out(b.n("Div", {e, sum}, {4, 8}, {}, "div"));
    return std::move(b.g);
  };
  const std::vector<Names> want{{"rmax", "sub", "exp"}, {"rsum", "div"}};
  std::unique_ptr<Graph> g = build();
  EXPECT_EQ(regions(*g), want);
  std::vector<Region> r = find_regions(*g);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].inputs, std::vector<Value*>{g->find_value("p_out")});
  EXPECT_EQ(r[1].inputs.front(), g->find_value("exp_out"));
  // Not a matter of the reduction limit: the guard alone splits there.
  GroupingOptions o;
  o.max_reductions = 4;
  EXPECT_EQ(regions(*g, o), want);

  // The single Softmax node is a last-axis reduction joining its neighbours.
  B b;
  Value* y = b.n("Neg", {b.in("x", {4, 8})}, {4, 8}, {}, "neg");
  y = b.n("Softmax", {y}, {4, 8}, {}, "softmax");
  b.out(b.n("Relu", {y}, {4, 8}, {}, "relu"));
  EXPECT_EQ(regions(*b.g), (std::vector<Names>{{"neg", "softmax", "relu"}}));
}

TEST(Grouping, LayerNormPatternRespectsMaxReductions) {
  // x -> mean -> d = x - mean -> d^2 -> mean -> + eps -> sqrt -> d / . -> * gamma -> + beta
  B b;
  Value* x = b.in("x", {4, 8});
  Value* m1 = b.n("ReduceMean", {x}, {4, 1}, keep_last(), "mean1");
  Value* d = b.n("Sub", {x, m1}, {4, 8}, {}, "sub");
  Value* q = b.n("Pow", {d, b.c(Tensor::scalar(2.0f))}, {4, 8}, {}, "pow");
  Value* m2 = b.n("ReduceMean", {q}, {4, 1}, keep_last(), "mean2");
  Value* a = b.n("Add", {m2, b.c(Tensor::scalar(1e-5f))}, {4, 1}, {}, "eps");
  Value* s = b.n("Sqrt", {a}, {4, 1}, {}, "sqrt");
  Value* n = b.n("Div", {d, s}, {4, 8}, {}, "div");
  Value* y = b.n("Mul", {n, b.c(fusion_test::random_tensor({8}, 1))}, {4, 8}, {}, "gamma");
  b.out(b.n("Add", {y, b.c(fusion_test::random_tensor({8}, 2))}, {4, 8}, {}, "beta"));
  const std::vector<Names> want{{"mean1", "sub"},
                                {"pow", "mean2", "eps", "sqrt", "div", "gamma", "beta"}};
  EXPECT_EQ(regions(*b.g), want);
  for (const Region& r : find_regions(*b.g)) EXPECT_EQ(r.reductions, 1);
  GroupingOptions o;
  o.max_reductions = 2;  // d is needed before and after mean2: still split there
  EXPECT_EQ(regions(*b.g, o), want);
  o.max_reductions = 0;
  EXPECT_EQ(regions(*b.g, o), (std::vector<Names>{{"eps", "sqrt", "div", "gamma", "beta"}}));
}

TEST(Grouping, InjectiveOpsJoin) {
  B b;
  Value* x = b.in("x", {2, 3, 4});
  Value* y = b.n("Relu", {x}, {2, 3, 4}, {}, "relu");
  y = b.n("Transpose", {y}, {2, 4, 3}, {{"perm", ints({0, 2, 1})}}, "transpose");
  Value* shape = b.c(Tensor::from_vector<int64_t>({2}, {8, 3}));
  y = b.n("Reshape", {y, shape}, {8, 3}, {}, "reshape");
  b.out(b.n("Exp", {y}, {8, 3}, {}, "exp"));
  EXPECT_EQ(regions(*b.g), (std::vector<Names>{{"relu", "transpose", "reshape", "exp"}}));
  EXPECT_EQ(find_regions(*b.g)[0].inputs, (std::vector<Value*>{x, shape}));
}

TEST(Grouping, OpaqueOpsAndOtherReductionsBound) {
  B b;
  Value* x = b.in("x", {4, 8});
  Value* y = b.n("Relu", {x}, {4, 8}, {}, "a");
  y = b.n("Exp", {y}, {4, 8}, {}, "b");
  y = b.n("CumSum", {y, b.c(Tensor::scalar<int64_t>(1))}, {4, 8}, {}, "cumsum");
  y = b.n("Neg", {y}, {4, 8}, {}, "c");
  y = b.n("Abs", {y}, {4, 8}, {}, "d");
  y = b.n("ReduceSum", {y, b.c(Tensor::from_vector<int64_t>({1}, {0}))}, {1, 8}, {}, "rsum0");
  y = b.n("Relu", {y}, {1, 8}, {}, "e");
  y = b.n("MyCustomOp", {y}, {1, 8}, {}, "custom");
  b.out(b.n("Relu", {y}, {1, 8}, {}, "f"));
  EXPECT_EQ(regions(*b.g), (std::vector<Names>{{"a", "b"}, {"c", "d"}}));
}

TEST(Grouping, ViolationsAreReported) {
  B b;
  Value* x = b.in("x", {4, 8});
  Value* a = b.n("Relu", {x}, {4, 8}, {}, "a");
  Value* m = b.n("MatMul", {a, b.c(fusion_test::random_tensor({8, 8}, 1))}, {4, 8}, {}, "mm");
  Value* s = b.n("Add", {a, m}, {4, 8}, {}, "add");
  b.out(s);
  Region r;
  r.nodes = {a->producer(), s->producer()};
  r.inputs = {x, m};
  r.outputs = {s};
  EXPECT_NE(region_violation(*b.g, r, {}).find("used outside"), std::string::npos);
  r.nodes = {s->producer(), a->producer()};
  EXPECT_NE(region_violation(*b.g, r, {}).find("topological"), std::string::npos);
  r.nodes = {m->producer(), s->producer()};
  EXPECT_NE(region_violation(*b.g, r, {}).find("cannot be a member"), std::string::npos);
}

TEST(AutoFuse, RandomGraphsGiveValidDisjointRegions) {
  const char* unary[] = {"Relu", "Exp", "Neg", "Tanh"};
  const char* binary[] = {"Add", "Mul", "Sub", "Div"};
  int total = 0, with_reductions = 0;  // so the property is not checked on nothing
  uint32_t s = 12345;
  auto next = [&](uint32_t n) {
    s = s * 1664525u + 1013904223u;
    return (s >> 8) % n;
  };
  for (int round = 0; round < 200; ++round) {
    B b;
    std::vector<Value*> full{b.in("x", {4, 8})}, rows;
    for (int i = 0; i < 30; ++i) {
      const uint32_t kind = next(10);
      Value* a = full[full.size() - 1 - next(std::min<uint32_t>(4, full.size()))];
      if (kind < 3) {
        full.push_back(b.n(unary[next(4)], {a}, {4, 8}));
      } else if (kind < 6) {
        Value* c = !rows.empty() && next(2) ? rows[next(rows.size())]
                                            : full[next(static_cast<uint32_t>(full.size()))];
        full.push_back(b.n(binary[next(4)], {a, c}, {4, 8}));
      } else if (kind < 8) {
        rows.push_back(b.n(next(2) ? "ReduceMax" : "ReduceMean", {a}, {4, 1}, keep_last()));
      } else if (kind < 9) {
        full.push_back(b.n("MatMul", {a, b.c(fusion_test::random_tensor({8, 8}, i))}, {4, 8}));
      } else {
        full.push_back(b.n("MyCustomOp", {a}, {4, 8}));
      }
    }
    b.out(full.back());
    for (int i = 0; i < 3; ++i) {
      Value* v = full[next(static_cast<uint32_t>(full.size()))];
      if (!v->is_graph_input() && !v->is_graph_output()) b.out(v);
    }
    GroupingOptions o;
    o.max_ops = 2 + static_cast<int>(next(10));
    o.max_inputs = 1 + static_cast<int>(next(6));
    o.max_reductions = static_cast<int>(next(3));
    std::set<const Node*> seen;
    for (const Region& r : find_regions(*b.g, o)) {
      EXPECT_EQ(region_violation(*b.g, r, o), "") << "round " << round;
      for (const Node* n : r.nodes) EXPECT_TRUE(seen.insert(n).second) << "round " << round;
      ++total;
      with_reductions += r.reductions > 0;
    }
  }
  EXPECT_GT(total, 300);
  EXPECT_GT(with_reductions, 50);
}

}  // namespace grouping_test
}  // namespace nnfuse
