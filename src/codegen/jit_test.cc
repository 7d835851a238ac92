#include "codegen/jit.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "codegen/jit_internal.h"
#include "codegen/test_cache_dir.h"

namespace nnfuse::codegen {
namespace jit_test {

namespace fs = std::filesystem;

using JitTest = CacheDirTest;

std::string add_source(const std::string& name, float k) {
  return std::string("#include <cstdint>\nextern \"C\" void ") + name +
         "(const float* const* in, float* out, int64_t b, int64_t e) {\n"
         "  for (int64_t i = b; i < e; ++i) out[i] = in[0][i] + " +
         std::to_string(k) + "f;\n}\n";
}

TEST_F(JitTest, BuildsLoadsAndCaches) {
  const std::string src = add_source("jit_add", 2.0f);
  const int64_t runs0 = jit_compiler_invocations();
  JitResult a = jit_build(src, "jit_add");
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_FALSE(a.cache_hit);
  EXPECT_EQ(jit_compiler_invocations(), runs0 + 1);
  expect_adds(a.fn, 2.0f);
  ASSERT_TRUE(fs::exists(a.so_path));
  EXPECT_EQ(fs::path(a.so_path).parent_path(), fs::path(dir_));
  const auto mtime = fs::last_write_time(a.so_path);

  JitResult b = jit_build(src, "jit_add");
  ASSERT_TRUE(b.ok()) << b.error;
  EXPECT_TRUE(b.cache_hit);
  EXPECT_EQ(jit_compiler_invocations(), runs0 + 1);  // the compiler did not run again
  EXPECT_EQ(b.so_path, a.so_path);
  EXPECT_EQ(fs::last_write_time(b.so_path), mtime);
  expect_adds(b.fn, 2.0f);

  // Only the cached object is left in the directory (no temporaries).
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(JitTest, DifferentSourceDifferentObject) {
  JitResult a = jit_build(add_source("jit_a", 1.0f), "jit_a");
  JitResult b = jit_build(add_source("jit_a", 5.0f), "jit_a");
  ASSERT_TRUE(a.ok()) << a.error;
  ASSERT_TRUE(b.ok()) << b.error;
  EXPECT_NE(a.so_path, b.so_path);
  expect_adds(a.fn, 1.0f);
  expect_adds(b.fn, 5.0f);
}

TEST_F(JitTest, ConcurrentBuildsOfTheSameSourceBothSucceed) {
  const std::string src = add_source("jit_conc", 3.0f);
  constexpr int kThreads = 4;
  std::vector<JitResult> res(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] { res[static_cast<size_t>(t)] = jit_build(src, "jit_conc"); });
  }
  for (auto& t : ts) t.join();
  for (const JitResult& r : res) {
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.so_path, res[0].so_path);
    expect_adds(r.fn, 3.0f);
  }
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(JitTest, ConcurrentBuildsFromSeveralProcessesAllSucceed) {
  // Processes share nothing but the cache directory: each compiles to its own temporary name
  // and renames it into place, so every one loads a whole object.
  const std::string src = add_source("jit_procs", 5.0f);
  constexpr int kProcs = 4;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const JitResult r = jit_build(src, "jit_procs");
      if (!r.ok()) _exit(1);
      const float x[2] = {1, 2};
      const float* in[1] = {x};
      float out[2] = {};
      r.fn(in, out, 0, 2);
      _exit(out[0] == 6.0f && out[1] == 7.0f ? 0 : 2);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
  ASSERT_EQ(names.size(), 1u);  // one object, no temporaries left behind
  const JitResult again = jit_build(src, "jit_procs");
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_TRUE(again.cache_hit);
  expect_adds(again.fn, 5.0f);
}

TEST_F(JitTest, FailingCompilerGivesReasonWithItsName) {
  setenv("NNFUSE_CXX", "/bin/false", 1);
  JitResult r = jit_build(add_source("jit_f", 1.0f), "jit_f");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("/bin/false"), std::string::npos) << r.error;
}

TEST_F(JitTest, MissingCompilerGivesReasonWithItsName) {
  setenv("NNFUSE_CXX", "/nonexistent/nnfuse-no-such-cxx", 1);
  JitResult r = jit_build(add_source("jit_m", 1.0f), "jit_m");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("nnfuse-no-such-cxx"), std::string::npos) << r.error;
}

TEST_F(JitTest, CompilerThatCannotStartIsNotStartedAgain) {
  setenv("NNFUSE_CXX", "/nonexistent/nnfuse-never-cxx", 1);
  const JitResult first = jit_build(add_source("jit_n1", 1.0f), "jit_n1");
  ASSERT_FALSE(first.ok());
  const int64_t runs = jit_compiler_invocations();
  const JitResult second = jit_build(add_source("jit_n2", 2.0f), "jit_n2");
  EXPECT_FALSE(second.ok());
  EXPECT_NE(second.error.find("nnfuse-never-cxx"), std::string::npos) << second.error;
  EXPECT_EQ(jit_compiler_invocations(), runs);  // the reason is remembered, nothing started
  // Another PATH may hold it: a bare name is looked up again.
  setenv("NNFUSE_CXX", "nnfuse-never-cxx-bare", 1);
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  EXPECT_FALSE(jit_build(add_source("jit_n3", 3.0f), "jit_n3").ok());
  const int64_t after_first_path = jit_compiler_invocations();
  setenv("PATH", (old_path + ":/nonexistent-dir").c_str(), 1);
  EXPECT_FALSE(jit_build(add_source("jit_n4", 4.0f), "jit_n4").ok());
  EXPECT_GT(jit_compiler_invocations(), after_first_path);
  setenv("PATH", old_path.c_str(), 1);
}

TEST_F(JitTest, SyntaxErrorGivesReasonWithCompilerOutput) {
  JitResult r = jit_build("extern \"C\" void jit_bad( { this is not C++ }\n", "jit_bad");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("failed"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("error"), std::string::npos) << r.error;  // the compiler's stderr
  for (const auto& e : fs::directory_iterator(dir_)) {
    ADD_FAILURE() << "left behind: " << e.path();
  }
}

TEST_F(JitTest, MissingSymbolGivesReason) {
  JitResult r = jit_build(add_source("jit_sym", 1.0f), "jit_other_name");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("jit_other_name"), std::string::npos) << r.error;
}

// Each way an entry can be damaged: the compiler runs again and the rebuilt object is loaded,
// the damaged one never is.
TEST_F(JitTest, DamagedOrForeignEntryIsRebuiltNotLoaded) {
  const std::string src = add_source("jit_damaged", 3.0f);
  JitResult a = jit_build(src, "jit_damaged");
  ASSERT_TRUE(a.ok()) << a.error;
  const auto size = fs::file_size(a.so_path);
  const std::vector<std::function<void()>> damage = {
      [&] {  // a flipped byte in the middle
        std::fstream f(a.so_path, std::ios::binary | std::ios::in | std::ios::out);
        f.seekg(static_cast<std::streamoff>(size / 2));
        const char c = static_cast<char>(f.get());
        f.seekp(static_cast<std::streamoff>(size / 2));
        f.put(static_cast<char>(c ^ 0x5a));
      },
      [&] { fs::resize_file(a.so_path, size / 2); },  // truncated
      [&] {                                           // something else under its name
        std::ofstream f(a.so_path, std::ios::binary | std::ios::trunc);
        f << std::string(4096, 'x');
      }};
  for (size_t k = 0; k < damage.size(); ++k) {
    SCOPED_TRACE("damage " + std::to_string(k));
    damage[k]();
    const int64_t runs = jit_compiler_invocations();
    JitResult b = jit_build(src, "jit_damaged");
    ASSERT_TRUE(b.ok()) << b.error;
    EXPECT_FALSE(b.cache_hit);
    EXPECT_EQ(jit_compiler_invocations(), runs + 1);
    expect_adds(b.fn, 3.0f);
    EXPECT_EQ(fs::file_size(b.so_path), size);
  }
}

// A model's regions share objects: an entry is read and checked once per process, and a
// function loaded once, however many regions ask for it; a changed file is checked again.
TEST_F(JitTest, EntryIsCheckedOncePerProcessUntilItChanges) {
  const std::string src = add_source("jit_once", 2.0f);
  ASSERT_TRUE(jit_build(src, "jit_once").ok());
  const int64_t reads = jit_entry_reads();
  JitResult a = jit_build(src, "jit_once");
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_TRUE(a.cache_hit);
  EXPECT_EQ(jit_entry_reads(), reads + 1);
  for (int i = 0; i < 5; ++i) {
    JitResult b = jit_build(src, "jit_once");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b.fn, a.fn);
  }
  EXPECT_EQ(jit_entry_reads(), reads + 1);
  EXPECT_TRUE(jit_entry_valid(a.so_path));
  EXPECT_EQ(jit_entry_reads(), reads + 1);
  // Replaced under its name (a new inode): read and checked again.
  const std::string copy = a.so_path + ".copy";
  fs::copy_file(a.so_path, copy);
  fs::rename(copy, a.so_path);
  EXPECT_TRUE(jit_entry_valid(a.so_path));
  EXPECT_EQ(jit_entry_reads(), reads + 2);
  expect_adds(a.fn, 2.0f);
}

TEST_F(JitTest, HungCompilerIsKilledAtTheTimeout) {
  const std::string script = dir_ + "/hang.sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\nsleep 60\n";
  }
  fs::permissions(script, fs::perms::owner_all);
  setenv("NNFUSE_CXX", script.c_str(), 1);
  setenv("NNFUSE_JIT_TIMEOUT", "0.5", 1);
  const auto t0 = std::chrono::steady_clock::now();
  JitResult r = jit_build(add_source("jit_hang", 1.0f), "jit_hang");
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
  unsetenv("NNFUSE_JIT_TIMEOUT");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("timed out after 0.5 s"), std::string::npos) << r.error;
  EXPECT_LT(took.count(), 10.0);
}

std::vector<std::string> files_named(const std::string& dir, const std::string& part) {
  std::vector<std::string> r;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(part) != std::string::npos) r.push_back(name);
  }
  return r;
}

// The sources' shared #include lines are compiled once into a precompiled header in the cache;
// later sources with the same lines include it. Not in the same process as the other tests'
// compiles: a failure disables the header for the rest of the process.
TEST_F(JitTest, IncludeLinesArePrecompiledOnceAndShared) {
  if (jit_compiler().find("clang") != std::string::npos) GTEST_SKIP() << "GCC's headers only";
  unsetenv("NNFUSE_JIT_PCH");
  const int64_t runs0 = jit_compiler_invocations();
  JitResult a = jit_build(add_source("jit_pch_a", 1.0f), "jit_pch_a");
  ASSERT_TRUE(a.ok()) << a.error;
  expect_adds(a.fn, 1.0f);
  EXPECT_EQ(jit_compiler_invocations(), runs0 + 2);  // the header, then the source
  const std::vector<std::string> headers = files_named(dir_, "nnf_pch_");
  ASSERT_EQ(headers.size(), 2u);  // the header and its .gch, no temporaries
  JitResult b = jit_build(add_source("jit_pch_b", 2.0f), "jit_pch_b");
  ASSERT_TRUE(b.ok()) << b.error;
  expect_adds(b.fn, 2.0f);
  EXPECT_EQ(jit_compiler_invocations(), runs0 + 3);  // the header was not built again
  EXPECT_EQ(files_named(dir_, "nnf_pch_"), headers);
  EXPECT_EQ(files_named(dir_, ".tmp").size(), 0u);

  // A syntax error's line numbers are those of the whole source, header lines included.
  JitResult bad = jit_build("#include <cstdint>\n\nint oops(\n", "oops");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find(":3:"), std::string::npos) << bad.error;

  // A damaged precompiled header costs a second compile, never the kernel; it is removed.
  for (const std::string& h : headers) {
    if (h.ends_with(".gch")) {
      std::ofstream f(dir_ + "/" + h, std::ios::binary | std::ios::trunc);
      f << std::string(4096, 'x');
    }
  }
  JitResult c = jit_build(add_source("jit_pch_c", 3.0f), "jit_pch_c");
  ASSERT_TRUE(c.ok()) << c.error;
  expect_adds(c.fn, 3.0f);
  EXPECT_EQ(files_named(dir_, "nnf_pch_").size(), 0u);
}

TEST_F(JitTest, CompilerAndCacheDirFromEnvironment) {
  setenv("NNFUSE_CXX", "my-cxx", 1);
  EXPECT_EQ(jit_compiler(), "my-cxx");
  EXPECT_EQ(jit_cache_dir(), dir_);
  EXPECT_NE(fnv1a64("a"), fnv1a64("b"));
  EXPECT_EQ(fnv1a64(""), 14695981039346656037ull);
}

}  // namespace jit_test
}  // namespace nnfuse::codegen
