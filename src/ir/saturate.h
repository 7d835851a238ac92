// Saturating int64 arithmetic for cost figures: they saturate at the largest int64 instead of
// overflowing, since a model may declare shapes whose byte counts each fit in 64 bits while
// their sum, or a product's FLOPs, does not.
#pragma once

#include <cstdint>
#include <limits>

namespace nnfuse {

inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}
inline int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

}  // namespace nnfuse
