// Fused against unfused: how far one output departs from the other.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace nnfuse {

struct OutputDiff {
  double max_abs = 0;   // largest |got - want| (infinite where only one side is NaN)
  double scale = 0;     // largest |want|
  double rel = 0;       // max_abs / scale (max_abs when scale is 0)
  std::string problem;  // a shape or dtype mismatch, else ""
};

OutputDiff compare_outputs(const Tensor& got, const Tensor& want);

}  // namespace nnfuse
