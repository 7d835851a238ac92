// EmbedLayerNormFusionPass: word + position + token-type lookups, their Adds and the LayerNorm
// become one EmbedLayerNorm node (positive cases over tree shapes, id types, both LayerNorm
// domains), each guard rejects with its reason, and fused == unfused numerically.
#include <gtest/gtest.h>

#include "passes/fusions/fusion_test_util.h"

namespace nnfuse {
namespace embed_layer_norm_test {

using namespace fusion_test;

constexpr int64_t kB = 2, kS = 5, kE = 16, kVocab = 30;

Tensor ids_tensor(const Dims& shape, uint32_t seed, int64_t hi, DType t = DType::kInt64) {
  Tensor r(t, shape);
  uint32_t s = seed * 2654435761u + 99u;
  for (int64_t i = 0; i < r.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    const int64_t v = static_cast<int64_t>((s >> 8) % static_cast<uint32_t>(hi));
    if (t == DType::kInt64) {
      r.data<int64_t>()[i] = v;
    } else {
      r.data<int32_t>()[i] = static_cast<int32_t>(v);
    }
  }
  return r;
}

struct Opts {
  bool swap_tree = false;  // Add(word, Add(tok, pos)) instead of Add(Add(word, pos), tok)
  DType tok_ids = DType::kInt64;
  std::string ln_domain = "";  // "" (opset 17) or ai.nnfuse (the LayerNorm fusion's)
  bool beta = true;
  Dims gamma_shape = {kE};
  bool sum_escapes = false;  // the sum before the LayerNorm is also a graph output
  bool table_input = false;  // the token-type table is a graph input, not a constant
  int64_t gather_axis = 0;
  Dims tok_ids_shape = {kB, kS};
  int64_t ln_axis = -1;
  bool inner_escapes = false;  // the inner Add is also a graph output
  bool ln_mean_used = false;   // the LayerNorm's mean output is a graph output
};

Value* int_input(B& b, const std::string& name, const Dims& d, DType t) {
  Value* v = b.g->add_value(name, t, Shape::of(d));
  b.g->add_input(v);
  return v;
}

std::unique_ptr<Graph> embeddings(const Opts& o = {}) {
  B b;
  Value* ids = int_input(b, "input_ids", {kB, kS}, DType::kInt64);
  Value* types = int_input(b, "token_type_ids", o.tok_ids_shape, o.tok_ids);
  Value* word = b.n("Gather", {b.c(random_tensor({kVocab, kE}, 1)), ids}, {kB, kS, kE}, {}, "word");
  // Position rows: a Gather of constants, which constant folding turns into a constant.
  Value* pos = b.n("Gather",
                   {b.c(random_tensor({kS, kE}, 2)),
                    b.c(Tensor::from_vector<int64_t>({1, kS}, {0, 1, 2, 3, 4}))},
                   {1, kS, kE}, {}, "pos");
  Value* tok_table = o.table_input ? b.in("tok_table", {2, kE}) : b.c(random_tensor({2, kE}, 3));
  Dims tok_out = o.tok_ids_shape;
  tok_out.push_back(kE);
  Value* tok =
      b.n("Gather", {tok_table, types}, tok_out, {{"axis", attr_int(o.gather_axis)}}, "tok");
  Value* sum;
  Value* inner;
  if (o.swap_tree) {
    inner = b.n("Add", {tok, pos}, {kB, kS, kE}, {}, "add0");
    sum = b.n("Add", {word, inner}, {kB, kS, kE}, {}, "add1");
  } else {
    inner = b.n("Add", {word, pos}, {kB, kS, kE}, {}, "add0");
    sum = b.n("Add", {inner, tok}, {kB, kS, kE}, {}, "add1");
  }
  std::vector<Value*> ln_in = {sum, b.c(random_tensor(o.gamma_shape, 4, 0.5f, 1.5f))};
  if (o.beta) ln_in.push_back(b.c(random_tensor({kE}, 5)));
  Value* y = b.g->add_value("y", DType::kFloat32, Shape::of({kB, kS, kE}));
  std::vector<Value*> ln_out = {y};
  if (o.ln_mean_used)
    ln_out.push_back(b.g->add_value("mean", DType::kFloat32, Shape::of({kB, kS, 1})));
  Node* ln = b.g->add_node("LayerNormalization", "ln", ln_in, ln_out, o.ln_domain);
  ln->set_attr("axis", attr_int(o.ln_axis));
  ln->set_attr("epsilon", attr_float(1e-12f));
  b.out(y);
  if (o.ln_mean_used) b.out(ln_out[1]);
  if (o.sum_escapes) b.out(sum);
  if (o.inner_escapes) b.out(inner);
  if (!o.ln_domain.empty()) b.g->opsets[o.ln_domain] = 1;
  return std::move(b.g);
}

std::map<std::string, Tensor> feeds_for(const Graph& g) {
  std::map<std::string, Tensor> feeds;
  uint32_t seed = 1;
  for (const Value* v : g.runtime_inputs()) {
    const Dims d = v->shape().static_dims();
    feeds[v->name()] =
        v->dtype() == DType::kFloat32
            ? random_tensor(d, seed++)
            : ids_tensor(d, seed++, v->name() == "input_ids" ? kVocab : 2, v->dtype());
  }
  return feeds;
}

// The fused graph on the fast kernels against `plain` on the reference kernels.
void expect_same(std::unique_ptr<Graph> fused, std::unique_ptr<Graph> plain) {
  const std::map<std::string, Tensor> feeds = feeds_for(*plain);
  auto [x, y] = run_fused_and_reference(std::move(fused), std::move(plain), feeds);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(x[i].shape(), y[i].shape());
    for (int64_t j = 0; j < y[i].numel(); ++j) {
      ASSERT_NEAR(x[i].double_at(j), y[i].double_at(j), 1e-4) << "output " << i << " at " << j;
    }
  }
}

const Node* only_fused(const Graph& g) {
  for (const Node* n : g.nodes()) {
    if (n->op_type() == "EmbedLayerNorm") return n;
  }
  return nullptr;
}

TEST(EmbedLayerNormFusion, BertEmbeddingsBecomeOneNode) {
  auto f = fuse(embeddings());
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  const Node* n = f.graph->nodes()[0];
  EXPECT_EQ(n->op_type(), "EmbedLayerNorm");
  EXPECT_EQ(n->domain(), "ai.nnfuse");
  EXPECT_EQ(n->fused_by(), "EmbedLayerNormFusionPass");
  EXPECT_EQ(n->fused_from(), (std::vector<std::string>{"word", "tok", "add0", "add1", "ln"}));
  ASSERT_EQ(n->num_inputs(), 7u);
  EXPECT_TRUE(n->input(2)->is_constant());  // the folded position rows
  EXPECT_EQ(n->input(4)->name(), "input_ids");
  EXPECT_EQ(n->input(6)->name(), "token_type_ids");
  EXPECT_FLOAT_EQ(n->attr_float("epsilon", 0), 1e-12f);
  const PassRecord* r = record(f.report, "EmbedLayerNormFusionPass");
  EXPECT_EQ(r->match_times, 1);
  EXPECT_EQ(r->effect_times, 1);
  expect_same(std::move(f.graph), embeddings());
}

TEST(EmbedLayerNormFusion, VariantsFuseAndComputeTheSame) {
  std::vector<std::pair<std::string, Opts>> cases;
  Opts o;
  o.swap_tree = true;
  cases.push_back({"other tree", o});
  o = {};
  o.tok_ids = DType::kInt32;
  cases.push_back({"int32 token types", o});
  o = {};
  o.beta = false;
  cases.push_back({"no beta", o});
  o = {};
  o.gamma_shape = {1, kE};
  cases.push_back({"gamma [1, E]", o});
  o = {};
  o.ln_axis = 2;
  cases.push_back({"axis 2 of rank 3", o});
  o = {};
  o.sum_escapes = true;
  cases.push_back({"the sum has another consumer", o});
  for (const auto& [name, opts] : cases) {
    SCOPED_TRACE(name);
    auto f = fuse(embeddings(opts));
    const Node* n = only_fused(*f.graph);
    ASSERT_NE(n, nullptr) << graph_to_text(*f.graph);
    EXPECT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
    EXPECT_EQ(n->num_outputs(), opts.sum_escapes ? 2u : 1u);
    expect_same(std::move(f.graph), embeddings(opts));
  }
}

TEST(EmbedLayerNormFusion, LayerNormOfTheFusedDomainIsMatched) {
  Opts o;
  o.ln_domain = "ai.nnfuse";
  auto f = fuse(embeddings(o));
  ASSERT_EQ(f.graph->num_nodes(), 1u) << graph_to_text(*f.graph);
  EXPECT_EQ(f.graph->nodes()[0]->op_type(), "EmbedLayerNorm");
  expect_same(std::move(f.graph), embeddings());  // same numbers as the ONNX LayerNorm's
}

TEST(EmbedLayerNormFusion, GuardsRejectWithReasons) {
  struct Case {
    std::string name;
    Opts opts;
    std::string reason;
  };
  std::vector<Case> cases;
  Opts o;
  o.table_input = true;
  cases.push_back({"table is an input", o, "not a constant"});
  o = {};
  o.gather_axis = 1;
  cases.push_back({"gather along axis 1", o, "axis 1"});
  o = {};
  o.tok_ids_shape = {1, kS};
  cases.push_back({"ids of another shape", o, "differ in shape"});
  o = {};
  o.ln_axis = 1;
  cases.push_back({"LayerNorm over two axes", o, "not over the last axis only"});
  o = {};
  o.inner_escapes = true;
  cases.push_back({"inner Add escapes", o, "add0_out"});
  o = {};
  o.ln_mean_used = true;
  cases.push_back({"LayerNorm mean is used", o, "mean"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto f = fuse(embeddings(c.opts));
    EXPECT_EQ(only_fused(*f.graph), nullptr) << graph_to_text(*f.graph);
    const PassRecord* r = record(f.report, "EmbedLayerNormFusionPass");
    ASSERT_EQ(r->rejected.size(), 1u);
    EXPECT_EQ(r->match_times, 1);
    EXPECT_NE(r->rejected[0].reason.find(c.reason), std::string::npos) << r->rejected[0].reason;
  }
}

TEST(EmbedLayerNormFusion, ResidualLayerNormIsNotAMatch) {
  B b;
  Value* x = b.in("x", {2, 4});
  Value* r = b.in("r", {2, 4});
  Value* s = b.n("Add", {x, r}, {2, 4});
  b.out(
      b.n("LayerNormalization", {s, b.c(random_tensor({4}, 1))}, {2, 4}, {{"axis", attr_int(-1)}}));
  auto f = fuse(std::move(b.g));
  EXPECT_EQ(count_op(*f.graph, "EmbedLayerNorm"), 0u) << graph_to_text(*f.graph);
  EXPECT_EQ(record(f.report, "EmbedLayerNormFusionPass")->match_times, 0);
}

TEST(EmbedLayerNormFusion, OutOfRangeIdIsAnErrorNamingTheNode) {
  auto f = fuse(embeddings());
  std::map<std::string, Tensor> feeds = feeds_for(*f.graph);
  feeds["input_ids"].data<int64_t>()[3] = kVocab;
  PlanSession s(std::move(f.graph));
  try {
    s.run(feeds);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("EmbedLayerNorm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

}  // namespace embed_layer_norm_test
}  // namespace nnfuse
