// nnfuse's one exception type: every failure a user can cause is an nnfuse::Error of one kind,
// with a one-line message that names the file, node, input or option involved.
#pragma once

#include <stdexcept>
#include <string>

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

}  // namespace nnfuse
