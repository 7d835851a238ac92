#include "kernels/cpu/cpu_util.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

namespace nnfuse {
namespace cpu_util_test {

TEST(SpinBarrier, NoThreadPassesBeforeEveryThreadArrives) {
  // Each round every thread writes its slot, waits, and reads every other thread's slot: a
  // barrier that let a thread through early would show it a slot from the round before.
  for (int threads : {1, 2, 3}) {
    constexpr int kRounds = 2000;
    std::vector<int> slot(static_cast<size_t>(threads), -1);
    std::vector<int> stale(static_cast<size_t>(threads), 0);
    cpu::SpinBarrier barrier(threads);
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      if (omp_get_num_threads() == threads) {
        for (int r = 0; r < kRounds; ++r) {
          slot[static_cast<size_t>(t)] = r;
          barrier.wait();
          for (int o = 0; o < threads; ++o) stale[static_cast<size_t>(t)] += slot[o] != r;
          barrier.wait();  // no one writes round r + 1 before every read of round r
        }
      }
    }
    for (int t = 0; t < threads; ++t) EXPECT_EQ(stale[static_cast<size_t>(t)], 0) << threads;
  }
}

}  // namespace cpu_util_test
}  // namespace nnfuse
