// cpu.matmul_integer, cpu.matmul_integer_to_float, cpu.qlinear_matmul and
// cpu.dynamic_quantize_linear against the reference kernels, exactly (int32 sums, float32 steps
// in the graph's order, the requantization in double): int8 and uint8 operands, zero points absent,
// one, per column and per row, K odd and even, N off the 16-column panels, batch dims and a vector
// A, the AVX2 and the scalar GEMM; sums at the int16 pair limits that an 8-bit multiply-add
// (vpmaddubsw) would saturate.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/cpu/cpu_test_support.h"
#include "kernels/cpu/int8_gemm.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_quant_matmul_test {

using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::FastInput;
using testing::random_q8;
using testing::random_tensor;

// Runs f with the AVX2 GEMM (where the CPU has it) and with the scalar one.
template <typename F>
void each_isa(F&& f) {
  for (bool scalar : {false, true}) {
    cpu::int8::force_scalar_gemm(scalar);
    SCOPED_TRACE(scalar ? "scalar GEMM" : cpu::int8::gemm_isa());
    f();
  }
  cpu::int8::force_scalar_gemm(false);
}

struct Case {
  Dims a;
  int64_t n;
};
const Case kCases[] = {{{7, 33}, 21}, {{2, 3, 16}, 64}, {{50, 129}, 70}, {{96}, 17}, {{1, 8}, 1}};

TEST(CpuQuantMatMul, MatMulIntegerMatchesTheReference) {
  uint32_t seed = 1;
  each_isa([&] {
    for (const Case& c : kCases) {
      const int64_t k = c.a.back();
      for (DType ta : {DType::kUInt8, DType::kInt8}) {
        for (DType tb : {DType::kInt8, DType::kUInt8}) {
          for (int zp = 0; zp < 4; ++zp) {  // none, one each, B per column, A per row
            if (zp == 3 && c.a.size() != 2) continue;
            SCOPED_TRACE(dims_str(c.a) + " x " + std::to_string(c.n) + " " + dtype_name(ta) + "/" +
                         dtype_name(tb) + " zero points " + std::to_string(zp));
            std::vector<FastInput> in = {{random_q8(c.a, ta, seed++)},
                                         {random_q8({k, c.n}, tb, seed++), true}};
            if (zp > 0) {
              in.push_back({random_q8(zp == 3 ? Dims{c.a[0]} : Dims{}, ta, seed++)});
              in.push_back({random_q8(zp >= 2 ? Dims{c.n} : Dims{}, tb, seed++), true});
            }
            expect_matches_ref("cpu.matmul_integer", "MatMulInteger", in, {}, 1, 0.0f, 0.0f);
          }
        }
      }
    }
  });
}

// 255 * 127 + 255 * 127 per pair of terms: beyond int16, where vpmaddubsw saturates.
TEST(CpuQuantMatMul, ExtremeSumsAreExact) {
  each_isa([&] {
    for (int sign : {1, -1}) {
      Tensor a(DType::kUInt8, {6, 300});
      Tensor b(DType::kInt8, {300, 40});
      for (int64_t i = 0; i < a.numel(); ++i) a.data<uint8_t>()[i] = 255;
      for (int64_t i = 0; i < b.numel(); ++i) {
        b.data<int8_t>()[i] = static_cast<int8_t>(sign > 0 ? 127 : -128);
      }
      expect_matches_ref("cpu.matmul_integer", "MatMulInteger", {{a}, {b, true}}, {}, 1, 0.0f,
                         0.0f);
      const FastInput zero_a{Tensor::scalar<uint8_t>(0)};
      const FastInput zero_b{Tensor::scalar<int8_t>(static_cast<int8_t>(sign > 0 ? -128 : 127)),
                             true};
      expect_matches_ref("cpu.matmul_integer", "MatMulInteger", {{a}, {b, true}, zero_a, zero_b},
                         {}, 1, 0.0f, 0.0f);
    }
  });
}

TEST(CpuQuantMatMul, MatMulIntegerToFloatMatchesTheReference) {
  uint32_t seed = 100;
  each_isa([&] {
    for (const Case& c : kCases) {
      const int64_t k = c.a.back();
      for (DType tb : {DType::kInt8, DType::kUInt8}) {
        for (bool per_column : {false, true}) {
          for (bool bias : {false, true}) {
            SCOPED_TRACE(dims_str(c.a) + " x " + std::to_string(c.n) + " " + dtype_name(tb) +
                         (per_column ? " per column" : "") + (bias ? " bias" : ""));
            const Dims col = per_column ? Dims{c.n} : Dims{};
            std::vector<FastInput> in = {{random_q8(c.a, DType::kUInt8, seed++)},
                                         {random_q8({k, c.n}, tb, seed++), true},
                                         {Tensor::scalar<float>(0.0173f)},
                                         {random_tensor(col, seed++, 0.001f, 0.02f), true},
                                         {random_q8({}, DType::kUInt8, seed++)},
                                         {random_q8(col, tb, seed++), true}};
            if (bias) in.push_back({random_tensor({c.n}, seed++, -1.0f, 1.0f), true});
            expect_matches_ref("cpu.matmul_integer_to_float", "MatMulIntegerToFloat", in, {}, 1,
                               0.0f, 0.0f);
          }
        }
      }
    }
  });
}

// One column with its bias a scalar: accepted and run as the reference runs it.
TEST(CpuQuantMatMul, OneColumnWithAScalarBias) {
  std::vector<FastInput> in = {
      {random_q8({5, 8}, DType::kUInt8, 1)}, {random_q8({8, 1}, DType::kInt8, 2), true},
      {Tensor::scalar<float>(0.0173f)},      {Tensor::scalar<float>(0.004f), true},
      {random_q8({}, DType::kUInt8, 3)},     {Tensor::scalar<int8_t>(0), true},
      {Tensor::scalar<float>(0.25f), true}};
  EXPECT_TRUE(fast_accepts("cpu.matmul_integer_to_float", "MatMulIntegerToFloat", in));
  expect_matches_ref("cpu.matmul_integer_to_float", "MatMulIntegerToFloat", in, {}, 1, 0.0f, 0.0f);
}

// QLinearMatMul: the requantization is the reference's (double, half to even, saturated).
TEST(CpuQuantMatMul, QLinearMatMulMatchesTheReference) {
  uint32_t seed = 400;
  each_isa([&] {
    for (const Case& c : kCases) {
      const int64_t k = c.a.back();
      for (DType ta : {DType::kUInt8, DType::kInt8}) {
        for (DType tb : {DType::kInt8, DType::kUInt8}) {
          for (bool per_column : {false, true}) {
            SCOPED_TRACE(dims_str(c.a) + " x " + std::to_string(c.n) + " " + dtype_name(ta) + "/" +
                         dtype_name(tb) + (per_column ? " per column" : ""));
            const Dims col = per_column ? Dims{c.n} : Dims{};
            // Y's scale small enough that some outputs saturate.
            expect_matches_ref("cpu.qlinear_matmul", "QLinearMatMul",
                               {{random_q8(c.a, ta, seed++)},
                                {random_tensor({}, seed++, 0.01f, 0.05f)},
                                {random_q8({}, ta, seed++)},
                                {random_q8({k, c.n}, tb, seed++), true},
                                {random_tensor(col, seed++, 0.002f, 0.02f), true},
                                {random_q8(col, tb, seed++), true},
                                {random_tensor({}, seed++, 0.05f, 0.5f)},
                                {random_q8({}, ta, seed++)}},
                               {}, 1, 0.0f, 0.0f, 10);
          }
        }
      }
    }
  });
}

// The epilogue activations, within the vector functions' bounds (cpu_math.h).
TEST(CpuQuantMatMul, ActivationsMatchTheReference) {
  uint32_t seed = 300;
  for (const char* act : {"Relu", "Gelu", "GeluTanh", "Sigmoid"}) {
    SCOPED_TRACE(act);
    std::vector<FastInput> in = {{random_q8({9, 40}, DType::kUInt8, seed++)},
                                 {random_q8({40, 33}, DType::kInt8, seed++), true},
                                 {Tensor::scalar<float>(0.02f)},
                                 {random_tensor({33}, seed++, 0.001f, 0.01f), true},
                                 {random_q8({}, DType::kUInt8, seed++)},
                                 {Tensor()},
                                 {random_tensor({33}, seed++, -1.0f, 1.0f), true}};
    expect_matches_ref("cpu.matmul_integer_to_float", "MatMulIntegerToFloat", in,
                       {{"activation", attr_string(act)}}, 1, 2e-6f, 2e-6f);
  }
}

TEST(CpuQuantMatMul, DeclinesWhatItCannotPack) {
  const Tensor a = random_q8({4, 8}, DType::kUInt8, 1);
  const Tensor b = random_q8({8, 5}, DType::kInt8, 2);
  EXPECT_TRUE(fast_accepts("cpu.matmul_integer", "MatMulInteger", {{a}, {b, true}}));
  // A B computed at run time, a B of rank 3, B's zero point computed at run time.
  EXPECT_FALSE(fast_accepts("cpu.matmul_integer", "MatMulInteger", {{a}, {b}}));
  EXPECT_FALSE(fast_accepts("cpu.matmul_integer", "MatMulInteger",
                            {{a}, {random_q8({1, 8, 5}, DType::kInt8, 3), true}}));
  EXPECT_FALSE(fast_accepts(
      "cpu.matmul_integer", "MatMulInteger",
      {{a}, {b, true}, {Tensor::scalar<uint8_t>(3)}, {random_q8({5}, DType::kInt8, 4)}}));
}

// x with NaNs, infinities, ties and one sign only; all zeros; all NaN.
TEST(CpuQuantMatMul, DynamicQuantizeMatchesTheReference) {
  uint32_t seed = 200;
  for (const Dims& shape : {Dims{3, 7}, Dims{2, 40000}, Dims{0}}) {
    for (int kind = 0; kind < 5; ++kind) {
      SCOPED_TRACE(dims_str(shape) + " kind " + std::to_string(kind));
      Tensor x = random_tensor(shape, seed++, kind == 1 ? 0.5f : -3.0f, kind == 2 ? -0.5f : 5.0f);
      float* p = x.data<float>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (kind == 3) p[i] = 0.0f;
        if (kind == 4) p[i] = std::numeric_limits<float>::quiet_NaN();
      }
      if (kind == 0 && x.numel() > 8) {
        p[1] = std::numeric_limits<float>::quiet_NaN();
        p[3] = 2.5f;
        p[5] = -0.0f;
      }
      expect_matches_ref("cpu.dynamic_quantize_linear", "DynamicQuantizeLinear", {{x}}, {}, 3, 0.0f,
                         0.0f);
    }
  }
}

}  // namespace cpu_quant_matmul_test
}  // namespace nnfuse
