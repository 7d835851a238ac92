#include "runtime/memory_planner.h"

#include <algorithm>
#include <numeric>

#include "ir/error.h"
#include "ir/tensor.h"

namespace nnfuse {

namespace {

bool live_together(const BufferRequest& a, const BufferRequest& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  struct Placed {
    size_t begin, end, index;
  };
  std::vector<Placed> placed;  // kept sorted by begin
  for (size_t idx : order) {
    const BufferRequest& r = requests[idx];
    plan.total_bytes += r.bytes;
    size_t size = align_up(std::max<size_t>(r.bytes, 1), kArenaAlignment);
    size_t offset = 0;
    for (const Placed& p : placed) {
      if (!live_together(r, requests[p.index])) continue;
      if (offset + size <= p.begin) break;  // fits in the gap before p
      offset = std::max(offset, p.end);
    }
    plan.offsets[idx] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
    Placed np{offset, offset + size, idx};
    placed.insert(
        std::upper_bound(placed.begin(), placed.end(), np,
                         [](const Placed& a, const Placed& b) { return a.begin < b.begin; }),
        np);
  }
  return plan;
}

void check_memory_plan(const std::vector<BufferRequest>& requests, const MemoryPlan& plan) {
  for (size_t i = 0; i < requests.size(); ++i) {
    if (plan.offsets[i] % kArenaAlignment != 0 ||
        plan.offsets[i] + requests[i].bytes > plan.arena_bytes) {
      fail(ErrorKind::kInternal, "memory plan: buffer ", i, " is misaligned or outside the arena");
    }
    for (size_t j = i + 1; j < requests.size(); ++j) {
      if (!live_together(requests[i], requests[j]) || !requests[i].bytes || !requests[j].bytes) {
        continue;
      }
      size_t a0 = plan.offsets[i], a1 = a0 + requests[i].bytes;
      size_t b0 = plan.offsets[j], b1 = b0 + requests[j].bytes;
      if (a0 < b1 && b0 < a1) {
        fail(ErrorKind::kInternal, "memory plan: buffers ", i, " and ", j,
             " are live together and overlap");
      }
    }
  }
}

}  // namespace nnfuse
