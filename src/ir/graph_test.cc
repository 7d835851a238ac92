#include "ir/graph.h"

#include <gtest/gtest.h>

namespace nnfuse {
namespace graph_test {

// x -> Relu -> y -> Neg -> z
struct Chain {
  Graph g;
  Value *x, *y, *z;
  Node *relu, *neg;
  Chain() {
    x = g.add_value("x", DType::kFloat32, Shape::of({2}));
    g.add_input(x);
    y = g.add_value("y", DType::kFloat32);
    z = g.add_value("z", DType::kFloat32);
    relu = g.add_node("Relu", "relu", {x}, {y});
    neg = g.add_node("Neg", "neg", {y}, {z});
    g.add_output(z);
  }
};

TEST(Graph, UseListsFollowEdges) {
  Chain c;
  ASSERT_EQ(c.y->uses().size(), 1u);
  EXPECT_EQ(c.y->uses()[0].node, c.neg);
  EXPECT_EQ(c.y->producer(), c.relu);
  EXPECT_NO_THROW(verify_graph(c.g));
}

TEST(Graph, SetInputMaintainsUses) {
  Chain c;
  c.neg->set_input(0, c.x);
  EXPECT_TRUE(c.y->uses().empty());
  EXPECT_EQ(c.x->uses().size(), 2u);
  verify_graph(c.g);
}

TEST(Graph, TopologicalSortReordersAndDetectsCycles) {
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32);
  g.add_input(x);
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  g.add_node("Neg", "second", {a}, {b});
  g.add_node("Relu", "first", {x}, {a});
  g.add_output(b);
  EXPECT_THROW(verify_graph(g), Error);
  g.topological_sort();
  EXPECT_EQ(g.nodes()[0]->name(), "first");
  verify_graph(g);

  Graph cyc;
  Value* p = cyc.add_value("p");
  Value* q = cyc.add_value("q");
  cyc.add_node("Neg", "n1", {p}, {q});
  cyc.add_node("Neg", "n2", {q}, {p});
  EXPECT_THROW(cyc.topological_sort(), Error);
}

TEST(Graph, RemoveNodeAndReplaceUses) {
  Chain c;
  c.g.replace_all_uses(c.y, c.x);
  c.g.remove_node(c.relu);
  c.g.remove_dead_values();
  EXPECT_EQ(c.g.num_nodes(), 1u);
  EXPECT_EQ(c.g.find_value("y"), nullptr);
  verify_graph(c.g);
}

TEST(Graph, DuplicateNamesAndProducersAreErrors) {
  Chain c;
  EXPECT_THROW(c.g.add_value("x"), Error);
  EXPECT_THROW(c.g.add_node("Relu", "again", {c.x}, {c.y}), Error);
}

TEST(Graph, TextDumpShowsNodesAndProvenance) {
  Chain c;
  c.neg->set_provenance({"relu", "neg"}, "TestPass");
  std::string t = graph_to_text(c.g);
  EXPECT_NE(t.find("%z : float32? = Neg(%y)"), std::string::npos) << t;
  EXPECT_NE(t.find("fused by TestPass from relu neg"), std::string::npos) << t;
  EXPECT_NE(t.find("input  %x : float32[2]"), std::string::npos) << t;
}

TEST(Graph, AttributeKindMismatchIsAnError) {
  Chain c;
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = 1.5f;
  c.relu->set_attr("alpha", a);
  EXPECT_FLOAT_EQ(c.relu->attr_float("alpha", 0), 1.5f);
  EXPECT_EQ(c.relu->attr_int("missing", 3), 3);
  EXPECT_THROW(c.relu->attr_int("alpha", 0), Error);
}

}  // namespace graph_test
}  // namespace nnfuse

namespace nnfuse {
namespace graph_test {

TEST(Graph, ReplaceNodeTakesTheOldPlaceAndKeepsTheOrder) {
  // x -> a -> b -> c -> y; b replaced in place: no sort needed, positions keep their order.
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32, Shape::of({2}));
  g.add_input(x);
  Value* va = g.add_value("va");
  Value* vb = g.add_value("vb");
  Value* y = g.add_value("y");
  Node* a = g.add_node("Relu", "a", {x}, {va});
  Node* b = g.add_node("Neg", "b", {va}, {vb});
  Node* c = g.add_node("Abs", "c", {vb}, {y});
  g.add_output(y);
  const size_t pos = b->position();
  Node* nb = g.replace_node(b, "Sigmoid", "b2", {va}, {vb});
  EXPECT_TRUE(g.is_sorted());
  EXPECT_EQ(nb->position(), pos);
  EXPECT_LT(a->position(), nb->position());
  EXPECT_LT(nb->position(), c->position());
  EXPECT_EQ(g.num_nodes(), 3u);
  EXPECT_EQ(g.nodes()[1], nb);
  EXPECT_TRUE(g.contains(nb));
  verify_graph(g);
}

TEST(Graph, EdgesFromLaterNodesClearTheSortedFlag) {
  Chain c;
  EXPECT_TRUE(c.g.is_sorted());
  // relu reads neg's output: the order no longer follows the edges.
  Value* w = c.g.add_value("w", DType::kFloat32);
  Node* late = c.g.add_node("Abs", "late", {c.z}, {w});
  EXPECT_TRUE(c.g.is_sorted());  // appended after its producer
  c.relu->set_input(0, w);
  EXPECT_FALSE(c.g.is_sorted());
  (void)late;
  EXPECT_THROW(c.g.ensure_sorted(), Error);  // it is a cycle now
}

TEST(Graph, AddingAProducerForReadValuesClearsTheSortedFlag) {
  Graph g;
  Value* x = g.add_value("x", DType::kFloat32);
  g.add_input(x);
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  g.add_node("Neg", "second", {a}, {b});
  EXPECT_TRUE(g.is_sorted());
  g.add_node("Relu", "first", {x}, {a});
  EXPECT_FALSE(g.is_sorted());
  g.add_output(b);
  g.ensure_sorted();
  EXPECT_TRUE(g.is_sorted());
  EXPECT_EQ(g.nodes()[0]->name(), "first");
  verify_graph(g);
}

TEST(Graph, RemovedNodesLeaveNoTraceAndNamesAreReusable) {
  Chain c;
  EXPECT_EQ(c.g.unique_node_name("relu"), "relu_1");
  EXPECT_EQ(c.g.unique_node_name("fresh"), "fresh");
  const size_t mark = c.g.added_mark();
  c.neg->set_input(0, c.x);
  c.g.remove_node(c.relu);
  EXPECT_FALSE(c.g.contains(c.relu));
  EXPECT_EQ(c.g.num_nodes(), 1u);
  EXPECT_EQ(c.g.unique_node_name("relu"), "relu");
  EXPECT_TRUE(c.g.added_since(mark).empty());
  Value* w = c.g.add_value("w", DType::kFloat32);
  Node* added = c.g.add_node("Abs", "abs", {c.z}, {w});
  ASSERT_EQ(c.g.added_since(mark).size(), 1u);
  EXPECT_EQ(c.g.added_since(mark)[0], added);
  c.g.remove_if_dead(c.y);  // no producer, no uses now
  EXPECT_EQ(c.g.find_value("y"), nullptr);
  c.g.remove_if_dead(c.x);  // a graph input stays
  EXPECT_EQ(c.g.find_value("x"), c.x);
  c.g.remove_dead_values();
  EXPECT_EQ(c.g.values().size(), 3u);  // x, z, w
  verify_graph(c.g);
}

}  // namespace graph_test
}  // namespace nnfuse
