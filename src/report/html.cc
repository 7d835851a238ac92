#include "report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/graph_svg.h"

namespace nnfuse {

namespace {

std::string esc(const std::string& s) {
  std::string r;
  r.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        r += "&amp;";
        break;
      case '<':
        r += "&lt;";
        break;
      case '>':
        r += "&gt;";
        break;
      case '"':
        r += "&quot;";
        break;
      default:
        r += c;
    }
  }
  return r;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fmt(u == 0 ? "%.0f " : "%.1f ", b) + units[u];
}

std::string count(double v) {
  if (v >= 1e9) return fmt("%.2f G", v / 1e9);
  if (v >= 1e6) return fmt("%.2f M", v / 1e6);
  if (v >= 1e3) return fmt("%.1f K", v / 1e3);
  return fmt("%.0f", v);
}

// The rule that made a fused node: the last of "A+B" (a node of rule A absorbed by rule B), the
// rule its graph node names and its color is keyed by.
std::string last_rule(const std::string& pass) { return pass.substr(pass.rfind('+') + 1); }

std::string pct(double share) { return fmt("%.1f%%", 100.0 * share); }

const char* kStyle = R"(
body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
.sub{color:#5b6475;margin-bottom:16px}
table{border-collapse:collapse;font-size:13px}th,td{padding:4px 8px;border-bottom:1px solid #e6e9ef;text-align:left;vertical-align:top}
th{background:#f3f5f9;position:sticky;top:0}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.name{max-width:240px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.graphs{display:flex;gap:16px;align-items:flex-start}.graph{flex:1;min-width:0;border:1px solid #dde2ea;border-radius:6px;padding:8px;overflow:auto;max-height:900px}
.graph svg{max-width:100%;height:auto}
details.block{margin:4px 0}details.block summary{cursor:pointer;font-size:13px}
.legend span{display:inline-block;margin:2px 10px 2px 0;font-size:12px}.legend i{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:4px;vertical-align:middle}
.bars{font-size:12px}.barrow{display:flex;align-items:center;margin:2px 0}.barrow .label{width:420px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.bar{height:12px;background:#4363d8;border-radius:2px;margin-right:6px}.bar.ref{background:#e6194b}
.warn{color:#a4300f}.muted{color:#7a8190}.scroll{max-height:520px;max-width:100%;overflow:auto;display:inline-block}
)";

void svg_or_reason(std::ostringstream& os, const std::string& dot, const std::string& what,
                   std::vector<std::string>* problems) {
  std::string error;
  const std::string svg = dot_to_svg(dot, &error);
  if (svg.empty()) {
    os << "<p class=\"warn\">" << esc(what) << " not drawn: " << esc(error) << "</p>";
    if (problems) problems->push_back(what + " not drawn: " + error);
  } else {
    os << svg;
  }
}

void graph_section(std::ostringstream& os, const std::string& id, const std::string& title,
                   const GraphPicture& pic, std::vector<std::string>* problems) {
  os << "<div class=\"graph\" id=\"" << id << "\"><h3>" << esc(title) << " (" << pic.nodes
     << " nodes" << (pic.blocks.empty() ? "" : ", collapsed by block: open one below") << ")</h3>";
  svg_or_reason(os, pic.overview, title, problems);
  for (const auto& [name, dot] : pic.blocks) {
    os << "<details class=\"block\"><summary>" << esc(name) << "</summary>";
    svg_or_reason(os, dot, title + ", block " + name, problems);
    os << "</details>";
  }
  os << "</div>";
}

void summary(std::ostringstream& os, const ReportPage& p) {
  const FusionReport& r = *p.report;
  auto row = [&](const std::string& k, const std::string& v) {
    os << "<tr><th>" << esc(k) << "</th><td class=\"n\">" << v << "</td></tr>";
  };
  os << "<section id=\"summary\"><h2>Summary</h2><table id=\"summary-table\">";
  row("kernels",
      std::to_string(r.before.kernels) + " &rarr; " + std::to_string(r.after.kernels) + " (" +
          pct(r.before.kernels ? 1.0 - double(r.after.kernels) / r.before.kernels : 0) + " fewer)");
  row("bytes moved per run",
      bytes(double(r.before.bytes_moved)) + " &rarr; " + bytes(double(r.after.bytes_moved)) + " (" +
          pct(r.before.bytes_moved
                  ? 1.0 - double(r.after.bytes_moved) / double(r.before.bytes_moved)
                  : 0) +
          " less)");
  row("FLOPs per run", count(double(r.before.flops)));
  if (r.after.seconds > 0) {
    row("estimated latency (roofline)", fmt("%.3f ms", r.before.seconds * 1e3) + " &rarr; " +
                                            fmt("%.3f ms", r.after.seconds * 1e3) + ", speedup " +
                                            fmt("%.2fx", r.before.seconds / r.after.seconds));
  }
  if (r.measured_ms_after > 0 && r.measured_ms_before > 0) {
    row("measured latency", fmt("%.3f ms", r.measured_ms_before) + " unfused &rarr; " +
                                fmt("%.3f ms", r.measured_ms_after) + " fused, speedup " +
                                fmt("%.2fx", r.measured_ms_before / r.measured_ms_after) + " (" +
                                std::to_string(p.measured_runs) + " runs each)");
  } else {
    row("measured latency", "<span class=\"muted\">not measured (run with --measure)</span>");
  }
  if (!p.ort_line.empty()) row("against ONNX Runtime", esc(p.ort_line));
  int matches = 0, effects = 0;
  size_t declined = 0;
  for (const PassRecord& pr : r.passes) {
    matches += pr.match_times;
    effects += pr.effect_times;
    declined += pr.rejected.size();
  }
  row("fusion rules", std::to_string(matches) + " matches, " + std::to_string(effects) +
                          " fused, " + std::to_string(declined) + " declined");
  row("warnings", std::to_string(r.warnings.size()));
  row("reference kernels", std::to_string(p.reference_kernels.size()));
  row("machine", fmt("%.0f GFLOP/s, ", r.peak_gflops) + fmt("%.1f GB/s, ", r.bandwidth_gbps) +
                     fmt("%.1f us per launch", r.launch_us) + " <span class=\"muted\">(" +
                     esc(r.machine_source) + ")</span>");
  os << "</table></section>";
}

void fused_table(std::ostringstream& os, const FusionReport& r,
                 const std::map<std::string, std::string>& colors) {
  os << "<section id=\"fused\"><h2>Fused nodes (" << r.fused.size()
     << ")</h2><div class=\"scroll\"><table "
        "id=\"fused-nodes\"><thead><tr><th>node</th><th>rule</th>"
        "<th>fused from</th><th>kernels</th><th>bytes moved</th><th>mem reduction</th>"
        "<th>FLOPs</th><th>estimated us</th><th>estimated speedup</th><th>measured us</th>"
        "<th>measured speedup</th><th>max rel. error</th></tr></thead><tbody>";
  for (const FusionBenefit& b : r.fused) {
    std::string from;
    for (size_t i = 0; i < b.fused_from.size(); ++i) from += (i ? ", " : "") + b.fused_from[i];
    const std::string first = b.fused_from.empty() ? "" : b.fused_from.front();
    const std::string key = last_rule(b.pass);
    const std::string c = colors.count(key) ? colors.at(key) : "#888888";
    os << "<tr><td class=\"name\" title=\"" << esc(b.node) << "\">" << esc(b.node)
       << "</td><td class=\"name\" title=\"" << esc(b.pass) << "\"><span style=\"color:" << c
       << "\">&#9632;</span> " << esc(b.pass) << "</td><td class=\"name\" title=\"" << esc(from)
       << "\">" << b.fused_from.size() << " nodes"
       << (first.empty() ? "" : ": " + esc(first) + (b.fused_from.size() > 1 ? ", ..." : ""))
       << "</td><td class=\"n\">" << b.kernels_saved + 1 << " &rarr; 1</td>";
    if (b.seconds_after > 0) {
      os << "<td class=\"n\">" << bytes(double(b.bytes_before)) << " &rarr; "
         << bytes(double(b.bytes_after)) << "</td><td class=\"n\">"
         << pct(b.bytes_before ? 1.0 - double(b.bytes_after) / double(b.bytes_before) : 0)
         << "</td><td class=\"n\">" << count(double(b.flops)) << "</td><td class=\"n\">"
         << fmt("%.1f", b.seconds_before * 1e6) << " &rarr; " << fmt("%.1f", b.seconds_after * 1e6)
         << "</td><td class=\"n\">" << fmt("%.2fx", b.seconds_before / b.seconds_after) << "</td>";
    } else {
      os << "<td class=\"n muted\">" << bytes(double(b.bytes_saved)) << " saved</td>"
         << "<td></td><td></td><td></td><td class=\"n muted\">no estimate</td>";
    }
    if (b.measured_ms_after > 0 && b.measured_ms_before >= 0) {
      os << "<td class=\"n\">" << fmt("%.1f", b.measured_ms_before * 1e3) << " &rarr; "
         << fmt("%.1f", b.measured_ms_after * 1e3) << "</td><td class=\"n\">"
         << fmt("%.2fx", b.measured_ms_before / b.measured_ms_after) << "</td>";
    } else {
      os << "<td class=\"n muted\">&ndash;</td><td class=\"n muted\">&ndash;</td>";
    }
    if (b.max_rel_error >= 0) {
      os << "<td class=\"n\">" << fmt("%.1e", b.max_rel_error) << "</td>";
    } else {
      os << "<td class=\"n muted\">&ndash;</td>";
    }
    os << "</tr>";
  }
  os << "</tbody></table></div></section>";
}

void declined_table(std::ostringstream& os, const FusionReport& r) {
  constexpr size_t kMaxRows = 500;
  size_t total = 0;
  for (const PassRecord& p : r.passes) total += p.rejected.size();
  os << "<section id=\"declined-matches\"><h2>Declined matches (" << total
     << ")</h2><div class=\"scroll\"><table id=\"declined\"><thead><tr><th>rule</th><th>nodes</th>"
        "<th>why not</th></tr></thead><tbody>";
  size_t shown = 0;
  for (const PassRecord& p : r.passes) {
    for (const RejectedMatch& m : p.rejected) {
      if (shown++ >= kMaxRows) break;
      std::string nodes;
      for (size_t i = 0; i < m.nodes.size(); ++i) nodes += (i ? ", " : "") + m.nodes[i];
      os << "<tr><td>" << esc(p.name) << "</td><td>" << esc(nodes) << "</td><td>" << esc(m.reason)
         << "</td></tr>";
    }
  }
  os << "</tbody></table></div>";
  if (total > kMaxRows) {
    os << "<p class=\"muted\">" << total - kMaxRows
       << " more in fusion_result.json (nnfuse compile --report)</p>";
  }
  os << "</section>";
}

void kernel_bars(std::ostringstream& os, const ReportPage& p) {
  os << "<section id=\"kernel-times\"><h2>Time per kernel</h2>";
  if (p.kernel_times.empty()) {
    os << "<p class=\"muted\">Not measured: run nnfuse report with --measure.</p></section>";
    return;
  }
  std::vector<KernelBar> k = p.kernel_times;
  std::sort(k.begin(), k.end(), [](const KernelBar& a, const KernelBar& b) { return a.ms > b.ms; });
  double total = 0;
  for (const KernelBar& t : k) total += t.ms;
  const double top = k.front().ms > 0 ? k.front().ms : 1;
  constexpr size_t kMaxBars = 40;
  os << "<p class=\"muted\">The fused model, " << p.measured_runs << " runs: " << fmt("%.3f", total)
     << " ms of kernels per run; the " << std::min(kMaxBars, k.size()) << " slowest of " << k.size()
     << " kernels"
     << ". Red: on the reference kernel.</p><div class=\"bars\">";
  for (size_t i = 0; i < k.size() && i < kMaxBars; ++i) {
    const KernelBar& t = k[i];
    os << "<div class=\"barrow\"><div class=\"label\" title=\"" << esc(t.kernel) << "\">"
       << esc(t.op) << " " << esc(t.name) << "</div><div class=\"bar" << (t.reference ? " ref" : "")
       << "\" style=\"width:" << fmt("%.1f", std::max(0.5, 500.0 * t.ms / top)) << "px\"></div>"
       << fmt("%.3f ms", t.ms) << " (" << pct(total > 0 ? t.ms / total : 0) << ")</div>";
  }
  os << "</div></section>";
}

}  // namespace

std::string render_report_html(const ReportPage& p, std::vector<std::string>* problems) {
  const FusionReport& r = *p.report;
  std::vector<std::string> rules;
  for (const FusionBenefit& b : r.fused) rules.push_back(last_rule(b.pass));
  const std::map<std::string, std::string> colors = rule_colors(rules);
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>nnfuse report: "
     << esc(p.model) << "</title><style>" << kStyle << "</style></head><body>";
  os << "<h1>nnfuse report</h1><div class=\"sub\">" << esc(p.model) << "</div>";
  summary(os, p);
  os << "<section id=\"warnings\"><h2>Warnings (" << r.warnings.size() << ")</h2>";
  if (r.warnings.empty()) {
    os << "<p class=\"muted\">None: no over-fusion found";
    os << (r.fused.empty() || r.fused.front().max_rel_error < 0
               ? "; precision not checked (run with --measure)."
               : ", and every fused node within tolerance of the unfused nodes.");
    os << "</p>";
  } else {
    os << "<ul>";
    for (const FusionWarning& w : r.warnings) {
      os << "<li class=\"warn\"><b>" << esc(w.kind) << "</b> " << esc(w.node) << ": "
         << esc(w.message) << "</li>";
    }
    os << "</ul>";
  }
  os << "</section>";
  os << "<section id=\"graphs\"><h2>The graph before and after fusion</h2><div class=\"legend\">";
  for (const auto& [rule, color] : colors) {
    os << "<span><i style=\"background:" << color << "\"></i>" << esc(rule) << "</span>";
  }
  os << "</div><div class=\"graphs\">";
  const FusionGroups groups = fusion_groups(*p.after);
  graph_section(os, "graph-before", "Before fusion", graph_dot(*p.before, colors, &groups),
                problems);
  graph_section(os, "graph-after", "After fusion", graph_dot(*p.after, colors), problems);
  os << "</div></section>";
  fused_table(os, r, colors);
  declined_table(os, r);
  os << "<section id=\"reference-kernels\"><h2>Reference kernels (" << p.reference_kernels.size()
     << ")</h2>";
  if (p.reference_kernels.empty()) {
    os << "<p class=\"muted\">None: every compute op runs on a fast kernel.</p>";
  } else {
    os << "<ul>";
    for (const std::string& line : p.reference_kernels) os << "<li>" << esc(line) << "</li>";
    os << "</ul>";
  }
  os << "</section>";
  if (!r.fallbacks.empty()) {
    os << "<section id=\"fallbacks\"><h2>Fallbacks (" << r.fallbacks.size() << ")</h2><ul>";
    for (const FallbackRecord& f : r.fallbacks) {
      os << "<li>" << esc(f.pass) << " " << esc(f.region) << ": " << esc(f.reason) << "</li>";
    }
    os << "</ul></section>";
  }
  kernel_bars(os, p);
  os << "</body></html>\n";
  return os.str();
}

}  // namespace nnfuse
