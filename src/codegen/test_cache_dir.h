// Codegen tests: each test gets a fresh JIT cache dir ($NNFUSE_CACHE_DIR), removed afterwards,
// the default compiler ($NNFUSE_CXX unset) and no precompiled header; and a check of the tests'
// adding kernels.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "codegen/jit.h"

namespace nnfuse::codegen {

// A test kernel computing out = in[0] + k, checked on four values.
inline void expect_adds(KernelFn fn, float k) {
  const float x[4] = {1, 2, 3, 4};
  const float* in[1] = {x};
  float out[4] = {};
  fn(in, out, 0, 4);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(out[i], x[i] + k);
}

class CacheDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nnfuse_jit_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    setenv("NNFUSE_CACHE_DIR", dir_.c_str(), 1);
    unsetenv("NNFUSE_CXX");
    // One compiler run per build, one file per entry: the precompiled header has tests of its own.
    setenv("NNFUSE_JIT_PCH", "0", 1);
  }
  void TearDown() override {
    unsetenv("NNFUSE_CACHE_DIR");
    unsetenv("NNFUSE_CXX");
    unsetenv("NNFUSE_JIT_PCH");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
};

}  // namespace nnfuse::codegen
