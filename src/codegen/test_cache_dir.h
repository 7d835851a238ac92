// Codegen tests: each test gets a fresh JIT cache dir ($NNFUSE_CACHE_DIR), removed afterwards,
// and the default compiler ($NNFUSE_CXX unset).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace nnfuse::codegen {

class CacheDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nnfuse_jit_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    setenv("NNFUSE_CACHE_DIR", dir_.c_str(), 1);
    unsetenv("NNFUSE_CXX");
  }
  void TearDown() override {
    unsetenv("NNFUSE_CACHE_DIR");
    unsetenv("NNFUSE_CXX");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
};

}  // namespace nnfuse::codegen
