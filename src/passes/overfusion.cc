#include "passes/overfusion.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ops/region.h"

namespace nnfuse {

int64_t l2_cache_bytes() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index2/size");
  int64_t v = 0;
  std::string unit;
  if (in >> v && v > 0) {
    in >> unit;
    if (unit.empty() || unit == "K") return v * 1024;
    if (unit == "M") return v * 1024 * 1024;
  }
  return int64_t{1} << 20;
}

int vector_registers() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 32;
#endif
  return 16;
}

namespace {

// The most non-constant values the region's ops hold at once, evaluated in order: a value lives
// from its op to its last reader (the output to the end).
int max_live_values(const codegen::Region& r) {
  const int n = static_cast<int>(r.ops.size());
  std::vector<int> last(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    for (int operand : {r.ops[static_cast<size_t>(i)].a, r.ops[static_cast<size_t>(i)].b}) {
      if (operand >= 0 && operand < n) last[static_cast<size_t>(operand)] = i;
    }
  }
  if (r.output >= 0 && r.output < n) last[static_cast<size_t>(r.output)] = n;
  int live = 0, most = 0;
  std::vector<int> ends(static_cast<size_t>(n + 1), 0);  // values dying after op i
  for (int i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (r.ops[k].kind != codegen::OpKind::kConst && last[k] > i) {
      ++live;
      ++ends[static_cast<size_t>(last[k])];
    }
    most = std::max(most, live);
    live -= ends[k];
  }
  return most;
}

std::string kib(int64_t bytes) {
  std::ostringstream s;
  s << (bytes + 1023) / 1024 << " KiB";
  return s.str();
}

}  // namespace

std::vector<FusionWarning> overfusion_warnings(const Graph& g, int64_t l2_bytes, int registers) {
  std::vector<FusionWarning> out;
  for (const Node* n : g.nodes()) {
    if (!n->is(Op::kFusedRegion)) continue;
    codegen::Region r;
    try {
      r = ops::fused_region_of(*n);
    } catch (const Error&) {
      continue;  // malformed: the kernel's own check names it when the model runs
    }
    if (const int live = max_live_values(r); live > registers) {
      std::ostringstream m;
      m << "its loop holds " << live << " values at once, more than the " << registers
        << " vector registers: they spill to the stack on every element";
      out.push_back({"over-fusion", n->name(), m.str()});
    }
    const int64_t row = codegen::work_per_item(r);
    if (row <= 1) continue;
    int64_t along = 0;  // inputs read along the row (their last dim is the row's)
    for (const auto& s : r.input_shapes) {
      if (!s.empty() && s.back() == row) ++along;
    }
    const int64_t set = row * along * static_cast<int64_t>(sizeof(float));
    if (along > 0 && set > l2_bytes) {
      std::ostringstream m;
      m << "each row of " << row << " elements reads " << along << " input"
        << (along == 1 ? "" : "s") << " before and after its reduction (" << kib(set)
        << "), more than the " << kib(l2_bytes)
        << " L2 cache: the second read comes from memory, more bytes than estimated";
      out.push_back({"over-fusion", n->name(), m.str()});
    }
  }
  return out;
}

}  // namespace nnfuse
