// One PlanSession run from many threads at once: each run takes an arena of its own, every oneDNN
// primitive takes the calling thread's scratchpad, and the outputs are those of one thread.
// Sessions of different thread counts side by side: each runs with its own.
#include <gtest/gtest.h>
#include <omp.h>

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

// Runs `s` on x, checking that every step ran with the session's thread count; the output.
Tensor run_checking_threads(PlanSession& s, const Tensor& x, int* wrong) {
  std::vector<StepTiming> timings;
  Tensor y = s.run({{"input", x}}, &timings)[0];
  for (const StepTiming& t : timings) *wrong += t.threads != s.plan().num_threads() ? 1 : 0;
  return y;
}

TEST(SessionThreads, SessionsOfDifferentThreadCountsEachRunWithTheirOwn) {
  // Two sessions of one model, one thread and three, planned and run in one process, at once
  // from two threads: each run's kernels run with its session's count (the calling thread's
  // OpenMP count, set for the run), which the caller gets back after the run.
  const std::string path = std::string(NNFUSE_SOURCE_DIR) + "/models/tiny_resnet.onnx";
  PlanOptions one, three;
  one.threads = 1;
  three.threads = 3;
  const int before = omp_get_max_threads();
  PlanSession s1(load_onnx(path), one);
  PlanSession s3(load_onnx(path), three);
  EXPECT_EQ(omp_get_max_threads(), before);  // planning set nothing for the caller
  EXPECT_EQ(s1.plan().num_threads(), 1);
  EXPECT_EQ(s3.plan().num_threads(), 3);
  const Tensor x = input_for(1);
  int wrong = 0;
  const Tensor want1 = run_checking_threads(s1, x, &wrong);
  const Tensor want3 = run_checking_threads(s3, x, &wrong);
  EXPECT_EQ(omp_get_max_threads(), before);
  std::atomic<int> mismatches{0}, wrong_threads{0};
  auto loop = [&](PlanSession& s, const Tensor& want) {
    for (int r = 0; r < 8; ++r) {
      int w = 0;
      if (!same_bytes(run_checking_threads(s, x, &w), want)) ++mismatches;
      wrong_threads += w;
    }
  };
  std::thread a([&] { loop(s1, want1); }), b([&] { loop(s3, want3); });
  a.join();
  b.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(wrong_threads.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  // A thread with a count of its own keeps it across a run.
  std::thread([&] {
    omp_set_num_threads(2);
    int w = 0;
    run_checking_threads(s3, x, &w);
    EXPECT_EQ(w, 0);
    EXPECT_EQ(omp_get_max_threads(), 2);
  }).join();
}

}  // namespace session_threads_test
}  // namespace nnfuse
