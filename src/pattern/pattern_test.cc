#include "pattern/pattern.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/error.h"
#include "testing/graph_builder.h"

namespace nnfuse::pattern {
namespace pattern_test {

constexpr float kSqrt2 = 1.41421356f;
constexpr float kInvSqrt2 = 0.70710678f;

// Hand-built graphs: each node writes one value named after it.
using Builder = testing::GraphBuilder;

// y = (x * 0.5) * (erf(x / sqrt2) + 1) in the spelling the flags ask for.
struct GeluGraph {
  Builder b;
  Value* x;
  Node* last;
  GeluGraph(bool swapped, bool mul_by_inverse, float divisor = kSqrt2) {
    x = b.input("x");
    Value* scaled = mul_by_inverse ? (swapped ? b.op("Mul", "div", {b.cst("c", kInvSqrt2), x})
                                              : b.op("Mul", "div", {x, b.cst("c", kInvSqrt2)}))
                                   : b.op("Div", "div", {x, b.cst("c", divisor)});
    Value* e = b.op("Erf", "erf", {scaled});
    Value* one = b.cst("one", 1.0f);
    Value* a = swapped ? b.op("Add", "add", {one, e}) : b.op("Add", "add", {e, one});
    Value* half = b.cst("half", 0.5f);
    Value* h = swapped ? b.op("Mul", "mul_1", {half, x}) : b.op("Mul", "mul_1", {x, half});
    last = swapped ? b.node("Mul", "mul_2", {a, h}) : b.node("Mul", "mul_2", {h, a});
    b.g->add_output(last->output(0));
  }
};

struct GeluPattern {
  Pat x = any("x");
  Pat root = x * 0.5f * (erf(any_of({x / kSqrt2, x* kInvSqrt2})) + 1.0f);
};

TEST(PatternGelu, MatchesErfFormWithDivision) {
  GeluGraph gg(false, false);
  GeluPattern p;
  std::string why;
  auto m = match_at(*gg.b.g, p.root, gg.last, &why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ((*m)[p.x], gg.x);
  EXPECT_EQ(m->value("x"), gg.x);
  EXPECT_EQ(m->root(), gg.last);
  EXPECT_EQ(m->node_names(), (std::vector<std::string>{"div", "erf", "add", "mul_1", "mul_2"}));
}

TEST(PatternGelu, MatchesSwappedOperandsAndMulByInverse) {
  GeluPattern p;
  for (bool swapped : {false, true}) {
    for (bool inverse : {false, true}) {
      GeluGraph gg(swapped, inverse);
      std::string why;
      auto m = match_at(*gg.b.g, p.root, gg.last, &why);
      ASSERT_TRUE(m) << "swapped=" << swapped << " inverse=" << inverse << ": " << why;
      EXPECT_EQ((*m)[p.x], gg.x);
      EXPECT_EQ(m->nodes().size(), 5u);
      EXPECT_EQ(m->nodes().back(), gg.last);
    }
  }
}

TEST(PatternGelu, WrongDivisorIsRejectedWithReason) {
  GeluGraph gg(false, false, 1.5f);
  GeluPattern p;
  std::string why;
  EXPECT_FALSE(match_at(*gg.b.g, p.root, gg.last, &why));
  EXPECT_NE(why.find("node 'div'"), std::string::npos) << why;
  EXPECT_NE(why.find("input 1"), std::string::npos) << why;
  EXPECT_NE(why.find("is not the constant 1.414"), std::string::npos) << why;
}

TEST(PatternCommutative, AddMatchesBothOrders) {
  Builder b;
  Value* x = b.input("x");
  Node* a1 = b.node("Add", "a1", {x, b.cst("one", 1.0f)});
  Node* a2 = b.node("Add", "a2", {b.cst("one_b", 1.0f), x});
  Pat px = any("x");
  Pat p = px + 1.0f;
  for (Node* n : {a1, a2}) {
    std::string why;
    auto m = match_at(*b.g, p, n, &why);
    ASSERT_TRUE(m) << n->name() << ": " << why;
    EXPECT_EQ((*m)[px], x);
  }
}

TEST(PatternCommutative, SubIsNotCommutative) {
  Builder b;
  Value* x = b.input("x");
  Node* s = b.node("Sub", "s", {b.cst("one", 1.0f), x});
  Pat p = any("x") - 1.0f;
  std::string why;
  EXPECT_FALSE(match_at(*b.g, p, s, &why));
  EXPECT_NE(why.find("node 's'"), std::string::npos) << why;
  EXPECT_TRUE(match_at(*b.g, 1.0f - any("x"), s));
}

TEST(PatternDag, SameValueMustBindEveryUse) {
  Pat x = any("x");
  Pat silu = x * sigmoid(x);
  {
    Builder b;
    Value* a = b.input("a");
    Node* mul = b.node("Mul", "mul", {b.op("Sigmoid", "sig", {a}), a});
    auto m = match_at(*b.g, silu, mul);
    ASSERT_TRUE(m);
    EXPECT_EQ((*m)[x], a);
  }
  {
    Builder b;
    Value* a = b.input("a");
    Value* other = b.input("other");
    Node* mul = b.node("Mul", "mul", {a, b.op("Sigmoid", "sig", {other})});
    std::string why;
    EXPECT_FALSE(match_at(*b.g, silu, mul, &why));
    EXPECT_NE(why.find("already bound"), std::string::npos) << why;
  }
}

TEST(PatternDag, BacktracksAcrossSiblings) {
  // Add(Mul(b, a), a): the first operand order of the Mul binds x = b, which only fails at
  // the Add's second input; the matcher must go back and swap the Mul.
  Builder b;
  Value* va = b.input("a");
  Value* vb = b.input("b");
  Node* add = b.node("Add", "add", {b.op("Mul", "mul", {vb, va}), va});
  Pat x = any("x");
  Pat y = any("y");
  Pat p = op("Add", {op("Mul", {x, y}), x});
  std::string why;
  auto m = match_at(*b.g, p, add, &why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ((*m)[x], va);
  EXPECT_EQ((*m)[y], vb);
}

TEST(PatternDag, SameNameBindsSameValue) {
  Builder b;
  Value* va = b.input("a");
  Value* vb = b.input("b");
  Node* same = b.node("Mul", "same", {va, va});
  Node* diff = b.node("Mul", "diff", {va, vb});
  Pat p = any("v") * any("v");
  EXPECT_TRUE(match_at(*b.g, p, same));
  EXPECT_FALSE(match_at(*b.g, p, diff));
}

TEST(PatternAnyOf, FailedAlternativeIsRolledBack) {
  Builder b;
  Value* va = b.input("a");
  Value* vb = b.input("b");
  Node* add = b.node("Add", "add", {va, vb});
  Pat x = any("x");
  Pat z = any("z");
  Pat w = any("w");
  Pat first = x + 1.0f;  // binds x, then fails on the constant
  Pat second = op("Add", {z, w});
  Pat p = any_of({first, second});
  auto m = match_at(*b.g, p, add);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)[x], nullptr);
  EXPECT_EQ(m->value("x"), nullptr);
  EXPECT_EQ((*m)[first], nullptr);
  EXPECT_EQ((*m)[second], add->output(0));
  EXPECT_EQ((*m)[z], va);
  EXPECT_EQ((*m)[w], vb);
  EXPECT_EQ((*m)[p], add->output(0));
  ASSERT_EQ(m->nodes().size(), 1u);
  EXPECT_EQ(m->nodes()[0], add);
}

TEST(PatternScalar, ToleranceAndElementTypes) {
  Builder b;
  Value* x = b.input("x");
  Node* close = b.node("Mul", "close", {x, b.cst("c1", 0.5000001f)});
  Node* far = b.node("Mul", "far", {x, b.cst("c2", 0.51f)});
  Node* vec = b.node("Mul", "vec", {x, b.cst("c3", Tensor::from_vector<float>({2}, {0.5f, 0.5f}))});
  Node* mixed =
      b.node("Mul", "mixed", {x, b.cst("c4", Tensor::from_vector<float>({2}, {0.5f, 0.6f}))});
  Node* integer = b.node("Mul", "integer", {x, b.cst("c5", Tensor::scalar<int64_t>(2))});
  Tensor h(DType::kFloat16, {});
  *static_cast<uint16_t*>(h.raw()) = 0x3800;  // 0.5 in IEEE half
  Node* half = b.node("Mul", "half", {x, b.cst("c6", h)});
  Node* empty = b.node("Mul", "empty", {x, b.cst("c7", Tensor(DType::kFloat32, {0}))});

  Pat p = any() * 0.5f;
  EXPECT_TRUE(match_at(*b.g, p, close));
  std::string why;
  EXPECT_FALSE(match_at(*b.g, p, far, &why));
  EXPECT_NE(why.find("0.51"), std::string::npos) << why;
  EXPECT_TRUE(match_at(*b.g, any() * scalar(0.5f, 0.05f), far));
  EXPECT_TRUE(match_at(*b.g, p, vec));
  EXPECT_FALSE(match_at(*b.g, p, mixed, &why));
  EXPECT_NE(why.find("element 1"), std::string::npos) << why;
  EXPECT_TRUE(match_at(*b.g, any() * 2.0f, integer));
  EXPECT_FALSE(match_at(*b.g, p, integer));
  EXPECT_TRUE(match_at(*b.g, p, half));
  EXPECT_FALSE(match_at(*b.g, p, empty));
}

TEST(PatternConstant, InitializerAndConstantNode) {
  Builder b;
  Value* x = b.input("x");
  Value* init = b.cst("init", 3.0f);
  Node* cn = b.node("Constant", "cn", {});
  Attribute tensor_attr;
  tensor_attr.kind = Attribute::Kind::kTensor;
  tensor_attr.t = Tensor::scalar<float>(0.5f);
  cn->set_attr("value", tensor_attr);
  Node* cf = b.node("Constant", "cf", {});
  Attribute f;
  f.kind = Attribute::Kind::kFloat;
  f.f = 0.5f;
  cf->set_attr("value_float", f);
  Node* ci = b.node("Constant", "ci", {}, DType::kInt64);
  Attribute ints;
  ints.kind = Attribute::Kind::kInts;
  ints.ints = {4, 5};
  ci->set_attr("value_ints", ints);
  Node* relu = b.node("Relu", "relu", {x});

  EXPECT_EQ(constant_value(init), &init->constant());
  const Tensor* t = constant_value(cn->output(0));
  ASSERT_NE(t, nullptr);
  EXPECT_FLOAT_EQ(t->data<float>()[0], 0.5f);
  const Tensor* tf = constant_value(cf->output(0));
  ASSERT_NE(tf, nullptr);
  EXPECT_FLOAT_EQ(tf->data<float>()[0], 0.5f);
  EXPECT_EQ(constant_value(cf->output(0)), tf);  // cached: the pointer stays valid
  const Tensor* ti = constant_value(ci->output(0));
  ASSERT_NE(ti, nullptr);
  EXPECT_EQ(ti->to_int64_vector(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(constant_value(x), nullptr);
  EXPECT_EQ(constant_value(relu->output(0)), nullptr);

  Node* m1 = b.node("Mul", "m1", {x, init});
  Node* m2 = b.node("Mul", "m2", {x, cn->output(0)});
  Node* m3 = b.node("Mul", "m3", {x, relu->output(0)});
  Pat c = constant("c");
  Pat p = any("x") * c;
  auto r1 = match_at(*b.g, p, m1);
  ASSERT_TRUE(r1);
  EXPECT_EQ((*r1)[c], init);
  auto r2 = match_at(*b.g, p, m2);
  ASSERT_TRUE(r2);
  EXPECT_EQ((*r2)[c], cn->output(0));
  // The Constant node is not part of the matched set.
  EXPECT_EQ(r2->nodes().size(), 1u);
  EXPECT_TRUE(match_at(*b.g, any() * 0.5f, m2));
  EXPECT_TRUE(match_at(*b.g, any() * 0.5f, b.node("Mul", "m4", {cf->output(0), x})));
  std::string why;
  EXPECT_FALSE(match_at(*b.g, p, m3, &why));
  EXPECT_NE(why.find("not a compile-time constant"), std::string::npos) << why;
}

TEST(PatternThrough, SkipsCastAndIdentity) {
  Builder b;
  Value* x = b.input("x");
  Value* r = b.op("Relu", "relu", {x});
  Node* cast = b.node("Cast", "cast", {r});
  Attribute to;
  to.kind = Attribute::Kind::kInt;
  to.i = static_cast<int64_t>(DType::kFloat32);
  cast->set_attr("to", to);
  Node* id = b.node("Identity", "id", {cast->output(0)});
  Node* neg = b.node("Neg", "neg", {id->output(0)});
  Pat inner = relu(any("x"));
  Pat p = op("Neg", {through(inner)});
  std::string why;
  auto m = match_at(*b.g, p, neg, &why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->node_names(), (std::vector<std::string>{"relu", "cast", "id", "neg"}));
  EXPECT_EQ((*m)[inner], r);
  // Zero pass-through nodes is fine too.
  Node* neg2 = b.node("Neg", "neg2", {r});
  auto m2 = match_at(*b.g, p, neg2);
  ASSERT_TRUE(m2);
  EXPECT_EQ(m2->nodes().size(), 2u);
  // Without through(), the Identity is in the way.
  EXPECT_FALSE(match_at(*b.g, op("Neg", {inner}), neg));
  // Identity only: the Cast stops the walk.
  EXPECT_FALSE(match_at(*b.g, op("Neg", {through(inner, {"Identity"})}), neg));
}

TEST(PatternThrough, TypeChangingCastBlocks) {
  Builder b;
  Value* x = b.input("x");
  Value* r = b.op("Relu", "relu", {x});
  Node* cast = b.node("Cast", "cast", {r}, DType::kInt64);
  Attribute to;
  to.kind = Attribute::Kind::kInt;
  to.i = static_cast<int64_t>(DType::kInt64);
  cast->set_attr("to", to);
  Node* neg = b.node("Neg", "neg", {cast->output(0)}, DType::kInt64);
  EXPECT_FALSE(match_at(*b.g, op("Neg", {through(relu(any()))}), neg));
}

TEST(PatternConstraints, RankDtypeWhereAndWhereNode) {
  Builder b;
  Value* x = b.input("x", Shape::of({2, 3, 4}));
  Value* ids = b.input("ids", Shape::of({2}), DType::kInt64);
  Node* sm = b.node("Softmax", "sm", {x});
  Attribute axis;
  axis.kind = Attribute::Kind::kInt;
  axis.i = 1;
  sm->set_attr("axis", axis);
  Node* neg = b.node("Neg", "neg", {ids}, DType::kInt64);

  std::string why;
  EXPECT_TRUE(match_at(*b.g, op("Softmax", {any().rank(3)}), sm));
  EXPECT_FALSE(match_at(*b.g, op("Softmax", {any().rank(4)}), sm, &why));
  EXPECT_NE(why.find("rank 4"), std::string::npos) << why;
  EXPECT_NE(why.find("'sm'"), std::string::npos) << why;
  EXPECT_NE(why.find("it has rank 3"), std::string::npos) << why;

  EXPECT_FALSE(match_at(*b.g, op("Neg", {any().dtype(DType::kFloat32)}), neg, &why));
  EXPECT_NE(why.find("dtype float32"), std::string::npos) << why;
  EXPECT_NE(why.find("'neg'"), std::string::npos) << why;
  EXPECT_TRUE(match_at(*b.g, op("Neg", {any().dtype(DType::kInt64)}), neg));

  Pat last_axis = op("Softmax", {any()})
                      .where_node([](const Node& n) { return n.attr_int("axis", -1) == -1; },
                                  "softmax over the last axis");
  EXPECT_FALSE(match_at(*b.g, last_axis, sm, &why));
  EXPECT_NE(why.find("softmax over the last axis"), std::string::npos) << why;
  EXPECT_NE(why.find("Softmax 'sm'"), std::string::npos) << why;
  axis.i = -1;
  sm->set_attr("axis", axis);
  EXPECT_TRUE(match_at(*b.g, last_axis, sm));

  Pat input_named_x =
      op("Softmax", {any().where([](const Value& v) { return v.name() == "y"; }, "named y")});
  EXPECT_FALSE(match_at(*b.g, input_named_x, sm, &why));
  EXPECT_NE(why.find("named y"), std::string::npos) << why;
  EXPECT_NE(why.find("'sm'"), std::string::npos) << why;

  // A predicate that throws is a failed check, not an exception out of the matcher.
  Pat throws =
      op("Softmax", {any()})
          .where_node([](const Node& n) { return n.attr_float("axis", 0) > 0; }, "axis as float");
  EXPECT_FALSE(match_at(*b.g, throws, sm, &why));
  EXPECT_NE(why.find("axis as float"), std::string::npos) << why;
}

TEST(PatternConstraints, ConstrainedCopyBindsAsOriginal) {
  Builder b;
  Value* x = b.input("x", Shape::of({2, 3}));
  Value* y = b.input("y", Shape::of({2, 3}));
  Node* same = b.node("Add", "same", {x, x});
  Node* diff = b.node("Add", "diff", {x, y});
  Pat v = any();
  Pat p = op("Add", {v, v.rank(2)});
  EXPECT_TRUE(match_at(*b.g, p, same));
  EXPECT_FALSE(match_at(*b.g, p, diff));
  EXPECT_FALSE(match_at(*b.g, op("Add", {v, v.rank(3)}), same));
}

TEST(PatternMatchAt, ReasonNamesNodeAndFailedCheck) {
  Builder b;
  Value* x = b.input("x");
  Node* mul = b.node("Mul", "mul_3", {x, b.cst("c", 0.6f)});
  Node* add = b.node("Add", "add_1", {x, x});
  Pat p = any("x") * 0.5f;
  std::string why;
  EXPECT_FALSE(match_at(*b.g, p, mul, &why));
  EXPECT_NE(why.find("node 'mul_3': input 1"), std::string::npos) << why;
  EXPECT_NE(why.find("is not the constant 0.5"), std::string::npos) << why;
  EXPECT_NE(why.find("0.6"), std::string::npos) << why;
  EXPECT_FALSE(match_at(*b.g, p, add, &why));
  EXPECT_EQ(why, "node 'add_1' is Add, not Mul");
  Node* deep = b.node("Neg", "neg", {b.op("Tanh", "th", {x})});
  EXPECT_FALSE(match_at(*b.g, op("Neg", {erf(any())}), deep, &why));
  EXPECT_NE(why.find("node 'neg': input 0"), std::string::npos) << why;
  EXPECT_NE(why.find("Tanh 'th', not Erf"), std::string::npos) << why;
  auto ok = match_at(*b.g, op("Neg", {tanh(any())}), deep, &why);
  EXPECT_TRUE(ok);
  EXPECT_EQ(why, "");
}

TEST(PatternExactInputs, ExtraInputsOnlyWhenAllowed) {
  Builder b;
  Value* x = b.input("x");
  Node* clip = b.node("Clip", "clip", {x, b.cst("lo", 0.0f), b.cst("hi", 6.0f)});
  std::string why;
  EXPECT_FALSE(match_at(*b.g, op("Clip", {any()}), clip, &why));
  EXPECT_NE(why.find("has 3 inputs"), std::string::npos) << why;
  EXPECT_TRUE(match_at(*b.g, op("Clip", {any()}, false), clip));
  EXPECT_FALSE(match_at(*b.g, op("Clip", {any(), scalar(1.0f)}, false), clip));
  EXPECT_TRUE(match_at(*b.g, op("Clip", {any(), scalar(0.0f), scalar(6.0f)}), clip));
  EXPECT_TRUE(match_at(*b.g, op_any_inputs("Clip"), clip));
  EXPECT_FALSE(match_at(*b.g, op_any_inputs("Relu"), clip));
}

TEST(PatternExactInputs, OtherDomainAndOutputIndex) {
  Builder b;
  Value* x = b.input("x");
  Value* o0 = b.g->add_value("o0");
  Value* o1 = b.g->add_value("o1");
  b.g->add_node("Split", "split", {x}, {o0, o1});
  Node* neg = b.node("Neg", "neg", {o1});
  Node* custom = b.g->add_node("Relu", "custom", {x}, {b.g->add_value("c_out")}, "com.example");
  EXPECT_TRUE(match_at(*b.g, op("Neg", {op("Split", {any()}, true, 1)}), neg));
  std::string why;
  EXPECT_FALSE(match_at(*b.g, op("Neg", {op("Split", {any()})}), neg, &why));
  EXPECT_NE(why.find("not output 0"), std::string::npos) << why;
  EXPECT_FALSE(match_at(*b.g, relu(any()), custom, &why));
  EXPECT_NE(why.find("com.example"), std::string::npos) << why;
}

TEST(PatternMatch, LookupsByPatAndName) {
  Builder b;
  Value* x = b.input("x");
  Value* w = b.cst("w", Tensor(DType::kFloat32, {3, 3}));
  Node* mm = b.node("MatMul", "mm", {x, w});
  Node* add = b.node("Add", "add", {mm->output(0), b.cst("bias", Tensor(DType::kFloat32, {3}))});
  Pat pmm = op("MatMul", {any("x"), constant("w")}).named("mm");
  Pat p = op("Add", {pmm, constant("bias")});
  auto m = match_at(*b.g, p, add);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->node(pmm), mm);
  EXPECT_EQ(m->node("mm"), mm);
  EXPECT_EQ(m->value("mm"), mm->output(0));
  EXPECT_EQ(m->value("w"), w);
  EXPECT_EQ(m->node("w"), nullptr);  // not an op pattern
  EXPECT_EQ(m->node(p), add);
  EXPECT_EQ(m->value("nothing"), nullptr);
  EXPECT_EQ(m->node_names(), (std::vector<std::string>{"mm", "add"}));
}

TEST(PatternFindAll, TwoOccurrencesInReverseOrder) {
  Builder b;
  Value* x = b.input("x");
  Value* r1 = b.op("Relu", "relu_1", {b.op("Add", "add_1", {x, b.cst("one", 1.0f)})});
  Value* r2 = b.op("Relu", "relu_2", {b.op("Add", "add_2", {b.cst("one_b", 1.0f), r1})});
  b.g->add_output(r2);
  Pat p = relu(any("x") + 1.0f);
  std::vector<Match> all = find_all(*b.g, p);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].root()->name(), "relu_2");
  EXPECT_EQ(all[1].root()->name(), "relu_1");
  EXPECT_EQ(all[0].value("x"), r1);
  EXPECT_EQ(all[1].value("x"), x);
  EXPECT_EQ(all[1].node_names(), (std::vector<std::string>{"add_1", "relu_1"}));
  EXPECT_TRUE(find_all(*b.g, sigmoid(any())).empty());
}

TEST(PatternBuild, EmptyPatternsAreRejected) {
  EXPECT_THROW(op("Add", {Pat(), any()}), Error);
  EXPECT_THROW(any_of({}), Error);
  EXPECT_THROW(Pat().rank(2), Error);
}

}  // namespace pattern_test
}  // namespace nnfuse::pattern

namespace nnfuse::pattern {
namespace pattern_test {

TEST(PatternDomain, OpInMatchesOnlyItsDomain) {
  Builder b;
  Value* x = b.input("x");
  Value* w = b.cst("w", 1.0f);
  Value* y = b.g->add_value("y", DType::kFloat32);
  Node* fused = b.g->add_node("FusedConv", "fc", {x, w}, {y}, "ai.nnfuse");
  Node* relu_node = b.node("Relu", "relu", {y});
  std::string why;
  EXPECT_TRUE(match_at(*b.g, op_in("ai.nnfuse", "FusedConv", {any(), any()}), fused, &why)) << why;
  // A FusedConv pattern does not match a Relu, and its reason names both.
  EXPECT_FALSE(match_at(*b.g, op_in("ai.nnfuse", "FusedConv", {any(), any()}), relu_node, &why));
  EXPECT_NE(why.find("not FusedConv"), std::string::npos) << why;
  // An op in a domain it does not belong to could never match: such a pattern is refused when
  // it is made, naming the op and the domain.
  try {
    op("FusedConv", {any(), any()});
    ADD_FAILURE() << "a pattern of FusedConv in the default domain was made";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("FusedConv of domain ''"), std::string::npos) << e.what();
  }
  EXPECT_THROW(op_in("ai.nnfuse", "Relu", {any()}), Error);
  // op_in with the default domain is op().
  EXPECT_TRUE(match_at(*b.g, op_in("", "Relu", {any()}), relu_node, &why)) << why;
  EXPECT_TRUE(
      match_at(*b.g, relu(op_in("ai.nnfuse", "FusedConv", {any(), any()})), relu_node, &why))
      << why;
}

TEST(PatternTree, RepeatedLeavesBindOnTheirOwn) {
  // ((Gather(t0, i0) + Gather(t1, i1)) + c) + Gather(t2, i2): every leaf a Gather or a constant.
  Builder b;
  Value* ids = b.input("ids", Shape::of({4}), DType::kInt64);
  std::vector<Value*> g;
  for (int i = 0; i < 3; ++i) {
    const std::string k = std::to_string(i);
    Tensor t(DType::kFloat32, {5, 2});
    g.push_back(
        b.op("Gather", std::string("g").append(k), {b.cst(std::string("t").append(k), t), ids}));
  }
  Value* s = b.op("Add", "a0", {g[0], g[1]});
  s = b.op("Add", "a1", {s, b.cst("c", 1.0f)});
  s = b.op("Add", "a2", {s, g[2]});
  Pat leaf =
      any_of({op("Gather", {constant("table"), any("ids")}).named("gather"), constant("addend")});
  Pat sum = tree("sum", "Add", leaf);
  auto m = match_at(*b.g, sum, b.find("a2"));
  ASSERT_TRUE(m);
  const std::vector<Match>& leaves = m->repeats("sum");
  ASSERT_EQ(leaves.size(), 4u);
  EXPECT_EQ(leaves[0].node("gather")->name(), "g0");
  EXPECT_EQ(leaves[1].node("gather")->name(), "g1");
  EXPECT_EQ(leaves[2].value("addend")->name(), "c");
  EXPECT_EQ(leaves[2].node("gather"), nullptr);
  EXPECT_EQ(leaves[3].node("gather")->name(), "g2");
  EXPECT_EQ(m->nodes().size(), 6u);  // three Adds, three Gathers
  // A leaf that is neither: no match, and the reason names it.
  Value* x = b.input("x", Shape::of({4, 2}));
  b.op("Add", "a3", {s, x});
  std::string why;
  EXPECT_FALSE(match_at(*b.g, sum, b.find("a3"), &why));
  EXPECT_NE(why.find("'x'"), std::string::npos) << why;
}

TEST(PatternNative, CodeMatchesAndHandsBackData) {
  Builder b;
  Value* x = b.input("x");
  Value* r = b.op("Relu", "r", {x});
  Value* y = b.op("Neg", "n", {r});
  Pat relu_in = native("relu", [](Value* v, NativeResult& out) -> std::string {
    Node* p = v->producer();
    if (!p || p->op_type() != "Relu") return "not a Relu";
    out.nodes.push_back(p);
    out.data = p->input(0);
    return "";
  });
  Pat neg = op("Neg", {relu_in});
  auto m = match_at(*b.g, neg, y->producer());
  ASSERT_TRUE(m);
  ASSERT_NE(m->native("relu"), nullptr);
  EXPECT_EQ(std::any_cast<Value*>(m->native("relu")->data), x);
  EXPECT_EQ(m->nodes().size(), 2u);
  std::string why;
  EXPECT_FALSE(match_at(*b.g, neg, r->producer(), &why));
  Value* z = b.op("Neg", "n2", {x});
  EXPECT_FALSE(match_at(*b.g, neg, z->producer(), &why));
  EXPECT_NE(why.find("not a Relu"), std::string::npos) << why;
}

TEST(PatternThrough, ReshapeToAConstantShapePasses) {
  Builder b;
  Value* x = b.input("x");
  Value* e = b.op("Exp", "e", {x});
  Value* r = b.op("Reshape", "r", {e, b.cst("shape", shape_tensor({3, 2}))});
  Value* t = b.op("Transpose", "t", {r});
  Pat p = through(op("Exp", {any("x")}).named("exp"), {"Reshape", "Transpose"});
  auto m = match_at(*b.g, p, t->producer());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->nodes().size(), 3u);
  // A Reshape to a computed shape is not a pass-through.
  Value* s = b.op("Shape", "s", {x});
  Value* r2 = b.op("Reshape", "r2", {e, s});
  EXPECT_FALSE(match_at(*b.g, p, r2->producer()));
}

TEST(PatternOptional, OmittedOrMissingInputsBindNothing) {
  Builder b;
  Value* x = b.input("x");
  Value* g = b.cst("g", 1.0f);
  Value* with = b.op("LayerNormalization", "with", {x, g, b.cst("beta", 0.0f)});
  Value* without = b.op("LayerNormalization", "without", {x, g});
  Node* omitted = b.node("LayerNormalization", "omitted", {x, g, nullptr});
  Pat ln = op("LayerNormalization", {any("x"), constant("gamma"), optional(constant("beta"))});
  auto m = match_at(*b.g, ln, with->producer());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->value("beta")->name(), "beta");
  for (Node* n : {without->producer(), omitted}) {
    m = match_at(*b.g, ln, n);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->value("beta"), nullptr);
    EXPECT_EQ(m->value("gamma"), g);
  }
  // Present but not matching the optional pattern: no match.
  Value* y = b.op("LayerNormalization", "computed", {x, g, b.op("Exp", "e", {x})});
  EXPECT_FALSE(match_at(*b.g, ln, y->producer()));
  // A required input is still required.
  Value* z = b.op("LayerNormalization", "short", {x});
  EXPECT_FALSE(match_at(*b.g, ln, z->producer()));
}

}  // namespace pattern_test
}  // namespace nnfuse::pattern
