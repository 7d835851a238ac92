#include "report/html.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "report/graph_svg.h"

namespace nnfuse {
namespace html_test {

// x -> Conv -> BatchNormalization -> Relu -> y, and the same after fusion: one FusedConv.
struct Pair {
  Graph before, after;
  FusionReport report;
};

void build(Pair& p) {
  for (Graph* g : {&p.before, &p.after}) {
    g->add_input(g->add_value("x", DType::kFloat32, Shape::of({1, 3, 8, 8})));
  }
  Graph& b = p.before;
  Value* c = b.add_value("c", DType::kFloat32, Shape::of({1, 4, 8, 8}));
  Value* n = b.add_value("n", DType::kFloat32, Shape::of({1, 4, 8, 8}));
  Value* y = b.add_value("y", DType::kFloat32, Shape::of({1, 4, 8, 8}));
  b.add_node("Conv", "/block/conv", {b.find_value("x")}, {c});
  b.add_node("BatchNormalization", "/block/bn", {c}, {n});
  b.add_node("Relu", "/block/relu <&>", {n}, {y});
  b.add_output(y);
  Graph& a = p.after;
  Value* ya = a.add_value("y", DType::kFloat32, Shape::of({1, 4, 8, 8}));
  Node* f = a.add_node("FusedConv", "/block/relu <&>", {a.find_value("x")}, {ya}, kFusedDomain);
  f->set_provenance({"/block/conv", "/block/bn", "/block/relu <&>"}, "ConvBatchnormFusionPass");
  a.add_output(ya);
  FusionBenefit fb;
  fb.node = "/block/relu <&>";
  fb.pass = "ConvBatchnormFusionPass";
  fb.fused_from = f->fused_from();
  fb.kernels_saved = 2;
  fb.bytes_saved = 4096;
  fb.flops = 10000;
  fb.bytes_before = 8192;
  fb.bytes_after = 4096;
  fb.seconds_before = 3e-6;
  fb.seconds_after = 1e-6;
  fb.measured_ms_before = 0.004;
  fb.measured_ms_after = 0.002;
  fb.max_rel_error = 2e-7;
  p.report.fused.push_back(fb);
  p.report.record("ConvAddFusionPass").rejected.push_back({{"/block/relu <&>"}, "no Add <here>"});
  p.report.warnings.push_back({"precision", "/block/relu <&>", "departs by 1"});
  p.report.before = {3, 10000, 8192 * 2, 9e-6};
  p.report.after = {1, 10000, 4096, 1e-6};
  p.report.peak_gflops = 100;
  p.report.machine_source = "defaults";
}

TEST(ReportHtml, HasEverySectionBothGraphsAndEscapesNames) {
  Pair p;
  build(p);
  ReportPage page;
  page.model = "m<1>.onnx";
  page.before = &p.before;
  page.after = &p.after;
  page.report = &p.report;
  page.reference_kernels = {"Einsum 'e' float32[2] -> float32?"};
  page.kernel_times = {{"/block/relu <&>", "FusedConv", "onednn.conv", 0.25, false}};
  page.measured_runs = 5;
  std::vector<std::string> problems;
  const std::string html = render_report_html(page, &problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  for (const char* id : {"id=\"summary-table\"", "id=\"graph-before\"", "id=\"graph-after\"",
                         "id=\"fused-nodes\"", "id=\"declined\"", "id=\"reference-kernels\"",
                         "id=\"kernel-times\"", "id=\"warnings\"", "class=\"bar\""}) {
    EXPECT_NE(html.find(id), std::string::npos) << id;
  }
  // Two pictures, drawn by Graphviz.
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  EXPECT_EQ(svgs, 2u);
  EXPECT_EQ(html.find("m<1>"), std::string::npos);
  EXPECT_NE(html.find("m&lt;1&gt;.onnx"), std::string::npos);
  EXPECT_NE(html.find("no Add &lt;here&gt;"), std::string::npos);
  EXPECT_NE(html.find("3.00x"), std::string::npos);  // the estimate
  EXPECT_NE(html.find("2.00x"), std::string::npos);  // the measurement
  // Nothing is fetched: no script, no external reference.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org"));
}

TEST(ReportHtml, BeforeFusionTheOriginalNodesAreGroupedByTheirRule) {
  Pair p;
  build(p);
  const FusionGroups groups = fusion_groups(p.after);
  EXPECT_EQ(groups.group_of.at("/block/bn"), "/block/relu <&>");
  EXPECT_EQ(groups.rule_of.at("/block/relu <&>"), "ConvBatchnormFusionPass");
  const auto colors = rule_colors({"ConvBatchnormFusionPass"});
  const GraphPicture pic = graph_dot(p.before, colors, &groups);
  EXPECT_TRUE(pic.blocks.empty());
  EXPECT_NE(pic.overview.find("subgraph cluster_0"), std::string::npos);
  EXPECT_NE(pic.overview.find(colors.at("ConvBatchnormFusionPass")), std::string::npos);
}

TEST(ReportHtml, LargeGraphsAreCollapsedByBlock) {
  Graph g;
  Value* v = g.add_value("x", DType::kFloat32, Shape::of({4}));
  g.add_input(v);
  for (int layer = 0; layer < 6; ++layer) {
    for (int i = 0; i < 50; ++i) {
      const std::string l = std::to_string(layer), k = std::to_string(i);
      Value* o = g.add_value(std::string("v").append(l).append("_").append(k), DType::kFloat32,
                             Shape::of({4}));
      g.add_node("Relu", std::string("/enc/layer.").append(l).append("/op").append(k), {v}, {o});
      v = o;
    }
  }
  g.add_output(v);
  const GraphPicture pic = graph_dot(g, {});
  EXPECT_EQ(pic.nodes, 300u);
  ASSERT_EQ(pic.blocks.size(), 6u);
  EXPECT_EQ(pic.blocks[0].first, "/enc/layer.0");
  EXPECT_NE(pic.overview.find("50 nodes"), std::string::npos);
  EXPECT_NE(pic.overview.find("b0 -> b1"), std::string::npos);
}

TEST(ReportHtml, WithoutGraphvizThePictureSaysWhy) {
  const char* path = getenv("PATH");
  const std::string saved = path ? path : "";
  setenv("PATH", "/nonexistent", 1);
  std::string error;
  const std::string svg = dot_to_svg("digraph { a -> b }", &error);
  setenv("PATH", saved.c_str(), 1);
  EXPECT_TRUE(svg.empty());
  EXPECT_NE(error.find("graphviz"), std::string::npos) << error;
}

}  // namespace html_test
}  // namespace nnfuse
