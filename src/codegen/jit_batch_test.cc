#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "codegen/jit.h"
#include "codegen/test_cache_dir.h"

namespace nnfuse::codegen {
namespace jit_batch_test {

namespace fs = std::filesystem;

using JitBatchTest = CacheDirTest;

const char* kPreamble = "#include <cstdint>\n";

// out = in[0] + k.
JitFunction add_fn(const std::string& name, float k) {
  return {name, std::string("extern \"C\" void ") + name +
                    "(const float* const* in, float* out, int64_t b, int64_t e) {\n"
                    "  for (int64_t i = b; i < e; ++i) out[i] = in[0][i] + " +
                    std::to_string(k) + "f;\n}\n"};
}

TEST_F(JitBatchTest, ManySourcesOneCompilerRunEachCachedUnderItsOwnName) {
  std::vector<JitFunction> fns;
  for (int i = 0; i < 5; ++i) fns.push_back(add_fn("batch_add_" + std::to_string(i), float(i)));
  fns.push_back(fns[2]);  // the same source twice: one entry
  const int64_t runs0 = jit_compiler_invocations();
  const std::vector<JitResult> r = jit_build_many(kPreamble, fns);
  EXPECT_EQ(jit_compiler_invocations(), runs0 + 1);
  ASSERT_EQ(r.size(), fns.size());
  for (size_t i = 0; i < fns.size(); ++i) {
    ASSERT_TRUE(r[i].ok()) << r[i].error;
    expect_adds(r[i].fn, float(i == 5 ? 2 : i));
  }
  EXPECT_EQ(r[5].so_path, r[2].so_path);
  EXPECT_NE(r[0].so_path, r[1].so_path);
  // Each source alone is now a cache hit: the compiler does not run again.
  for (int i = 0; i < 5; ++i) {
    const JitResult one =
        jit_build(kPreamble + fns[static_cast<size_t>(i)].body, fns[static_cast<size_t>(i)].symbol);
    ASSERT_TRUE(one.ok()) << one.error;
    EXPECT_TRUE(one.cache_hit);
    expect_adds(one.fn, float(i));
  }
  EXPECT_EQ(jit_compiler_invocations(), runs0 + 1);
  // Five entries and nothing else (no temporaries left).
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().extension(), ".so") << e.path();
    ++files;
  }
  EXPECT_EQ(files, 5);
}

TEST_F(JitBatchTest, ASourceThatDoesNotCompileFailsAloneWithItsOwnError) {
  std::vector<JitFunction> fns = {add_fn("good_a", 1),
                                  add_fn("good_b", 2),
                                  {"bad_fn", "extern \"C\" void bad_fn( { syntax error\n"}};
  const std::vector<JitResult> r = jit_build_many(kPreamble, fns);
  ASSERT_EQ(r.size(), 3u);
  ASSERT_TRUE(r[0].ok()) << r[0].error;
  ASSERT_TRUE(r[1].ok()) << r[1].error;
  expect_adds(r[0].fn, 1);
  expect_adds(r[1].fn, 2);
  EXPECT_FALSE(r[2].ok());
  EXPECT_NE(r[2].error.find("failed"), std::string::npos) << r[2].error;
}

TEST_F(JitBatchTest, MoreThanOneBatchAllBuild) {
  std::vector<JitFunction> fns;
  for (size_t i = 0; i < kJitBatch + 3; ++i) {
    fns.push_back(add_fn("many_" + std::to_string(i), float(i % 7)));
  }
  const int64_t runs0 = jit_compiler_invocations();
  jit_prebuild(kPreamble, fns);
  EXPECT_EQ(jit_compiler_invocations(), runs0 + 2);
  const std::vector<JitResult> r = jit_build_many(kPreamble, fns);
  EXPECT_EQ(jit_compiler_invocations(), runs0 + 2);  // all in the cache already
  for (size_t i = 0; i < fns.size(); ++i) {
    ASSERT_TRUE(r[i].ok()) << r[i].error;
    expect_adds(r[i].fn, float(i % 7));
  }
}

}  // namespace jit_batch_test
}  // namespace nnfuse::codegen
