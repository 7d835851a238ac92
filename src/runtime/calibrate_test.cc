#include "runtime/calibrate.h"

#include <gtest/gtest.h>

namespace nnfuse {
namespace calibrate_test {

TEST(Calibrate, MeasuresPositiveFiguresOnThisCpu) {
  const cost::Calibration c = calibrate_machine(1);
  EXPECT_EQ(c.threads, 1);
  EXPECT_EQ(c.cpu, cost::cpu_model_name());
  // Orders of magnitude any CPU this runs on has: 1 GFLOP/s to 100 TFLOP/s, 100 MB/s to
  // 10 TB/s, a launch under a millisecond.
  EXPECT_GT(c.machine.flops_per_s, 1e9);
  EXPECT_LT(c.machine.flops_per_s, 1e14);
  EXPECT_GT(c.machine.bytes_per_s, 1e8);
  EXPECT_LT(c.machine.bytes_per_s, 1e13);
  EXPECT_GE(c.machine.launch_s, 0.0);
  EXPECT_LT(c.machine.launch_s, 1e-3);
  EXPECT_EQ(c.measured_at.size(), 20u);  // 2026-01-01T00:00:00Z
}

}  // namespace calibrate_test
}  // namespace nnfuse
