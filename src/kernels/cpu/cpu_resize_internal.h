// Private to the Resize kernel (cpu_resize.cc): its Plan, made once per node by
// cpu_resize_plan.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "kernels/kernel.h"

namespace nnfuse::cpu::resize {

// Everything a run needs, fixed at plan time. Storage is viewed as [outer, rows, cols * vec]:
// `vec` is C for channels-last input (the channels of a pixel move together), else 1.
struct Plan {
  Dims in_shape, out_shape;
  Layout layout = Layout::kPlain, out_layout = Layout::kPlain;
  int64_t outer = 1, vec = 1;
  int64_t in_rows = 1, out_rows = 1, in_cols = 1, out_cols = 1;
  // Per output row, its source rows and weights: [row_begin[r], row_begin[r + 1]).
  std::vector<int64_t> row_begin, row_src;
  std::vector<float> row_w;
  std::vector<bool> row_repeats;  // the row's taps equal the previous row's: copy that output
  // Last axis: col_k taps per output column, tap-major ([k * out_cols + o]); indices count
  // elements of a row (pixels times vec).
  int col_k = 1;
  bool col_identity = false;
  std::vector<int32_t> col_src;
  std::vector<float> col_w;
  // Plain layout, where the column pass gathers: resize each source row along the last axis
  // once and keep it for the output rows that blend it (when rows are reused, as in
  // upsampling), in a cache of `cache_rows` rows per thread; 0: combine rows first.
  int64_t cache_rows = 0;
};

// Whether output row taps are a single plain copy of one source row.
inline bool single_copy(const Plan& p, int64_t row) {
  const size_t b = static_cast<size_t>(p.row_begin[static_cast<size_t>(row)]);
  return p.row_begin[static_cast<size_t>(row) + 1] - p.row_begin[static_cast<size_t>(row)] == 1 &&
         p.row_w[b] == 1.0f;
}

// The Resize's Plan, or nullopt with the reason in *why.
std::optional<Plan> make_plan(const NodeInfo& info, std::string* why);

}  // namespace nnfuse::cpu::resize
