// Shared set-up of the libFuzzer targets (fuzz/README.md).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace nnfuse::fuzz {

// The environment every target runs in: no progress line; generated kernels are not built (a
// compiler that does not exist, so every region takes its fallback at once instead of running
// the compiler per input); a private cache folder.
inline void init_environment() {
  setenv("NNFUSE_PROGRESS", "0", 1);
  setenv("NNFUSE_CXX", "/nonexistent/nnfuse-fuzz-no-compiler", 1);
  const std::string cache = (std::filesystem::temp_directory_path() / "nnfuse-fuzz-cache").string();
  setenv("NNFUSE_CACHE_DIR", cache.c_str(), 1);
}

}  // namespace nnfuse::fuzz
