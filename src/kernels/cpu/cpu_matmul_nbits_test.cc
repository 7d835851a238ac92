// cpu.matmul_nbits against the reference kernel: 2, 4 and 8 bits; zero points absent, packed
// uint8 and float; K a multiple of the block and not; a bias; few rows (the per-column dot
// products) and many (dequantized panels and sgemm), N across panels.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_test_support.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_matmul_nbits_test {

using testing::expect_matches_ref_scaled;
using testing::FastInput;
using testing::random_q8;
using testing::random_tensor;

struct Case {
  Dims a;  // [..., K]
  int64_t n, bits, block;
};

TEST(CpuMatMulNBits, MatchesTheReference) {
  for (bool portable : {false, true}) {
    SCOPED_TRACE(portable ? "portable loops" : "the CPU's best");
    cpu::force_portable_nbits = portable;
    const Case cases[] = {{{1, 64}, 40, 4, 32},     {{3, 100}, 17, 4, 32}, {{2, 5, 96}, 300, 4, 16},
                          {{1, 1, 130}, 24, 8, 64}, {{4, 80}, 9, 2, 16},   {{40, 64}, 140, 4, 32}};
    uint32_t seed = 1;
    for (const Case& c : cases) {
      const int64_t k = c.a.back(), blocks = (k + c.block - 1) / c.block;
      const int64_t blob = c.block * c.bits / 8, zero_row = (blocks * c.bits + 7) / 8;
      for (int zeros = 0; zeros < 3; ++zeros) {  // none, packed uint8, float
        for (bool bias : {false, true}) {
          SCOPED_TRACE(dims_str(c.a) + " N " + std::to_string(c.n) + " bits " +
                       std::to_string(c.bits) + " zeros " + std::to_string(zeros) +
                       (bias ? " bias" : ""));
          std::vector<FastInput> in = {
              {random_tensor(c.a, seed++)},
              {random_q8({c.n, blocks, blob}, DType::kUInt8, seed++), true},
              {random_tensor({c.n, blocks}, seed++, 0.01f, 0.1f), true}};
          if (zeros == 1) in.push_back({random_q8({c.n, zero_row}, DType::kUInt8, seed++), true});
          if (zeros == 2) in.push_back({random_tensor({c.n * blocks}, seed++, 0.0f, 8.0f), true});
          if (bias) {
            while (in.size() < 5) in.push_back({Tensor()});
            in.push_back({random_tensor({c.n}, seed++), true});
          }
          const std::map<std::string, Attribute> attrs = {{"K", attr_int(k)},
                                                          {"N", attr_int(c.n)},
                                                          {"bits", attr_int(c.bits)},
                                                          {"block_size", attr_int(c.block)}};
          expect_matches_ref_scaled("cpu.matmul_nbits", "MatMulNBits", in, attrs, 1e-5);
        }
      }
    }
  }
  cpu::force_portable_nbits = false;
}

TEST(CpuMatMulNBits, DeclinesWhatItCannotRun) {
  const std::map<std::string, Attribute> attrs = {
      {"K", attr_int(64)}, {"N", attr_int(8)}, {"bits", attr_int(4)}, {"block_size", attr_int(24)}};
  const std::vector<FastInput> in = {{random_tensor({1, 64}, 1)},
                                     {random_q8({8, 3, 12}, DType::kUInt8, 2), true},
                                     {random_tensor({8, 3}, 3), true}};
  EXPECT_FALSE(testing::fast_accepts("cpu.matmul_nbits", "MatMulNBits", in, attrs));
}

}  // namespace cpu_matmul_nbits_test
}  // namespace nnfuse
