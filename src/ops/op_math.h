// Arithmetic the reference kernels, the fast kernels and the passes that reason about the same
// ops must agree on, kept once: value conversion as Cast does it, saturating casts, and Slice's
// bounds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace nnfuse {

// Converts one value as Cast does: float to integer truncates toward zero, NaN becomes 0 and
// values out of the target's range saturate (C++ leaves both undefined); anything to bool is
// "!= 0"; integer narrowing wraps (defined since C++20).
template <typename To, typename From>
To convert_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return To(0);
    const From t = std::trunc(v);
    if (t <= static_cast<From>(std::numeric_limits<To>::min())) {
      return std::numeric_limits<To>::min();
    }
    if (t >= static_cast<From>(std::numeric_limits<To>::max())) {
      return std::numeric_limits<To>::max();
    }
    return static_cast<To>(t);
  } else {
    return static_cast<To>(v);
  }
}

// double -> T for a result computed in double (Clip's bounds, Pow, a reduction): rounds toward
// zero and saturates for integer T (NaN gives 0; a bool is true for values >= 1).
template <typename T>
T saturate_cast(double d) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(d);
  } else {
    if (std::isnan(d)) return 0;
    if (d <= static_cast<double>(std::numeric_limits<T>::lowest())) {
      return std::numeric_limits<T>::lowest();
    }
    if (d >= static_cast<double>(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
    return static_cast<T>(d);
  }
}

// One axis of a Slice (opset >= 10) over a dim of length d: the first index taken, how many
// and the step between them. Negative starts and ends count from the end, and both are clamped
// as the spec says (into [0, d] for a positive step, [-1, d - 1] for a negative one) before any
// arithmetic, so +-INT64_MAX bounds do not overflow. `step` must not be 0.
struct SliceAxis {
  int64_t start = 0, len = 0, step = 1;
};
inline SliceAxis slice_axis(int64_t d, int64_t start, int64_t end, int64_t step) {
  int64_t s = start < 0 ? std::max<int64_t>(start, -d) + d : start;
  int64_t e = end < 0 ? std::max<int64_t>(end, -d - 1) + d : end;
  SliceAxis r;
  if (d == 0) return r;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, d);
    e = std::clamp<int64_t>(e, 0, d);
    r.len = e > s ? (e - s - 1) / step + 1 : 0;
  } else {
    s = std::clamp<int64_t>(s, 0, d - 1);
    e = std::clamp<int64_t>(e, -1, d - 1);
    const uint64_t mag = uint64_t{0} - static_cast<uint64_t>(step);
    r.len = s > e ? static_cast<int64_t>(static_cast<uint64_t>(s - e - 1) / mag) + 1 : 0;
  }
  r.start = s;
  r.step = r.len > 1 ? step : 1;  // |step| < d when two or more elements are taken
  return r;
}

}  // namespace nnfuse
