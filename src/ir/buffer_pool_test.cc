#include "ir/buffer_pool.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "ir/tensor.h"

namespace nnfuse {
namespace buffer_pool_test {

// Runs with the pool on (it is off under the address sanitizer) and empty, and restores it.
class BufferPool : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = buffer_pool_stats().limit_bytes;
    trim_buffer_pool();
    set_buffer_pool_limit(size_t{64} << 20);
  }
  void TearDown() override {
    trim_buffer_pool();
    set_buffer_pool_limit(saved_);
  }
  size_t saved_ = 0;
};

constexpr int64_t kLarge = 1 << 18;  // floats: 1 MiB

TEST_F(BufferPool, AFreedLargeBufferServesTheNextRequestOfItsSize) {
  const void* first = nullptr;
  {
    Tensor t = Tensor::uninitialized(DType::kFloat32, {kLarge});
    first = t.raw();
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 7.0f;
  }
  EXPECT_EQ(buffer_pool_stats().cached_blocks, 1u);
  EXPECT_EQ(buffer_pool_stats().cached_bytes, size_t{kLarge} * 4);
  // A zeroed tensor from a dirty buffer is zero; a request a little smaller takes it too.
  Tensor z(DType::kFloat32, {kLarge - 1000});
  EXPECT_EQ(z.raw(), first);
  for (int64_t i = 0; i < z.numel(); ++i) ASSERT_EQ(z.data<float>()[i], 0.0f) << i;
  EXPECT_EQ(buffer_pool_stats().cached_blocks, 0u);
  EXPECT_GE(buffer_pool_stats().reused, 1u);
}

TEST_F(BufferPool, BuffersMuchLargerOrSmallerThanTheRequestAreNotTaken) {
  { Tensor big = Tensor::uninitialized(DType::kFloat32, {4 * kLarge}); }
  const size_t allocated = buffer_pool_stats().allocated;
  Tensor t = Tensor::uninitialized(DType::kFloat32, {kLarge});
  EXPECT_EQ(buffer_pool_stats().allocated, allocated + 1);
  EXPECT_EQ(buffer_pool_stats().cached_blocks, 1u);
  Tensor u = Tensor::uninitialized(DType::kFloat32, {8 * kLarge});
  EXPECT_EQ(buffer_pool_stats().cached_blocks, 1u);
}

TEST_F(BufferPool, BuffersLetGoOfUnderABypassAreFreedNotKept) {
  Tensor outside = Tensor::uninitialized(DType::kFloat32, {kLarge});
  {
    const ScopedPoolBypass bypass;
    { Tensor t = Tensor::uninitialized(DType::kFloat32, {kLarge}); }
    EXPECT_EQ(buffer_pool_stats().cached_blocks, 0u);
    { const ScopedPoolBypass nested; }
    // The nested scope's end leaves the outer one in force.
    { Tensor t = Tensor::uninitialized(DType::kFloat32, {kLarge}); }
    EXPECT_EQ(buffer_pool_stats().cached_blocks, 0u);
    // Another thread is not bypassed.
    std::thread([] { Tensor t = Tensor::uninitialized(DType::kFloat32, {kLarge}); }).join();
    EXPECT_EQ(buffer_pool_stats().cached_blocks, 1u);
  }
  outside = Tensor();  // after the scope: kept again
  EXPECT_EQ(buffer_pool_stats().cached_blocks, 2u);
}

TEST_F(BufferPool, SmallTensorsBypassThePool) {
  const size_t allocated = buffer_pool_stats().allocated;  // counts since the process began
  { Tensor t(DType::kFloat32, {1000}); }
  EXPECT_EQ(buffer_pool_stats().cached_blocks, 0u);
  EXPECT_EQ(buffer_pool_stats().allocated, allocated);
}

TEST_F(BufferPool, TheLimitBoundsWhatIsKeptAndZeroTurnsThePoolOff) {
  set_buffer_pool_limit(size_t{3} << 20);
  {
    std::vector<Tensor> ts;
    for (int i = 0; i < 5; ++i) ts.push_back(Tensor::uninitialized(DType::kFloat32, {kLarge}));
  }
  EXPECT_EQ(buffer_pool_stats().cached_blocks, 3u);
  set_buffer_pool_limit(size_t{1} << 20);
  EXPECT_EQ(buffer_pool_stats().cached_blocks, 1u);
  set_buffer_pool_limit(0);
  EXPECT_EQ(buffer_pool_stats().cached_bytes, 0u);
  { Tensor t = Tensor::uninitialized(DType::kFloat32, {kLarge}); }
  EXPECT_EQ(buffer_pool_stats().cached_blocks, 0u);
}

TEST_F(BufferPool, ThreadsShareThePool) {
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([k] {
      for (int i = 0; i < 50; ++i) {
        Tensor t(DType::kFloat32, {kLarge + 4096 * ((i + k) % 3)});
        t.data<float>()[t.numel() - 1] = static_cast<float>(i);
        EXPECT_EQ(t.data<float>()[0], 0.0f);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const BufferPoolStats s = buffer_pool_stats();
  EXPECT_GE(s.reused, 100u);
  EXPECT_LE(s.cached_bytes, s.limit_bytes);
}

}  // namespace buffer_pool_test
}  // namespace nnfuse
