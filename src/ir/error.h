// Errors: every failure the user can cause is an nnfuse::Error with a one-line message that
// names the file, node or flag involved.
#pragma once

#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace nnfuse {

enum class ErrorKind {
  kInvalidModel,  // the model file is unreadable or malformed
  kUnsupported,   // valid ONNX that nnfuse does not implement
  kInvalidInput,  // a user-supplied input tensor is missing or mismatched
  kInvalidArgument,
  kRuntime,  // a kernel found an inconsistency while running
  kInternal,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& msg) : std::runtime_error(msg), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

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

// A problem nnfuse works around (a fused kernel that could not be built runs unfused): one
// line on stderr, "nnfuse: warning: ...".
template <typename... Args>
void warn(Args&&... args) {
  std::cerr << "nnfuse: warning: " << detail::cat(std::forward<Args>(args)...) << "\n";
}

}  // namespace nnfuse

// Checks a condition that bad input can break; throws a runtime Error naming the problem.
#define NNFUSE_CHECK(cond, ...)                                              \
  do {                                                                       \
    if (!(cond)) ::nnfuse::fail(::nnfuse::ErrorKind::kRuntime, __VA_ARGS__); \
  } while (0)
