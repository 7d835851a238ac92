#include "runtime/memory_planner.h"

#include <gtest/gtest.h>

#include <random>

#include "ir/error.h"

namespace nnfuse {
namespace memory_planner_test {

TEST(MemoryPlanner, ReusesBuffersOfDisjointLifetimes) {
  // A chain: each buffer lives from its producer to the next step.
  std::vector<BufferRequest> reqs;
  for (int i = 0; i < 10; ++i) reqs.push_back({1000, i, i + 1});
  MemoryPlan p = plan_memory(reqs);
  check_memory_plan(reqs, p);
  EXPECT_EQ(p.total_bytes, 10000u);
  // Only two are ever live together.
  EXPECT_LE(p.arena_bytes, 2 * 1024u);
}

TEST(MemoryPlanner, NeverOverlapsLiveBuffersOnRandomGraphs) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferRequest> reqs;
    int n = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      int64_t first = rng() % 40;
      reqs.push_back({1 + rng() % 5000, first, first + static_cast<int64_t>(rng() % 10)});
    }
    MemoryPlan p = plan_memory(reqs);
    ASSERT_NO_THROW(check_memory_plan(reqs, p)) << "trial " << trial;
    // Never worse than no reuse (up to alignment padding).
    EXPECT_LE(p.arena_bytes, p.total_bytes + kArenaAlignment * reqs.size());
  }
}

TEST(MemoryPlanner, CheckerCatchesOverlap) {
  std::vector<BufferRequest> reqs = {{100, 0, 5}, {100, 2, 3}};
  MemoryPlan bad{{0, 64}, 256, 200};
  EXPECT_THROW(check_memory_plan(reqs, bad), Error);
}

}  // namespace memory_planner_test
}  // namespace nnfuse
