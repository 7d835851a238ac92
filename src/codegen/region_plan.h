// Internal to codegen: how a valid Region is evaluated (shared by evaluate, emit_cpp and
// emit_cuda so the three agree on phases, broadcasting and row-output mode).
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/codegen.h"

namespace nnfuse::codegen {

struct RegionPlan {
  std::vector<int64_t> dom;                   // domain(r), rank >= 1 (a rank-0 domain as [1])
  std::vector<std::vector<int64_t>> strides;  // per input, aligned to dom; 0 where broadcast
  std::vector<bool> last_stride_zero;         // per input: the same value along a row
  int red = -1;                               // the reduction op, -1 when elementwise
  bool row_output = false;                    // out holds one value per row
  int64_t rows = 0;                           // product of dom's leading dims
  int64_t row_len = 1;                        // dom's last dim
  // Row regions only. pre: the ops the reduction reads, evaluated per element of the row.
  // post: the ops the output reads, the reduction excluded (its value is known by then),
  // evaluated per element of the row, or once per row in row-output mode. An op may be in both.
  std::vector<bool> pre;
  std::vector<bool> post;
  std::vector<bool> emitted;  // pre or post
};

// `r` must be valid (validate(r) empty).
RegionPlan make_plan(const Region& r);

// Per op: whether its value can differ along the domain's last axis, counting the reduction's
// result as constant along it (it is one value per row). Needs well-formed operands.
std::vector<bool> varies_along_row(const Region& r);

}  // namespace nnfuse::codegen
