// Over-fusion warnings: fused nodes that may not deliver what their estimate assumed.
//  - A generated kernel (FusedRegion) whose loop holds more values at once than the CPU has
//    vector registers: the values spill to the stack on every element.
//  - A row region (a generated kernel with a reduction) whose row, read once for the reduction
//    and again after it, does not fit the L2 cache: the second read goes to memory, so the
//    region moves more bytes than estimated.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "report/report.h"

namespace nnfuse {

// The L2 cache of CPU 0 in bytes (sysfs), 1 MiB when the system does not say.
int64_t l2_cache_bytes();
// Vector registers of the widest ISA the CPU has: 32 with AVX-512, else 16.
int vector_registers();

// The warnings for `g`'s fused nodes, for a machine with `l2_bytes` of L2 and `registers`
// vector registers.
std::vector<FusionWarning> overfusion_warnings(const Graph& g, int64_t l2_bytes, int registers);

}  // namespace nnfuse
