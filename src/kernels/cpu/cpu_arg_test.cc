#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_arg_test {

using testing::FastInput;

// Values from a small set, so rows hold ties; every 13th a NaN where `nans`.
Tensor tied(DType t, const Dims& shape, uint32_t seed, bool nans) {
  Tensor x(t, shape);
  uint32_t s = seed * 2654435761u + 17u;
  for (int64_t i = 0; i < x.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    const int v = static_cast<int>((s >> 16) % 5) - 2;
    if (t == DType::kFloat32) {
      x.data<float>()[i] = nans && (s >> 8) % 13 == 0 ? std::numeric_limits<float>::quiet_NaN()
                                                      : static_cast<float>(v) * 0.5f;
    } else if (t == DType::kInt32) {
      x.data<int32_t>()[i] = v;
    } else {
      x.data<int64_t>()[i] = v * 1000000000000LL;
    }
  }
  return x;
}

// The fast kernel's indices equal the reference kernel's.
void expect_same(const std::string& op, const FastInput& in,
                 const std::map<std::string, Attribute>& attrs) {
  const testing::FastRun fast = testing::run_kernel(op, {in}, attrs, 1, "cpu.arg");
  const Tensor want = testing::run_ref1(op, {in.value}, attrs);
  const Tensor& got = fast.outputs[0];
  ASSERT_EQ(got.dtype(), DType::kInt64);
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) {
    ASSERT_EQ(got.data<int64_t>()[i], want.data<int64_t>()[i]) << "at " << i;
  }
}

TEST(CpuArg, MatchesTheReferenceOverAxesTiesAndNaNs) {
  const std::vector<Dims> shapes = {{7}, {3, 5}, {2, 3, 4}, {2, 1, 3, 5}, {4, 700}, {2, 5, 1300}};
  uint32_t seed = 1;
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (DType t : {DType::kFloat32, DType::kInt32, DType::kInt64}) {
      for (const Dims& shape : shapes) {
        const int64_t rank = static_cast<int64_t>(shape.size());
        for (int64_t axis = -rank; axis < rank; ++axis) {
          for (int64_t keep : {0, 1}) {
            for (int64_t last : {0, 1}) {
              SCOPED_TRACE(std::string(op) + " " + dtype_name(t) + " " + dims_str(shape) +
                           " axis " + std::to_string(axis) + " keepdims " + std::to_string(keep) +
                           " last " + std::to_string(last));
              const Tensor x = tied(t, shape, seed++, t == DType::kFloat32);
              expect_same(op, {x},
                          {{"axis", attr_int(axis)},
                           {"keepdims", attr_int(keep)},
                           {"select_last_index", attr_int(last)}});
            }
          }
        }
      }
    }
  }
}

TEST(CpuArg, DefaultsAndANaNAtTheFirstIndex) {
  // axis 0, keepdims 1, select_last_index 0 when absent; a NaN at index 0 is never beaten.
  Tensor x(DType::kFloat32, {3, 2});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float v[] = {nan, 1.0f, 5.0f, 1.0f, 2.0f, nan};
  std::copy(v, v + 6, x.data<float>());
  expect_same("ArgMax", {x}, {});
  expect_same("ArgMin", {x}, {{"select_last_index", attr_int(1)}});
  const Tensor got = testing::run_kernel("ArgMax", {{x}}, {}, 1, "cpu.arg").outputs[0];
  EXPECT_EQ(got.shape(), (Dims{1, 2}));
  EXPECT_EQ(got.data<int64_t>()[0], 0);  // the NaN at index 0
  EXPECT_EQ(got.data<int64_t>()[1], 0);  // ties at 1.0: the first; the NaN at 2 loses
}

TEST(CpuArg, ChannelsLastInputs) {
  // A segmentation head's class map: the channel axis of a conv output, read where it lies;
  // another axis of a channels-last input through a plain copy.
  uint32_t seed = 50;
  for (const Dims& shape : {Dims{2, 21, 9, 11}, Dims{1, 3, 4, 5, 6}, Dims{2, 6, 10}}) {
    for (int64_t axis : {1, 2}) {
      for (int64_t keep : {0, 1}) {
        SCOPED_TRACE(dims_str(shape) + " axis " + std::to_string(axis));
        const Tensor x = tied(DType::kFloat32, shape, seed++, true);
        expect_same("ArgMax", {x, false, Layout::kNHWC},
                    {{"axis", attr_int(axis)}, {"keepdims", attr_int(keep)}});
      }
    }
  }
}

TEST(CpuArg, LargeRowsAndColumnsAcrossThreads) {
  for (const Dims& shape : {Dims{3000, 37}, Dims{3, 64, 4000}}) {
    const Tensor x = testing::random_tensor(shape, 9, -1.0f, 1.0f);
    expect_same("ArgMax", {x}, {{"axis", attr_int(1)}});
    expect_same("ArgMin", {x}, {{"axis", attr_int(-1)}});
  }
}

TEST(CpuArg, DeclinesWithReasons) {
  const KernelFactory* f = testing::find_factory("ArgMax", "cpu.arg");
  ASSERT_NE(f, nullptr);
  Tensor h(DType::kFloat16, {2, 3});
  EXPECT_FALSE(testing::fast_accepts("cpu.arg", "ArgMax", {{h}}));
  testing::OneNode one("ArgMax", {{h}}, {}, 1);
  EXPECT_NE(f->declines(one.info(17)).find("float16"), std::string::npos);
  EXPECT_TRUE(testing::fast_accepts("cpu.arg", "ArgMin", {{Tensor(DType::kInt64, {4})}}));
}

}  // namespace cpu_arg_test
}  // namespace nnfuse
