#include "pattern/rewriter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/error.h"
#include "testing/graph_builder.h"

namespace nnfuse::pattern {
namespace rewriter_test {

constexpr float kSqrt2 = 1.41421356f;

using Builder = testing::GraphBuilder;

// x -> Relu 'relu' -> a -> Neg 'neg' -> b, plus whatever a test adds.
struct Chain {
  Builder b;
  Value *x, *a, *out;
  Node *relu, *neg;
  Chain() {
    x = b.input("x");
    relu = b.node("Relu", "relu", {x});
    a = relu->output(0);
    neg = b.node("Neg", "neg", {a});
    out = neg->output(0);
    b.g->add_output(out);
  }
};

TEST(RewriterCheck, AcceptsSelfContainedSet) {
  Chain c;
  EXPECT_EQ(check_replaceable(*c.b.g, {c.relu, c.neg}, {c.out}), "");
}

TEST(RewriterCheck, RejectsEscapingIntermediate) {
  Chain c;
  c.b.node("Sigmoid", "other", {c.a});
  std::string why = check_replaceable(*c.b.g, {c.relu, c.neg}, {c.out});
  EXPECT_NE(why.find("intermediate 'relu_out' is also used by Sigmoid 'other'"), std::string::npos)
      << why;
}

TEST(RewriterCheck, RejectsGraphOutputIntermediate) {
  Chain c;
  c.b.g->add_output(c.a);
  std::string why = check_replaceable(*c.b.g, {c.relu, c.neg}, {c.out});
  EXPECT_NE(why.find("'relu_out'"), std::string::npos) << why;
  EXPECT_NE(why.find("graph output"), std::string::npos) << why;
  // Listing it as an output of the fused node makes it fine.
  EXPECT_EQ(check_replaceable(*c.b.g, {c.relu, c.neg}, {c.a, c.out}), "");
}

TEST(RewriterCheck, RejectsCycle) {
  // relu -> a -> outside 'mid' -> m; add(a, m) in the set with relu: fusing {relu, add}
  // would make the fused node both feed and consume 'mid'.
  Builder b;
  Value* x = b.input("x");
  Node* relu = b.node("Relu", "relu", {x});
  Node* mid = b.node("Neg", "mid", {relu->output(0)});
  Node* add = b.node("Add", "add", {relu->output(0), mid->output(0)});
  b.g->add_output(add->output(0));
  std::string why = check_replaceable(*b.g, {relu, add}, {relu->output(0), add->output(0)});
  EXPECT_NE(why.find("cycle"), std::string::npos) << why;
  EXPECT_NE(why.find("Neg 'mid'"), std::string::npos) << why;
  EXPECT_NE(why.find("Add 'add'"), std::string::npos) << why;
  // Without the outside node on the path, the same pair is fine.
  Builder b2;
  Value* x2 = b2.input("x");
  Node* r2 = b2.node("Relu", "relu", {x2});
  Node* a2 = b2.node("Add", "add", {r2->output(0), x2});
  EXPECT_EQ(check_replaceable(*b2.g, {r2, a2}, {a2->output(0)}), "");
}

TEST(RewriterCheck, RejectsOutputsNotProducedBySet) {
  Chain c;
  std::string why = check_replaceable(*c.b.g, {c.neg}, {c.a});
  EXPECT_NE(why.find("'relu_out' is not produced"), std::string::npos) << why;
  EXPECT_NE(check_replaceable(*c.b.g, {}, {}), "");
}

// y = (x * 0.5) * (erf(x / sqrt2) + 1), consumed by a Neg so the fused node has a user.
struct Gelu {
  Builder b;
  Value* x;
  Value* y;
  Gelu() {
    x = b.input("x");
    Value* d = b.op("Div", "div", {x, b.cst("sqrt2", kSqrt2)});
    Value* e = b.op("Erf", "erf", {d});
    Value* a = b.op("Add", "add", {e, b.cst("one", 1.0f)});
    Value* h = b.op("Mul", "mul_1", {x, b.cst("half", 0.5f)});
    y = b.op("Mul", "mul_2", {h, a});
    b.g->add_output(b.op("Neg", "neg", {y}));
  }
};

TEST(RewriterReplace, GeluBecomesOneNodeWithProvenance) {
  Gelu gg;
  Pat x = any("x");
  Pat p = x * 0.5f * (erf(x / kSqrt2) + 1.0f);
  std::vector<Match> all = find_all(*gg.b.g, p);
  ASSERT_EQ(all.size(), 1u);
  const Match& m = all[0];
  ASSERT_EQ(check_replaceable(*gg.b.g, m.nodes(), {gg.y}), "");
  Attribute approx;
  approx.kind = Attribute::Kind::kString;
  approx.s = "none";
  Node* fused = replace_with(*gg.b.g, m.nodes(), "Gelu", "ai.nnfuse", {m[x]}, {gg.y},
                             {{"approximate", approx}}, "GeluFusion");
  EXPECT_NO_THROW(verify_graph(*gg.b.g));
  EXPECT_EQ(gg.b.g->num_nodes(), 2u);
  EXPECT_EQ(fused->name(), "mul_2");
  EXPECT_EQ(fused->op_type(), "Gelu");
  EXPECT_EQ(fused->domain(), "ai.nnfuse");
  EXPECT_EQ(fused->attr_string("approximate", ""), "none");
  EXPECT_EQ(fused->fused_by(), "GeluFusion");
  EXPECT_EQ(fused->fused_from(), (std::vector<std::string>{"div", "erf", "add", "mul_1", "mul_2"}));
  EXPECT_EQ(fused->input(0), gg.x);
  EXPECT_EQ(gg.y->producer(), fused);
  EXPECT_EQ(gg.b.g->nodes()[0], fused);
  EXPECT_EQ(gg.b.g->nodes()[1]->name(), "neg");
  for (const char* gone : {"div", "erf", "add", "mul_1"}) EXPECT_EQ(gg.b.find(gone), nullptr);
  // Dead intermediates and the constants only they read are gone.
  for (const char* gone : {"div_out", "erf_out", "add_out", "mul_1_out", "sqrt2", "one", "half"}) {
    EXPECT_EQ(gg.b.g->find_value(gone), nullptr) << gone;
  }
  EXPECT_EQ(gg.x->uses().size(), 1u);
}

TEST(RewriterReplace, RefusesUnsafeSetAndLeavesGraphAlone) {
  Chain c;
  c.b.node("Sigmoid", "other", {c.a});
  try {
    replace_with(*c.b.g, {c.relu, c.neg}, "Fused", "ai.nnfuse", {c.x}, {c.out}, {}, "P");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(e.what()).find("Sigmoid 'other'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.b.g->num_nodes(), 3u);
  EXPECT_NO_THROW(verify_graph(*c.b.g));
  // An input produced inside the set is refused too.
  Chain d;
  EXPECT_THROW(replace_with(*d.b.g, {d.relu, d.neg}, "F", "ai.nnfuse", {d.a}, {d.out}, {}, "P"),
               Error);
}

TEST(RewriterReplace, ReordersConsumersAndRemovesDeadConstantNodes) {
  // The fused node is appended; consumers that came before it in the list must follow it.
  Builder b;
  Value* x = b.input("x");
  Node* cn = b.node("Constant", "cn", {});
  Attribute f;
  f.kind = Attribute::Kind::kFloat;
  f.f = 2.0f;
  cn->set_attr("value_float", f);
  Node* mul = b.node("Mul", "mul", {x, cn->output(0)});
  Node* relu = b.node("Relu", "relu", {mul->output(0)});
  Node* tail = b.node("Neg", "tail", {relu->output(0)});
  b.g->add_output(tail->output(0));
  Pat p = pattern::relu(any("x") * 2.0f);
  auto m = match_at(*b.g, p, relu);
  ASSERT_TRUE(m);
  Node* fused = replace_with(*b.g, m->nodes(), "MulRelu", "ai.nnfuse", {m->value("x")},
                             {relu->output(0)}, {}, "MulReluFusion");
  EXPECT_NO_THROW(verify_graph(*b.g));
  ASSERT_EQ(b.g->num_nodes(), 2u);  // the Constant node went with its last consumer
  EXPECT_EQ(b.g->nodes()[0], fused);
  EXPECT_EQ(b.g->nodes()[1], tail);
  EXPECT_EQ(fused->name(), "relu");
  EXPECT_EQ(fused->fused_from(), (std::vector<std::string>{"mul", "relu"}));
}

TEST(RewriterReplace, KeepsSharedConstantNodes) {
  Builder b;
  Value* x = b.input("x");
  Node* cn = b.node("Constant", "cn", {});
  Attribute f;
  f.kind = Attribute::Kind::kFloat;
  f.f = 2.0f;
  cn->set_attr("value_float", f);
  Node* mul = b.node("Mul", "mul", {x, cn->output(0)});
  Node* relu = b.node("Relu", "relu", {mul->output(0)});
  Node* other = b.node("Add", "other", {relu->output(0), cn->output(0)});
  b.g->add_output(other->output(0));
  replace_with(*b.g, {mul, relu}, "MulRelu", "ai.nnfuse", {x}, {relu->output(0)}, {}, "P");
  EXPECT_NO_THROW(verify_graph(*b.g));
  EXPECT_EQ(b.g->num_nodes(), 3u);
  EXPECT_NE(b.find("cn"), nullptr);
}

TEST(RewriterReplace, ProvenanceLooksThroughEarlierFusionsAndNamesStayUnique) {
  Builder b;
  Value* x = b.input("x");
  Node* n1 = b.g->add_node("Relu", "", {x}, {b.g->add_value("r_out")});
  Node* n2 = b.node("Neg", "neg", {n1->output(0)});
  b.node("Sigmoid", "Fused", {x});  // takes the name the unnamed set would fall back to
  b.g->add_output(n2->output(0));
  Node* first = replace_with(*b.g, {n1}, "Fused", "ai.nnfuse", {x}, {n1->output(0)}, {}, "P1");
  EXPECT_EQ(first->name(), "Fused_1");
  EXPECT_EQ(first->fused_from(), (std::vector<std::string>{""}));
  first->set_provenance({"orig_a", "orig_b"}, "P1");
  Node* second =
      replace_with(*b.g, {first, n2}, "Fused2", "ai.nnfuse", {x}, {n2->output(0)}, {}, "P2");
  EXPECT_EQ(second->name(), "neg");
  EXPECT_EQ(second->fused_from(), (std::vector<std::string>{"orig_a", "orig_b", "neg"}));
  EXPECT_NO_THROW(verify_graph(*b.g));
}

TEST(RewriterAddConstant, FreshNames) {
  Builder b;
  b.cst("scale", 1.0f);
  Value* c1 = add_constant(*b.g, "scale", Tensor::scalar<float>(2.0f));
  Value* c2 = add_constant(*b.g, "scale", Tensor::scalar<float>(3.0f));
  EXPECT_NE(c1->name(), "scale");
  EXPECT_NE(c1->name(), c2->name());
  ASSERT_TRUE(c2->is_constant());
  EXPECT_FLOAT_EQ(c2->constant().data<float>()[0], 3.0f);
  EXPECT_EQ(constant_value(c1), &c1->constant());
  EXPECT_FALSE(c1->is_graph_input());
}

}  // namespace rewriter_test
}  // namespace nnfuse::pattern
