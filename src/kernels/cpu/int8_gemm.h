// The exact integer GEMM under the quantized dense kernels (cpu_quant_matmul.cc):
//   C[m, n] = sum over k of (A[m, k] - a_zero[m]) * (B[k, n] - b_zero[n])      (in int32)
// for 8-bit A and B (int8 or uint8), B a constant packed once.
//
// The operands are widened to int16 (A less its zero point, |v| <= 255; B as it is stored) and
// the products summed with the 16-bit multiply-add (AVX2's vpmaddwd: two products per int32
// lane, exact), never with the 8-bit one (vpmaddubsw), which saturates its pair sums to int16
// on CPUs without VNNI (255 * 127 * 2 > 32767). B's zero points come off afterwards, exactly:
// sum (a - za)(b - zb) = sum (a - za) b - zb * sum (a - za), the row sums taken as A is packed.
// The result is the integer arithmetic the model states, on every CPU; the sum wraps as int32
// accumulation does (only past 33,000 terms of 255 * 255).
//
// B stays 8-bit (its weights take a byte each), packed in panels of 16 columns: per panel, for
// each pair of rows (k, k + 1), the 16 columns' two values side by side, so 16 bytes widen to
// 8 columns' pairs; K is padded to even with zeros. A is widened to int16 as it is packed.
#pragma once

#include <cstdint>
#include <vector>

namespace nnfuse::cpu::int8 {

inline constexpr int64_t kPanel = 16;  // columns per packed panel of B

struct PackedB {
  int64_t k = 0, n = 0;
  int64_t pairs = 0;          // (k + 1) / 2
  bool is_unsigned = false;   // uint8 values (else int8)
  std::vector<uint8_t> data;  // [panels][pairs][kPanel][2], the values' bytes
  std::vector<int32_t> zero;  // per column, padded to whole panels; empty when all are 0

  int64_t panels() const { return (n + kPanel - 1) / kPanel; }
  const uint8_t* panel(int64_t p) const { return data.data() + p * pairs * kPanel * 2; }
};

// Packs the K x N matrix b (row-major, `ldb` elements between rows) with its zero points (one
// per column, or b_zero.size() == 1 for all), T int8_t or uint8_t.
template <typename T>
PackedB pack_b(const T* b, int64_t k, int64_t n, int64_t ldb, const std::vector<int32_t>& b_zero);

// Widens rows [0, m) of a (row-major, `lda` elements between rows) to int16 less their zero
// points (one per row, or a_zero.size() == 1 for all; row0 is the first row's index there) into
// `out`, `pairs * 2` values a row (the odd column zero), and each row's sum into `sums`.
template <typename T>
void pack_a(const T* a, int64_t m, int64_t k, int64_t lda, const std::vector<int32_t>& a_zero,
            int64_t row0, int16_t* out, int32_t* sums);

// C rows [0, m), columns [n0, n1) (n0 a multiple of kPanel): the products of the packed rows
// `a` (from pack_a: pairs * 2 values a row, and their sums) with b, into c (row 0, column n0;
// ldc its pitch).
void gemm(const int16_t* a, const int32_t* sums, int64_t m, const PackedB& b, int64_t n0,
          int64_t n1, int32_t* c, int64_t ldc);

// The instruction set gemm runs on: "avx2" (on every CPU that has it) or "scalar".
const char* gemm_isa();
// For tests: run the scalar loop even where the CPU has AVX2.
void force_scalar_gemm(bool on);

}  // namespace nnfuse::cpu::int8
