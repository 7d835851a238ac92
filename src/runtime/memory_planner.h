// Static memory planning: buffers with known sizes and live intervals (in step indices) get
// offsets in one arena such that no two buffers that are live at the same time overlap.
// Greedy by size: the largest buffers are placed first, each at the lowest offset that does
// not collide with an already placed buffer whose interval intersects its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nnfuse {

struct BufferRequest {
  size_t bytes = 0;
  int64_t first = 0;  // step that writes it
  int64_t last = 0;   // last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per request
  size_t arena_bytes = 0;       // peak: the arena's size
  size_t total_bytes = 0;       // sum of all requests (what no reuse would need)
};

constexpr size_t kArenaAlignment = 64;

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests);

// Throws kInternal naming the first two requests that are live together and overlap.
void check_memory_plan(const std::vector<BufferRequest>& requests, const MemoryPlan& plan);

}  // namespace nnfuse
