#include "passes/pass_observers.h"

#include <cstdio>
#include <filesystem>

#include "ir/dump.h"
#include "ir/error.h"

namespace nnfuse {

DumpObserver::DumpObserver(std::string format, std::string dir)
    : format_(std::move(format)), dir_(dir.empty() ? "." : std::move(dir)) {}

void DumpObserver::started(const Graph& g) { dump(g, 0, "imported"); }

void DumpObserver::after(const PhasePass& p, const Graph& g) {
  dump(g, p.number, p.pass->info().name);
}

void DumpObserver::dump(const Graph& g, int number, const std::string& name) const {
  std::filesystem::create_directories(dir_);
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%02d_", number);
  dump_graph(g, format_, (std::filesystem::path(dir_) / (prefix + name + "." + format_)).string());
}

void ProgressObserver::started(const Graph&) {
  progress_.emplace("fusing: pass", passes_);
  progress_->keep_ticking();
}

void ProgressObserver::before(const PhasePass& p) {
  progress_->update(p.number, p.pass->info().name);
}

void VerifyObserver::after(const PhasePass&, const Graph& g) { verify_graph(g); }

namespace {

GraphFigures figures(const cost::GraphCost& c) {
  return {c.kernels, c.flops, c.bytes_moved, c.seconds};
}

}  // namespace

CostObserver::CostObserver(FusionReport& report, const cost::Machine& machine,
                           std::string machine_source)
    : report_(report), machine_(machine), machine_source_(std::move(machine_source)) {}

void CostObserver::started(const Graph& g) {
  report_.peak_gflops = machine_.flops_per_s / 1e9;
  report_.bandwidth_gbps = machine_.bytes_per_s / 1e9;
  report_.launch_us = machine_.launch_s * 1e6;
  report_.machine_source = machine_source_;
  report_.before = figures(cost::graph_cost(g, machine_));
  originals_ = original_costs(g, machine_);
}

void CostObserver::finished(const Graph& g) {
  settle_fusion_records(g, report_, originals_, machine_);
  report_.after = figures(cost::graph_cost(g, machine_));
}

}  // namespace nnfuse
