#include "api/verify.h"

#include <cmath>

namespace nnfuse {

OutputDiff compare_outputs(const Tensor& got, const Tensor& want) {
  OutputDiff d;
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    d.problem = "fused gives " + dtype_name(got.dtype()) + dims_str(got.shape()) +
                ", unfused gives " + dtype_name(want.dtype()) + dims_str(want.shape());
    d.rel = INFINITY;
    return d;
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.double_at(i), g = got.double_at(i);
    if (std::isnan(w) != std::isnan(g)) {
      d.max_abs = INFINITY;
      continue;
    }
    if (std::isnan(w)) continue;
    d.scale = std::max(d.scale, std::abs(w));
    d.max_abs = std::max(d.max_abs, std::abs(g - w));
  }
  d.rel = d.scale > 0 ? d.max_abs / d.scale : d.max_abs;
  return d;
}

}  // namespace nnfuse
