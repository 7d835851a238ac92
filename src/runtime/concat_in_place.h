// Concat in place, the plan's step that lets a Concat's inputs be written into their parts of
// its output by the kernels that produce them. Along an axis whose parts are single ranges of
// the output's storage (every dim stored before it of extent 1: a batch-1 concat of plain
// tensors along their channels or tokens), any kernel writes its part there. Along a
// channels-last tensor's channels (the last stored dim), each part is a row of every pixel, and
// a kernel that can store its output's pixels at the concat's pitch
// (Kernel::write_output_rows) writes them there. An input so placed is copied by no one; with
// every input placed the Concat runs no kernel at all. Inputs qualify when a kernel of this plan
// produces them for this Concat alone (no other reader, no graph output) in the output's layout
// and type. Only for a Concat whose kernel assembles its output so
// (KernelFactory::assembles_in_place: it copies only the inputs not already in place).
#pragma once

#include <cstddef>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/plan.h"

namespace nnfuse {

// Per value a kernel step writes: (that step's index, the output's index).
using PlanProducers = std::unordered_map<int, std::pair<size_t, size_t>>;

// Places what it can of the inputs of steps[concat] (a Concat's kernel step) in its output: the
// inputs' values become slices of it (PlanValue::slice), and with every input placed the step
// becomes a view that runs nothing (PlanStep::assembled).
void place_concat_inputs(std::vector<PlanValue>& values, std::vector<PlanStep>& steps,
                         const PlanProducers& producers, size_t concat);

}  // namespace nnfuse
