// One Session from sixteen threads on a model with a symbolic batch: every batch size is
// compiled, its generated kernel built into the one cache directory and its plan made while
// other threads run, and with a plan cache smaller than the number of sizes, plans are evicted
// and made again under contention. Each output must be the one computed directly. The
// ThreadSanitizer build runs this (scripts/test.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "nnfuse/nnfuse.h"
#include "onnx/test_models.h"

namespace nnfuse {
namespace concurrency_test {

TEST(Concurrency, SixteenThreadsMixedShapesOnOneSession) {
  const Model model = compile_bytes(testing::small_model().SerializeAsString());
  SessionOptions so;
  so.plan_cache = 2;
  so.threads = 1;
  so.warn_fallbacks = false;
  const Session session(model, so);
  const std::vector<int64_t> batches = {1, 2, 3, 5, 8};
  const float w[3] = {1.0f, -2.0f, 3.0f};  // small_model's y = Relu(x + w)
  constexpr int kThreads = 16, kRuns = 10;
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::string> first_error(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        const int64_t b = batches[static_cast<size_t>(t * 3 + r) % batches.size()];
        Tensor x(DType::kFloat32, {b, 3});
        for (int64_t i = 0; i < x.numel(); ++i) {
          x.data<float>()[i] = static_cast<float>((i * 7 + t * 13 + r) % 11) - 5.0f;
        }
        try {
          const Tensor y = session.run({{"x", x}}).at("y");
          if (y.shape() != Dims{b, 3}) {
            ++wrong;
            continue;
          }
          for (int64_t i = 0; i < y.numel(); ++i) {
            const float want = std::max(0.0f, x.data<float>()[i] + w[i % 3]);
            if (y.data<float>()[i] != want) {
              ++wrong;
              break;
            }
          }
        } catch (const std::exception& e) {
          if (errors++ == 0) first_error[t] = e.what();
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const std::string& e : first_error) EXPECT_TRUE(e.empty()) << e;
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace concurrency_test
}  // namespace nnfuse
