// cpu.conv_integer and cpu.qlinear_conv against the reference kernels, exactly: int8 and uint8
// input and weights, strides, dilations, explicit and SAME padding, groups (depthwise
// included), w's zero point and scale per tensor and per output channel, the int32 bias, the
// AVX2 and the scalar GEMM.
#include <gtest/gtest.h>

#include "kernels/cpu/cpu_test_support.h"
#include "kernels/cpu/int8_gemm.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_quant_conv_test {

using testing::expect_matches_ref;
using testing::fast_accepts;
using testing::FastInput;
using testing::random_q8;
using testing::random_tensor;

struct Geometry {
  int64_t c, m, h, w, k, group;
  std::map<std::string, Attribute> attrs;
};

std::vector<Geometry> geometries() {
  return {
      {3, 8, 9, 11, 3, 1, {{"pads", attr_ints({1, 1, 1, 1})}}},
      {8, 6, 10, 10, 3, 2, {{"strides", attr_ints({2, 2})}, {"pads", attr_ints({0, 1, 2, 1})}}},
      {4, 4, 9, 9, 3, 4, {{"dilations", attr_ints({2, 2})}, {"pads", attr_ints({2, 2, 2, 2})}}},
      {5, 7, 7, 6, 1, 1, {}},
      {6,
       18,
       8,
       8,
       3,
       1,
       {{"auto_pad", attr_string("SAME_UPPER")}, {"strides", attr_ints({2, 2})}}},
  };
}

TEST(CpuQuantConv, MatchesTheReference) {
  uint32_t seed = 1;
  for (bool scalar : {false, true}) {
    cpu::int8::force_scalar_gemm(scalar);
    for (const Geometry& g : geometries()) {
      for (DType tx : {DType::kUInt8, DType::kInt8}) {
        for (DType tw : {DType::kInt8, DType::kUInt8}) {
          for (bool per_channel : {false, true}) {
            SCOPED_TRACE("c " + std::to_string(g.c) + " m " + std::to_string(g.m) + " group " +
                         std::to_string(g.group) + " " + dtype_name(tx) + "/" + dtype_name(tw) +
                         (per_channel ? " per channel" : "") + (scalar ? " scalar" : ""));
            const Tensor x = random_q8({2, g.c, g.h, g.w}, tx, seed++);
            const Tensor w = random_q8({g.m, g.c / g.group, g.k, g.k}, tw, seed++);
            const Dims ch = per_channel ? Dims{g.m} : Dims{};
            std::map<std::string, Attribute> attrs = g.attrs;
            attrs["group"] = attr_int(g.group);
            expect_matches_ref(
                "cpu.conv_integer", "ConvInteger",
                {{x}, {w, true}, {random_q8({}, tx, seed++)}, {random_q8(ch, tw, seed++), true}},
                attrs, 1, 0.0f, 0.0f, 10);
            Tensor bias =
                testing::run_ref1("Cast", {random_tensor({g.m}, seed++, -3000.0f, 3000.0f)},
                                  {{"to", attr_int(static_cast<int64_t>(DType::kInt32))}});
            expect_matches_ref("cpu.qlinear_conv", "QLinearConv",
                               {{x},
                                {random_tensor({}, seed++, 0.01f, 0.05f)},
                                {random_q8({}, tx, seed++)},
                                {w, true},
                                {random_tensor(ch, seed++, 0.002f, 0.02f), true},
                                {random_q8(ch, tw, seed++), true},
                                {random_tensor({}, seed++, 0.2f, 2.0f)},
                                {random_q8({}, tx, seed++)},
                                {bias, true}},
                               attrs, 1, 0.0f, 0.0f, 10);
          }
        }
      }
    }
  }
  cpu::int8::force_scalar_gemm(false);
}

TEST(CpuQuantConv, DeclinesWhatItDoesNotRun) {
  const Tensor x = random_q8({1, 4, 6, 6}, DType::kUInt8, 1);
  const Tensor w = random_q8({2, 4, 3, 3}, DType::kInt8, 2);
  EXPECT_TRUE(fast_accepts("cpu.conv_integer", "ConvInteger", {{x}, {w, true}}, {}, 10));
  EXPECT_FALSE(fast_accepts("cpu.conv_integer", "ConvInteger", {{x}, {w}}, {}, 10));
  EXPECT_FALSE(fast_accepts(
      "cpu.conv_integer", "ConvInteger",
      {{random_q8({1, 4, 6}, DType::kUInt8, 3)}, {random_q8({2, 4, 3}, DType::kInt8, 4), true}}, {},
      10));
}

}  // namespace cpu_quant_conv_test
}  // namespace nnfuse
