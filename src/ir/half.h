// IEEE binary16 (float16) and bfloat16 elements: the 16-bit storage types, their DTypes, and
// exact conversions. Narrowing rounds to the nearest value, ties to even, with subnormals,
// overflow to infinity and NaN kept a (quiet) NaN of the same sign; widening is exact.
//
// The conversions work on the bits, not through float arithmetic, so they give the same result
// whatever the thread's rounding mode or flush-to-zero / denormals-are-zero flags (sessions run
// with both set). The one float operation, float16's double value narrowed to float, is exact
// on a normal number.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "ir/dtype.h"

namespace nnfuse {

// One element of a kFloat16 / kBFloat16 tensor, as its bits: Tensor::data<Float16>() works.
struct Float16 {
  uint16_t bits = 0;
};
struct BFloat16 {
  uint16_t bits = 0;
};
template <>
struct DTypeOf<Float16> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::kBFloat16;
};

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
inline bool dtype_is_half(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

namespace half_detail {

// A binary format of E exponent bits and M stored mantissa bits (IEEE layout, bias
// 2^(E-1) - 1): float16 is <5, 10>, bfloat16 <8, 7>.
template <typename H>
struct Format;
template <>
struct Format<Float16> {
  static constexpr int E = 5, M = 10;
};
template <>
struct Format<BFloat16> {
  static constexpr int E = 8, M = 7;
};

// The bits of H nearest to (-1)^neg * sig * 2^exp2.
template <typename H>
constexpr uint16_t round_bits(bool neg, uint64_t sig, int exp2) {
  constexpr int E = Format<H>::E, M = Format<H>::M;
  constexpr int kBias = (1 << (E - 1)) - 1, kMinExp = 1 - kBias;
  constexpr uint16_t kInf = static_cast<uint16_t>(((1u << E) - 1) << M);
  const uint16_t sign = neg ? static_cast<uint16_t>(1u << (E + M)) : uint16_t{0};
  if (sig == 0) return sign;
  // Move the leading 1 to bit 62. A bit shifted out at the bottom is kept as a sticky bit in
  // bit 0: the rounding point lies far above it, so only its being non-zero matters.
  const int w = std::bit_width(sig);
  if (w == 64) {
    sig = (sig >> 1) | (sig & 1);
    exp2 += 1;
  } else {
    sig <<= 63 - w;
    exp2 -= 63 - w;
  }
  const int e = exp2 + 62;  // the exponent of the leading 1
  if (e > kBias) return sign | kInf;
  // Bits below the last place kept: M below the leading 1 for a normal result; for a
  // subnormal one the last place is fixed at 2^(kMinExp - M).
  const int shift = 62 - M + (e < kMinExp ? kMinExp - e : 0);
  if (shift > 63) return sign;  // less than half the smallest subnormal
  uint64_t q = sig >> shift;
  const uint64_t rem = sig & ((uint64_t{1} << shift) - 1), half = uint64_t{1} << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  // A normal q lies in [2^M, 2^(M+1)]: its leading 1 adds one to the exponent field, which is
  // therefore written one lower, and a carry to 2^(M+1) moves into the next binade (from the
  // largest, to infinity). A subnormal q lies in [0, 2^M], 2^M being the smallest normal.
  const uint64_t field = e < kMinExp ? 0 : static_cast<uint64_t>(e + kBias - 1);
  return sign | static_cast<uint16_t>((field << M) + q);
}

// H's infinity for a wider format's infinity (payload 0), else a quiet NaN keeping the sign and
// the top bits of the wider NaN's `payload_bits`-bit payload.
template <typename H>
constexpr uint16_t special_bits(bool neg, uint64_t payload, int payload_bits) {
  constexpr int E = Format<H>::E, M = Format<H>::M;
  uint32_t r = (neg ? 1u << (E + M) : 0u) | (((1u << E) - 1) << M);
  if (payload) r |= (1u << (M - 1)) | static_cast<uint32_t>(payload >> (payload_bits - M));
  return static_cast<uint16_t>(r);
}

template <typename H>
constexpr uint16_t from_double(double v) {
  const uint64_t b = std::bit_cast<uint64_t>(v);
  const bool neg = (b >> 63) != 0;
  const int be = static_cast<int>((b >> 52) & 0x7ff);
  const uint64_t man = b & ((uint64_t{1} << 52) - 1);
  if (be == 0x7ff) return special_bits<H>(neg, man, 52);
  if (be == 0) return round_bits<H>(neg, man, -1074);
  return round_bits<H>(neg, man | (uint64_t{1} << 52), be - 1075);
}

template <typename H>
constexpr uint16_t from_float(float v) {
  const uint32_t b = std::bit_cast<uint32_t>(v);
  const bool neg = (b >> 31) != 0;
  const int be = static_cast<int>((b >> 23) & 0xff);
  const uint32_t man = b & 0x7fffff;
  if (be == 0xff) return special_bits<H>(neg, man, 23);
  if (be == 0) return round_bits<H>(neg, man, -149);
  return round_bits<H>(neg, man | (uint32_t{1} << 23), be - 150);
}

// The exact value of H's bits as a double.
template <typename H>
constexpr double to_double(uint16_t h) {
  constexpr int E = Format<H>::E, M = Format<H>::M;
  constexpr int kBias = (1 << (E - 1)) - 1;
  const int be = (h >> M) & ((1 << E) - 1);
  const uint64_t man = h & ((1u << M) - 1);
  uint64_t bits = static_cast<uint64_t>((h >> (E + M)) & 1) << 63;
  if (be == (1 << E) - 1) {  // infinity, or NaN with its payload
    bits |= (uint64_t{0x7ff} << 52) | (man << (52 - M));
  } else if (be != 0) {
    bits |= (static_cast<uint64_t>(be - kBias + 1023) << 52) | (man << (52 - M));
  } else if (man != 0) {  // subnormal man * 2^(1 - kBias - M), normal as a double
    const int w = std::bit_width(man);
    bits |= (static_cast<uint64_t>(w - kBias - M + 1023) << 52) |
            ((man << (53 - w)) & ((uint64_t{1} << 52) - 1));
  }
  return std::bit_cast<double>(bits);
}

}  // namespace half_detail

// H (Float16 or BFloat16) nearest to v: a float, double, integer or bool (exactly 0 or 1), or
// the other 16-bit type (through its exact double value, so rounded once).
template <typename H, typename T>
constexpr H to_half(T v) {
  static_assert(is_half_v<H>);
  if constexpr (std::is_same_v<T, H>) {
    return v;
  } else if constexpr (is_half_v<T>) {
    return H{half_detail::from_double<H>(half_detail::to_double<T>(v.bits))};
  } else if constexpr (std::is_same_v<T, float>) {
    return H{half_detail::from_float<H>(v)};
  } else if constexpr (std::is_same_v<T, double>) {
    return H{half_detail::from_double<H>(v)};
  } else if constexpr (std::is_same_v<T, bool>) {
    return H{half_detail::round_bits<H>(false, v ? 1 : 0, 0)};
  } else {
    static_assert(std::is_integral_v<T>, "to_half: float, double, an integer or bool");
    const bool neg = v < 0;
    const uint64_t mag = neg ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    return H{half_detail::round_bits<H>(neg, mag, 0)};
  }
}

// The exact value of a half element.
template <typename H>
constexpr double half_to_double(H h) {
  static_assert(is_half_v<H>);
  return half_detail::to_double<H>(h.bits);
}
// Exact too: every float16 value is a normal float (or zero, infinity, NaN), and bfloat16 is
// the top half of a float.
template <typename H>
constexpr float half_to_float(H h) {
  static_assert(is_half_v<H>);
  if constexpr (std::is_same_v<H, BFloat16>) {
    return std::bit_cast<float>(static_cast<uint32_t>(h.bits) << 16);
  } else {
    return static_cast<float>(half_detail::to_double<H>(h.bits));
  }
}

}  // namespace nnfuse
