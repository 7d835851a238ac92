// Shared set-up of the libFuzzer targets (fuzz/README.md).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace nnfuse::fuzz {

// The environment every target runs in: no progress line; generated kernels are not built (a
// compiler that does not exist, so every region takes its fallback at once instead of running
// the compiler per input); a private cache folder; no oneDNN primitive cache.
inline void init_environment() {
  setenv("NNFUSE_PROGRESS", "0", 1);
  setenv("NNFUSE_CXX", "/nonexistent/nnfuse-fuzz-no-compiler", 1);
  const std::string cache = (std::filesystem::temp_directory_path() / "nnfuse-fuzz-cache").string();
  setenv("NNFUSE_CACHE_DIR", cache.c_str(), 1);
  // No oneDNN primitive cache: a primitive kept from one input to the next is an allocation
  // without its free, and libFuzzer runs every such input again under the leak checker.
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "0", 1);
}

}  // namespace nnfuse::fuzz
