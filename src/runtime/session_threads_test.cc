// One PlanSession run from many threads at once: each run takes an arena of its own, every oneDNN
// primitive takes the calling thread's scratchpad, and the outputs are those of one thread.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "onnx/importer.h"
#include "runtime/session.h"

namespace nnfuse {
namespace session_threads_test {

Tensor input_for(int k) {
  Tensor x(DType::kFloat32, {1, 3, 32, 32});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = static_cast<float>((i * 37 + k * 101) % 211) / 100.0f - 1.0f;
  }
  return x;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(SessionThreads, EightThreadsGiveTheOutputsOfOne) {
  const std::string path = std::string(NNFUSE_SOURCE_DIR) + "/models/tiny_resnet.onnx";
  PlanSession s(load_onnx(path));
  constexpr int kThreads = 8, kRuns = 6;
  std::vector<Tensor> inputs, want;
  for (int k = 0; k < kThreads; ++k) {
    inputs.push_back(input_for(k));
    want.push_back(s.run({{"input", inputs.back()}})[0]);
  }
  ASSERT_FALSE(same_bytes(want[0], want[1]));  // the inputs differ, and so do the outputs
  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        const int k = (t + r) % kThreads;  // every thread runs every input
        try {
          if (!same_bytes(s.run({{"input", inputs[k]}})[0], want[k])) ++mismatches;
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GE(s.num_arenas(), 1u);
  EXPECT_LE(s.num_arenas(), static_cast<size_t>(kThreads));
}

TEST(SessionThreads, RunsOnAThreadOtherThanTheOneThatPlannedIt) {
  // oneDNN's own scratchpad would tie each primitive to the planning thread.
  const std::string path = std::string(NNFUSE_SOURCE_DIR) + "/models/tiny_resnet.onnx";
  PlanSession s(load_onnx(path));
  const Tensor x = input_for(3);
  const Tensor want = s.run({{"input", x}})[0];
  Tensor got;
  std::thread([&] { got = s.run({{"input", x}})[0]; }).join();
  EXPECT_TRUE(same_bytes(got, want));
  EXPECT_EQ(s.num_arenas(), 1u);  // one run at a time: one arena
}

}  // namespace session_threads_test
}  // namespace nnfuse
