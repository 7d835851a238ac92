// `nnfuse calibrate`: measures this machine's peak float32 GFLOP/s (oneDNN's sgemm on square
// matrices), its memory bandwidth (a parallel copy of buffers far larger than the caches) and
// the cost of one kernel launch (an empty parallel region), for the roofline estimates of
// cost/machine.h.
#pragma once

#include "cost/machine.h"

namespace nnfuse {

// Measures with `threads` threads (0: all cores); takes about a second.
cost::Calibration calibrate_machine(int threads);

}  // namespace nnfuse
