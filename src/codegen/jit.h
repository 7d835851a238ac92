// Builds generated C++ source into a shared object with the system compiler, caches it on disk
// and loads it with dlopen (docs/architecture.md, "Generated kernels").
//
// Compiler: $NNFUSE_CXX, else $CXX, else `c++` (split on whitespace, so "ccache g++" works),
// with flags kJitFlags. Cache directory: $NNFUSE_CACHE_DIR, else $XDG_CACHE_HOME/nnfuse, else
// $HOME/.cache/nnfuse. The object is named by the FNV-1a 64 hash of (compiler, flags, host ISA
// (the /proc/cpuinfo feature line), source); it is compiled to a unique temporary name in the
// cache directory and renamed into place, so concurrent builds (threads or processes) of the
// same source are safe. A cache hit skips the compiler. Failures (no compiler, compile error,
// dlopen/dlsym error, unwritable cache) are returned as a reason string, never thrown. Loaded
// objects stay loaded for the process lifetime.
//
// With GCC, a source's leading #include lines are precompiled once per cache directory (compiler,
// flags and host in the header's name) and included from there ($NNFUSE_JIT_PCH=0: never).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nnfuse::codegen {

using KernelFn = void (*)(const float* const* in, float* out, int64_t begin, int64_t end);

// -fopenmp-simd honours the generated `#pragma omp simd` (e.g. vectorized row reductions)
// without linking an OpenMP runtime; -fno-math-errno lets sqrt and the like vectorize (the
// generated code never reads errno).
inline constexpr const char* kJitFlags =
    "-O3 -march=native -fno-math-errno -fopenmp-simd -fPIC -shared -std=c++17";

// Libraries linked after the source: glibc's vector math, which the generated loops call.
inline constexpr const char* kJitLibs = "-lmvec";

struct JitResult {
  KernelFn fn = nullptr;   // set on success
  std::string error;       // set on failure
  bool cache_hit = false;  // the object was already in the cache (the compiler did not run)
  std::string so_path;     // the cached object's path, when known

  bool ok() const { return fn != nullptr; }
};

// Compiles (or finds in the cache) `source` and resolves the extern "C" function `symbol`.
JitResult jit_build(const std::string& source, const std::string& symbol);

// Many sources at once: source i is `preamble` + functions[i].body, its function
// functions[i].symbol. Each is looked up in the cache as jit_build does; the sources not there
// are compiled together, the preamble once, in batches of up to kJitBatch functions (the
// batches in parallel, one per core), and each batch's object stored under every one of its
// sources' cache names, so a later jit_build of any of them is a cache hit. A batch that does
// not build is built source by source instead, so a source that fails fails alone with its own
// error. Results are in the order of `functions`.
struct JitFunction {
  std::string symbol;
  std::string body;
};
inline constexpr size_t kJitBatch = 64;
std::vector<JitResult> jit_build_many(const std::string& preamble,
                                      const std::vector<JitFunction>& functions);
// Only the batches: the sources missing from the cache are put there where their batch builds;
// nothing is loaded, and a source whose batch failed is left for its own jit_build.
void jit_prebuild(const std::string& preamble, const std::vector<JitFunction>& functions);

// The compiler command and cache directory the next jit_build would use.
std::string jit_compiler();
std::string jit_cache_dir();

// FNV-1a 64 of `data`.
uint64_t fnv1a64(const std::string& data);

// How many times this process has run the compiler (for tests and statistics).
int64_t jit_compiler_invocations();
// How many times it has read a cache entry to check its checksum: once per entry, unless the
// file changed (another inode, size or time) since.
int64_t jit_entry_reads();

}  // namespace nnfuse::codegen
