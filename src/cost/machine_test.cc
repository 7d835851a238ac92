#include "cost/machine.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace nnfuse::cost {
namespace machine_test {

class MachineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nnfuse_calib_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    const char* old = getenv("NNFUSE_CACHE_DIR");
    if (old) old_ = old;
    setenv("NNFUSE_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (old_.empty()) {
      unsetenv("NNFUSE_CACHE_DIR");
    } else {
      setenv("NNFUSE_CACHE_DIR", old_.c_str(), 1);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_, old_;
};

TEST_F(MachineTest, ACalibrationIsSavedAndReadBack) {
  Calibration c;
  c.machine = {3.5e11, 4.25e10, 1.5e-6};
  c.cpu = "Some CPU";
  c.threads = 4;
  c.measured_at = "2026-01-01T00:00:00Z";
  const std::string path = calibration_path();
  EXPECT_EQ(path, dir_ + "/calibration.json");
  save_calibration(c, path);
  std::string why;
  const std::optional<Calibration> back = load_calibration(path, &why);
  ASSERT_TRUE(back) << why;
  EXPECT_DOUBLE_EQ(back->machine.flops_per_s, 3.5e11);
  EXPECT_DOUBLE_EQ(back->machine.bytes_per_s, 4.25e10);
  EXPECT_NEAR(back->machine.launch_s, 1.5e-6, 1e-15);
  EXPECT_EQ(back->cpu, "Some CPU");
  EXPECT_EQ(back->threads, 4);
}

TEST_F(MachineTest, MissingOrMalformedCalibrationsAreRefusedWithTheReason) {
  std::string why;
  EXPECT_FALSE(load_calibration(dir_ + "/none.json", &why));
  EXPECT_NE(why.find("nnfuse calibrate"), std::string::npos) << why;
  const std::string bad = dir_ + "/bad.json";
  std::ofstream(bad) << "{\"cpu\": 3}";
  EXPECT_FALSE(load_calibration(bad, &why));
  EXPECT_NE(why.find("not a calibration"), std::string::npos) << why;
  std::ofstream(bad)
      << R"({"cpu":"x","threads":1,"peak_gflops":-1,"bandwidth_gbps":1,"launch_us":1})";
  EXPECT_FALSE(load_calibration(bad, &why));
  EXPECT_NE(why.find("out of range"), std::string::npos) << why;
}

TEST_F(MachineTest, EstimatesUseTheCalibrationOfThisCpuOnly) {
  std::string source;
  Machine m = estimate_machine(&source);  // none yet: the defaults
  EXPECT_DOUBLE_EQ(m.flops_per_s, Machine{}.flops_per_s);
  EXPECT_EQ(source.rfind("defaults", 0), 0u) << source;
  Calibration c;
  c.machine = {1e12, 1e11, 1e-6};
  c.cpu = "Another CPU entirely";
  c.threads = 2;
  save_calibration(c, calibration_path());
  m = estimate_machine(&source);
  EXPECT_DOUBLE_EQ(m.flops_per_s, Machine{}.flops_per_s);
  EXPECT_NE(source.find("Another CPU entirely"), std::string::npos) << source;
  c.cpu = cpu_model_name();
  save_calibration(c, calibration_path());
  m = estimate_machine(&source);
  EXPECT_DOUBLE_EQ(m.flops_per_s, 1e12);
  EXPECT_EQ(source.rfind("calibrated on " + c.cpu, 0), 0u) << source;
}

}  // namespace machine_test
}  // namespace nnfuse::cost
