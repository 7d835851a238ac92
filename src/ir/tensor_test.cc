#include "ir/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>

namespace nnfuse {
namespace tensor_test {

TEST(Tensor, AllocatesZeroedStorage) {
  Tensor t(DType::kFloat32, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
}

// Buffers of a huge page or more start on a huge page (and are offered to the kernel as huge
// pages), and are writable to their end; smaller ones keep the alignment asked for.
TEST(Tensor, LargeBuffersStartOnHugePages) {
  const size_t bytes = kHugePageBytes + 12345;
  std::shared_ptr<std::byte[]> b = aligned_bytes(bytes, 64);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % kHugePageBytes, 0u);
  b[bytes - 1] = std::byte{7};
  EXPECT_EQ(b[bytes - 1], std::byte{7});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned_bytes(4096, 64).get()) % 64, 0u);
}

TEST(Tensor, ScalarHasRankZero) {
  Tensor t = Tensor::scalar<int64_t>(7);
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(t.int_at(0), 7);
}

TEST(Tensor, ReshapedSharesStorage) {
  Tensor t = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor v = t.reshaped({4});
  v.data<float>()[0] = 9;
  EXPECT_EQ(t.data<float>()[0], 9);
  EXPECT_THROW(t.reshaped({3}), Error);
}

TEST(Tensor, CloneIsDeep) {
  Tensor t = Tensor::from_vector<float>({2}, {1, 2});
  Tensor c = t.clone();
  c.data<float>()[0] = 5;
  EXPECT_EQ(t.data<float>()[0], 1);
}

TEST(Tensor, WrongTypedAccessThrows) {
  Tensor t(DType::kInt64, {1});
  EXPECT_THROW(t.data<float>(), Error);
}

TEST(Tensor, OverflowingShapeIsAnError) {
  int64_t big = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_THROW(checked_numel(std::vector<int64_t>{big, 4}), Error);
  EXPECT_THROW(checked_numel(std::vector<int64_t>{big / 2, 1}, 8), Error);
  EXPECT_THROW(checked_numel(std::vector<int64_t>{-1}), Error);
  EXPECT_THROW(Tensor(DType::kFloat32, {int64_t{1} << 40, 1 << 10}), Error);
}

TEST(Tensor, Strides) {
  EXPECT_EQ(contiguous_strides(std::vector<int64_t>{2, 3, 4}), (Dims{12, 4, 1}));
  EXPECT_EQ(dims_str(std::vector<int64_t>{2, 3}), "[2, 3]");
}

}  // namespace tensor_test
}  // namespace nnfuse
