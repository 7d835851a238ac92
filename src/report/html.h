// `nnfuse report`'s page: one self-contained HTML file (inline CSS and SVG, no script, nothing
// fetched) with the summary, the graph before and after fusion as pictures, the fused nodes
// with their benefit figures (estimated, and measured when profiled), the declined matches with
// their reasons, the warnings, the kernels left on the reference kernel, and per-kernel time
// bars.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "report/report.h"

namespace nnfuse {

struct KernelBar {
  std::string name, op, kernel;
  double ms = 0;  // per run
  bool reference = false;
};

struct ReportPage {
  std::string model;              // the model's path, the page's title
  const Graph* before = nullptr;  // as imported
  const Graph* after = nullptr;   // fused
  const FusionReport* report = nullptr;
  std::vector<std::string> reference_kernels;  // one line each
  std::vector<KernelBar> kernel_times;         // the fused model's profile (empty: not measured)
  int measured_runs = 0;
  // Against ONNX Runtime, when asked: one line from a side-by-side run (bench/compare_ort.py).
  std::string ort_line;
};

// The page. Graph pictures need Graphviz's `dot`; without it each picture's place says why,
// and *problems (when given) gets one line per picture that could not be drawn.
std::string render_report_html(const ReportPage& page,
                               std::vector<std::string>* problems = nullptr);

}  // namespace nnfuse
