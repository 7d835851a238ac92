// Buffers, the plan's last step: every activation with a static shape that a kernel produces
// gets a slot in one arena, reused by liveness (memory_planner.h). An output shares its input's
// slot where its kernel may write over that input (KernelFactory::in_place_input) and nothing
// reads the input after; views and a Concat's placed inputs share their root's slot. Each step
// also learns which values it is the last to read (PlanStep::frees), for the values the arena
// does not hold.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/memory_planner.h"
#include "runtime/plan.h"

namespace nnfuse {

struct BufferPlan {
  std::vector<BufferRequest> buffers;  // one per arena slot (PlanValue::buffer)
  MemoryPlan memory;
  // The sum of every activation's size: what a runtime without reuse would hold.
  size_t total_activation_bytes = 0;
  // The largest Kernel::scratch_bytes() of the steps: the scratch region they share.
  size_t scratch_bytes = 0;
};

// Plans the buffers of `values` as `steps` read and write them, `outputs` (the graph's
// outputs) living to the end; `use_arena` false leaves every value to be allocated when it
// is produced. Sets PlanValue::buffer (and alias_of for the outputs made in place) and
// PlanStep::frees.
BufferPlan plan_buffers(std::vector<PlanValue>& values, std::vector<PlanStep>& steps,
                        const std::vector<int>& outputs, bool use_arena);

}  // namespace nnfuse
