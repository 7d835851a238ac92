// FusedRegion (ai.nnfuse) as its generated kernel: the region's C++ (codegen::emit_cpp) built
// once per process (and cached on disk across processes) and called over the work items on the
// runtime's threads. When the code cannot be built, the kernel declines and the reference
// kernel (codegen::evaluate) runs the node: the fallback, announced by a warning.
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "codegen/jit.h"
#include "ir/progress.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_util.h"
#include "ops/region.h"

namespace nnfuse::cpu {

namespace {

// One build per distinct region in this process, whatever the number of nodes or plans.
codegen::JitResult build(const codegen::Region& r) {
  static std::mutex mu;
  static std::map<std::string, codegen::JitResult> built;
  const std::string symbol = ops::fused_region_symbol(r);
  std::lock_guard<std::mutex> lock(mu);
  auto it = built.find(symbol);
  if (it == built.end()) {
    // On a terminal, while the compiler runs (a cache hit is done before anything is drawn).
    Progress progress("building kernel " + symbol, 0);
    progress.keep_ticking();
    it = built.emplace(symbol, codegen::jit_build(codegen::emit_cpp(r, symbol), symbol)).first;
  }
  return it->second;
}

void warn_fallback_once(const Node& node, const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(node.name()).second) return;
  warn("fallback: region ", node.describe(), " runs unfused (reference evaluator): ", why);
}

class FusedRegionKernel : public Kernel {
 public:
  FusedRegionKernel(codegen::Region r, codegen::KernelFn fn, Layout layout)
      : r_(std::move(r)), fn_(fn), layout_(layout) {
    items_ = codegen::work_items(r_);
    // An item is one element or one row: keep each thread's share worth a fork.
    grain_ =
        std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, codegen::work_per_item(r_)));
  }

  void run(KernelIO& io) override {
    std::vector<const float*> in;
    for (size_t i = 0; i < r_.input_shapes.size(); ++i) in.push_back(io.in(i).data<float>());
    Tensor& out = io.output(0, DType::kFloat32,
                            Dims(r_.output_shape.begin(), r_.output_shape.end()), layout_);
    float* po = out.data<float>();
    const float* const* pin = in.data();
    parallel_range(items_, grain_, [&](int64_t b, int64_t e) { fn_(pin, po, b, e); });
  }

 private:
  codegen::Region r_;
  codegen::KernelFn fn_;
  Layout layout_;
  int64_t items_ = 0, grain_ = 1;
};

// The layout the region runs in: plain, or channels-last when it is elementwise and every input
// is either a scalar or of the output's shape in channels-last (then each element's result
// depends on the same position of each input, whatever the order of positions in memory).
std::optional<Layout> region_layout(const NodeInfo& info, const codegen::Region& r) {
  if (info.all_inputs_in(Layout::kPlain)) return Layout::kPlain;
  if (codegen::reduction_op(r) >= 0 || !r.domain_shape.empty() || r.output_shape.size() != 4) {
    return std::nullopt;
  }
  for (size_t i = 0; i < r.input_shapes.size(); ++i) {
    const Layout l = i < info.input_layouts.size() ? info.input_layouts[i] : Layout::kPlain;
    if (codegen::num_elements(r.input_shapes[i]) == 1) continue;
    if (l != Layout::kNHWC || r.input_shapes[i] != r.output_shape) return std::nullopt;
  }
  return Layout::kNHWC;
}

std::optional<Layout> region_layout(const NodeInfo& info) {
  try {
    return region_layout(info, ops::fused_region_of(info.node));
  } catch (const Error&) {
    return std::nullopt;
  }
}

Layout fused_region_output_layout(const NodeInfo& info, size_t) {
  return region_layout(info).value_or(Layout::kPlain);
}

bool fused_region_accepts(const NodeInfo& info) {
  codegen::Region r;
  try {
    r = ops::fused_region_of(info.node);
  } catch (const Error&) {
    return false;  // the reference kernel reports it
  }
  if (!region_layout(info, r)) return false;
  const codegen::JitResult j = build(r);
  if (!j.ok()) warn_fallback_once(info.node, j.error);
  return j.ok();
}

std::unique_ptr<Kernel> fused_region_create(const NodeInfo& info) {
  codegen::Region r = ops::fused_region_of(info.node);
  const codegen::KernelFn fn = build(r).fn;
  const Layout layout = region_layout(info, r).value_or(Layout::kPlain);
  return std::make_unique<FusedRegionKernel>(std::move(r), fn, layout);
}

// The output may take the storage of an input of its own shape: every element is read (in
// its row's first loop, or at its own index) before that index is written.
int fused_region_in_place(const NodeInfo& info, size_t k) {
  if (k != 0) return -1;
  const auto out = info.output_shape(0);
  for (size_t i = 0; out && i < info.node.num_inputs(); ++i) {
    if (info.input_shape(i) == out) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

void append_fused_region_kernels(FactoryTable& t) {
  t.emplace_back("FusedRegion",
                 KernelFactory{"cpu.generated", fused_region_accepts, fused_region_output_layout,
                               fused_region_create, fused_region_in_place});
}

}  // namespace nnfuse::cpu
