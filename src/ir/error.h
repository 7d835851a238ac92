// Errors (nnfuse/error.h: Error, ErrorKind) and the helpers that raise them: fail(), warn(),
// NNFUSE_CHECK.
#pragma once

#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "nnfuse/error.h"

namespace nnfuse {

namespace detail {
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, Args&&... args) {
  throw Error(kind, detail::cat(std::forward<Args>(args)...));
}

// Clears the progress line on stderr if one is drawn (ir/progress.h).
void clear_progress_line();

// A problem nnfuse works around (a fused kernel that could not be built runs unfused): one
// line on stderr, "nnfuse: warning: ...", on a line of its own when a progress line is drawn.
template <typename... Args>
void warn(Args&&... args) {
  const std::string message = detail::cat(std::forward<Args>(args)...);
  clear_progress_line();
  std::cerr << "nnfuse: warning: " << message << "\n";
}

}  // namespace nnfuse

// Checks a condition that bad input can break; throws a runtime Error naming the problem.
#define NNFUSE_CHECK(cond, ...)                                              \
  do {                                                                       \
    if (!(cond)) ::nnfuse::fail(::nnfuse::ErrorKind::kRuntime, __VA_ARGS__); \
  } while (0)
