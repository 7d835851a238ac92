// cpu.scatter_elements against the reference kernel: every axis of ranks 1 to 4, negative and
// repeated indices, int32 and int64 indices, elements of 1, 2, 4 and 8 bytes, the row scatter
// of torchvision's RoI pooling, indices narrower than the data (the reference path), no
// updates, an index out of range, and the reductions.
#include <gtest/gtest.h>

#include <random>

#include "kernels/cpu/test_util.h"
#include "kernels/ref/test_util.h"

namespace nnfuse {
namespace cpu_scatter_test {

using testing::expect_matches_ref;
using testing::FastInput;
using testing::run_ref1;

// Indices of `shape` in [-d, d), with repeats.
Tensor random_indices(const Dims& shape, int64_t d, unsigned seed, DType type) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> pick(-d, d - 1);
  Tensor t(DType::kInt64, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = pick(rng);
  if (type == DType::kInt32) return run_ref1("Cast", {t}, {{"to", attr_int(6)}});
  return t;
}

Tensor counting(const Dims& shape, float start, DType type) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i % 97);
  if (type == DType::kFloat32) return t;
  return run_ref1("Cast", {t}, {{"to", attr_int(static_cast<int64_t>(type))}});
}

TEST(CpuScatterElements, MatchesTheReferenceKernelOnEveryAxis) {
  const std::vector<Dims> shapes = {{9}, {5, 7}, {3, 4, 6}, {2, 3, 5, 4}};
  unsigned seed = 1;
  for (const Dims& data_shape : shapes) {
    const int64_t rank = static_cast<int64_t>(data_shape.size());
    for (int64_t axis = -rank; axis < rank; ++axis) {
      const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
      for (DType index_type : {DType::kInt64, DType::kInt32}) {
        // Elements of 4, 8, 1 and 2 bytes: float32, int64, uint8 and int16.
        for (DType elem : {DType::kFloat32, DType::kInt64, DType::kUInt8, DType::kInt16}) {
          Dims ind_shape = data_shape;
          ind_shape[a] = data_shape[a] + 2;  // more updates than the dim: repeats
          SCOPED_TRACE(dims_str(data_shape) + " axis " + std::to_string(axis) + " " +
                       dtype_name(elem) + " indices " + dtype_name(index_type));
          std::vector<FastInput> in = {
              {counting(data_shape, 0.0f, elem)},
              {random_indices(ind_shape, data_shape[a], seed++, index_type)},
              {counting(ind_shape, 100.0f, elem)}};
          expect_matches_ref("cpu.scatter_elements", "ScatterElements", in,
                             {{"axis", attr_int(axis)}}, 1, 0.0f, 0.0f);
        }
      }
    }
  }
}

// torchvision's level merge: rows of [m, C, H, W] scattered into [N, C, H, W] by an index
// [m, 1, 1, 1] expanded over C, H and W; wide enough that the columns split across threads.
TEST(CpuScatterElements, RowScatterOfExpandedIndices) {
  const Dims data_shape = {40, 64, 7, 7};
  const Tensor rows = Tensor::from_vector<int64_t>({5, 1, 1, 1}, {3, 39, 0, 17, 8});
  const Tensor index = run_ref1("Expand", {rows, Tensor::from_vector<int64_t>({4}, {5, 64, 7, 7})});
  std::vector<FastInput> in = {{counting(data_shape, 0.0f, DType::kFloat32)},
                               {index},
                               {counting({5, 64, 7, 7}, -50.0f, DType::kFloat32)}};
  expect_matches_ref("cpu.scatter_elements", "ScatterElements", in, {{"axis", attr_int(0)}}, 1,
                     0.0f, 0.0f);
}

TEST(CpuScatterElements, IndicesNarrowerThanTheDataRunTheReferencePath) {
  std::vector<FastInput> in = {{counting({4, 6}, 0.0f, DType::kFloat32)},
                               {random_indices({3, 2}, 4, 7, DType::kInt64)},
                               {counting({3, 2}, 10.0f, DType::kFloat32)}};
  for (int64_t axis : {0, 1}) {
    expect_matches_ref("cpu.scatter_elements", "ScatterElements", in, {{"axis", attr_int(axis)}}, 1,
                       0.0f, 0.0f);
  }
}

TEST(CpuScatterElements, NoUpdatesCopyTheDataAndABadIndexIsAnError) {
  std::vector<FastInput> none = {{counting({4, 6}, 0.0f, DType::kFloat32)},
                                 {Tensor(DType::kInt64, {0, 6})},
                                 {Tensor(DType::kFloat32, {0, 6})}};
  expect_matches_ref("cpu.scatter_elements", "ScatterElements", none, {{"axis", attr_int(0)}}, 1,
                     0.0f, 0.0f);
  std::vector<FastInput> bad = {{counting({4, 6}, 0.0f, DType::kFloat32)},
                                {Tensor::from_vector<int64_t>({1, 6}, {0, 1, 2, 4, 0, 1})},
                                {counting({1, 6}, 0.0f, DType::kFloat32)}};
  try {
    testing::run_kernel("ScatterElements", bad, {{"axis", attr_int(0)}}, 1, "cpu.scatter_elements");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 4 is out of range"), std::string::npos) << e.what();
  }
}

// Reductions (opset 16 and 18): repeated indices combine in the reference kernel's order, bit
// for bit; the row scatter_add a mixture-of-experts layer sums its experts' rows back with.
TEST(CpuScatterElements, ReductionsMatchTheReferenceKernel) {
  unsigned seed = 40;
  for (const char* reduction : {"add", "mul", "max", "min"}) {
    for (DType elem : {DType::kFloat32, DType::kInt32, DType::kInt64}) {
      for (int64_t axis : {0, 1, -1}) {
        SCOPED_TRACE(std::string(reduction) + " " + dtype_name(elem) + " axis " +
                     std::to_string(axis));
        Dims ind_shape = {5, 6};
        ind_shape[axis == 0 ? 0 : 1] += 3;
        std::vector<FastInput> in = {
            {counting({5, 6}, 1.0f, elem)},
            {random_indices(ind_shape, axis == 0 ? 5 : 6, seed++, DType::kInt64)},
            {counting(ind_shape, -3.0f, elem)}};
        expect_matches_ref("cpu.scatter_elements", "ScatterElements", in,
                           {{"axis", attr_int(axis)}, {"reduction", attr_string(reduction)}}, 1,
                           0.0f, 0.0f, 18);
      }
    }
  }
  const Tensor rows = Tensor::from_vector<int64_t>({6, 1}, {3, 0, 3, 127, 64, 0});
  const Tensor index = run_ref1("Expand", {rows, Tensor::from_vector<int64_t>({2}, {6, 256})});
  std::vector<FastInput> moe = {{counting({128, 256}, 0.0f, DType::kFloat32)},
                                {index},
                                {counting({6, 256}, 0.5f, DType::kFloat32)}};
  expect_matches_ref("cpu.scatter_elements", "ScatterElements", moe,
                     {{"axis", attr_int(0)}, {"reduction", attr_string("add")}}, 1, 0.0f, 0.0f, 18);
}

TEST(CpuScatterElements, DeclinesReductionsOverOtherTypes) {
  std::vector<FastInput> in = {{counting({4, 6}, 0.0f, DType::kUInt8)},
                               {random_indices({4, 6}, 4, 3, DType::kInt64)},
                               {counting({4, 6}, 10.0f, DType::kUInt8)}};
  EXPECT_EQ(
      testing::run_kernel("ScatterElements", in, {{"reduction", attr_string("add")}}, 1, "", 18)
          .kernel,
      "ref");
}

}  // namespace cpu_scatter_test
}  // namespace nnfuse
